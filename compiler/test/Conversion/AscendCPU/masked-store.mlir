// lower-ascend-linalg-to-cpu on triton-ascend 3.2's masked stores (generic form, from a real kernel:
//   v = tl.load(x + offs); tl.store(y + offs, v, mask=v > 0); tl.store(y + 4 + offs, v, mask=flag > 0)).
// A mask from data is written by triton-ascend as a read-modify-write of the whole tile (copy of
// the destination, select, write back); on a CPU it becomes one conditional store per element, so
// that programs storing disjoint elements of one tile at once keep each other's stores. A mask
// that is a range (the tile-wide flag: a subview of 0 or 4 elements) stays as it is.
// RUN: tdist-opt %s --allow-unregistered-dialect --lower-ascend-linalg-to-cpu | FileCheck %s
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-cpu | FileCheck %s --check-prefix=LLVM
// CHECK: %[[Y:.*]] = memref.reinterpret_cast %arg3 to offset: [0]
// CHECK-NOT: memref.copy %[[Y]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[M:.*]] = tensor.extract %{{.*}}[%[[I]]] : tensor<4xi1>
// CHECK-NEXT: scf.if %[[M]] {
// CHECK-NEXT: %[[V:.*]] = tensor.extract %{{.*}}[%[[I]]] : tensor<4xi32>
// CHECK-NEXT: memref.store %[[V]], %[[Y]][%[[I]]]
// CHECK-NOT: materialize_in_destination {{.*}} in writable %[[Y]]
// CHECK: memref.subview
// CHECK: bufferization.materialize_in_destination
// LLVM: llvm.cond_br
// LLVM-NOT: bufferization
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {}, {tt.tensor_kind = 0 : i32}, {tt.tensor_kind = 2 : i32}, {}, {}, {}, {}, {}, {}, {}], function_type = (memref<?xi8>, memref<?xi8>, memref<?xi32>, memref<?xi32>, i32, i32, i32, i32, i32, i32, i32) -> (), sym_name = "masked_store"}> ({
  ^bb0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi32>, %arg3: memref<?xi32>, %arg4: i32, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32, %arg10: i32):
    %0 = "arith.constant"() <{value = 4 : index}> : () -> index
    %1 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    %2 = "tensor.empty"() : () -> tensor<4xi32>
    %3 = "linalg.fill"(%1, %2) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg11: i32, %arg12: i32):
      "linalg.yield"(%arg11) : (i32) -> ()
    }) : (i32, tensor<4xi32>) -> tensor<4xi32>
    %4 = "memref.reinterpret_cast"(%arg2) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 4>, static_strides = array<i64: 1>}> : (memref<?xi32>) -> memref<4xi32, strided<[1]>>
    %5 = "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<4xi32>
    "memref.copy"(%4, %5) : (memref<4xi32, strided<[1]>>, memref<4xi32>) -> ()
    %6 = "bufferization.to_tensor"(%5) <{restrict, writable}> : (memref<4xi32>) -> tensor<4xi32>
    %7 = "arith.cmpi"(%6, %3) <{predicate = 4 : i64}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %8 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 4>, static_strides = array<i64: 1>}> : (memref<?xi32>) -> memref<4xi32, strided<[1]>>
    %9 = "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<4xi32>
    "memref.copy"(%8, %9) : (memref<4xi32, strided<[1]>>, memref<4xi32>) -> ()
    %10 = "bufferization.to_tensor"(%9) <{restrict, writable}> : (memref<4xi32>) -> tensor<4xi32>
    %11 = "arith.select"(%7, %6, %10) : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    "bufferization.materialize_in_destination"(%11, %8) <{writable}> : (tensor<4xi32>, memref<4xi32, strided<[1]>>) -> ()
    %12 = "arith.cmpi"(%arg4, %1) <{predicate = 4 : i64}> : (i32, i32) -> i1
    %13 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 4>, static_sizes = array<i64: 4>, static_strides = array<i64: 1>}> : (memref<?xi32>) -> memref<4xi32, strided<[1], offset: 4>>
    %14 = "arith.index_castui"(%12) : (i1) -> index
    %15 = "arith.muli"(%14, %0) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
    %16 = "tensor.extract_slice"(%6, %15) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (tensor<4xi32>, index) -> tensor<?xi32>
    %17 = "memref.subview"(%13, %15) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (memref<4xi32, strided<[1], offset: 4>>, index) -> memref<?xi32, strided<[1], offset: 4>>
    "bufferization.materialize_in_destination"(%16, %17) <{writable}> : (tensor<?xi32>, memref<?xi32, strided<[1], offset: 4>>) -> ()
    "func.return"() : () -> ()
  }) {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} : () -> ()
}) : () -> ()

