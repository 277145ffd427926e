// hivm.hir.pointer_cast of a rank-2 memref: a row-major descriptor (strides size1, 1), static
// sizes as constants; sync_block_wait / _all become their block-event calls.
// RUN: tdist-opt %s --allow-unregistered-dialect --lower-ascend-linalg-to-cpu | FileCheck %s

// CHECK-DAG: func.func private @tdist_cpu_sync_block_wait(i32)
// CHECK-DAG: func.func private @tdist_cpu_sync_block_all(i32)
// CHECK-LABEL: func.func @k
// CHECK: %[[S0:.*]] = arith.index_cast %arg1 : index to i64
// CHECK: %[[S1:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[ST0:.*]] = llvm.mul %[[ONE]], %[[S1]] : i64
// CHECK: llvm.insertvalue %[[S0]], %{{.*}}[3, 0]
// CHECK: llvm.insertvalue %[[ST0]], %{{.*}}[4, 0]
// CHECK: llvm.insertvalue %[[S1]], %{{.*}}[3, 1]
// CHECK: llvm.insertvalue %[[ONE]], %{{.*}}[4, 1]
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x8xi16>
// CHECK: %[[E:.*]] = arith.constant 5 : i32
// CHECK: call @tdist_cpu_sync_block_wait(%[[E]])
// CHECK: %[[E2:.*]] = arith.constant 0 : i32
// CHECK: call @tdist_cpu_sync_block_all(%[[E2]])
func.func @k(%a: i64, %n: index) -> memref<?x8xi16> {
  %m = "hivm.hir.pointer_cast"(%a, %n) <{operandSegmentSizes = array<i32: 1, 1>}> : (i64, index) -> memref<?x8xi16>
  "hivm.hir.sync_block_wait"() <{operandSegmentSizes = array<i32: 0, 0>, static_flag_id = 5 : index, tcore_type = #hivm.tcore_type<VECTOR>, tpipe = #hivm.pipe<PIPE_S>, pipe = #hivm.pipe<PIPE_MTE2>}> : () -> ()
  "hivm.hir.sync_block_all"() <{static_flag_id = 0 : index}> : () -> ()
  return %m : memref<?x8xi16>
}
