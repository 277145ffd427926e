// lower-ascend-linalg-to-cpu on a real triton-ascend 3.2 ttadapter output (generic form): the
// kernel loads x, translates y with aclshmem_ptr_float and stores into the peer's y, then sets a
// block event.
// RUN: tdist-opt %s --allow-unregistered-dialect --lower-ascend-linalg-to-cpu | FileCheck %s

// CHECK-DAG: func.func private @tdist_cpu_sync_block_set(i32){{$}}
// CHECK-DAG: func.func private @aclshmem_ptr_float(i64, i32) -> i64 attributes {llvm.emit_c_interface}
// CHECK: func.func @k(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xf32>, %arg3: memref<?xf32>, %arg4: i32, {{.*}}) attributes {llvm.emit_c_interface} {
// CHECK: scf.if
// CHECK-NOT: hivm.unlikely_condition
// CHECK: %[[R:.*]] = call @aclshmem_ptr_float(%{{.*}}, %arg4) : (i64, i32) -> i64
// CHECK: %[[A:.*]] = arith.addi %[[R]], %{{.*}} : i64
// CHECK: %[[SZ:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[P:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr
// CHECK: %[[D0:.*]] = llvm.mlir.undef : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[D1:.*]] = llvm.insertvalue %[[P]], %[[D0]][0]
// CHECK: %[[D2:.*]] = llvm.insertvalue %[[P]], %[[D1]][1]
// CHECK: %[[Z:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[D3:.*]] = llvm.insertvalue %[[Z]], %[[D2]][2]
// CHECK: %[[D4:.*]] = llvm.insertvalue %[[SZ]], %[[D3]][3, 0]
// CHECK: %[[D5:.*]] = llvm.insertvalue %[[ONE]], %[[D4]][4, 0]
// CHECK: %[[M:.*]] = builtin.unrealized_conversion_cast %[[D5]] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<?xf32>
// CHECK-NOT: annotation.mark
// CHECK: memref.reinterpret_cast %[[M]]
// CHECK: %[[E:.*]] = arith.constant 3 : i32
// CHECK: call @tdist_cpu_sync_block_set(%[[E]]) : (i32) -> ()
// CHECK-NOT: hivm
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {}, {tt.tensor_kind = 0 : i32}, {tt.tensor_kind = 1 : i32}, {}, {}, {}, {}, {}, {}, {}], function_type = (memref<?xi8>, memref<?xi8>, memref<?xf32>, memref<?xf32>, i32, i32, i32, i32, i32, i32, i32) -> (), sym_name = "k"}> ({
  ^bb0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xf32>, %arg3: memref<?xf32>, %arg4: i32, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32, %arg10: i32):
    %0 = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32
    %1 = "arith.constant"() <{value = 128 : index}> : () -> index
    %2 = "arith.constant"() <{value = 128 : i32}> : () -> i32
    %3 = "arith.muli"(%arg8, %2) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %4 = "arith.index_cast"(%3) : (i32) -> index
    %5 = "memref.reinterpret_cast"(%arg2, %4) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808>, static_sizes = array<i64: 128>, static_strides = array<i64: 1>}> : (memref<?xf32>, index) -> memref<128xf32, strided<[1], offset: ?>>
    %6 = "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<128xf32>
    %7 = "arith.addi"(%4, %1) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
    %8 = "arith.index_cast"(%arg4) : (i32) -> index
    %9 = "arith.maxsi"(%4, %8) : (index, index) -> index
    %10 = "arith.minsi"(%7, %9) : (index, index) -> index
    %11 = "arith.subi"(%10, %4) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
    %12 = "arith.cmpi"(%11, %1) <{predicate = 2 : i64}> : (index, index) -> i1
    "scf.if"(%12) ({
      "linalg.fill"(%0, %6) <{operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg11: f32, %arg12: f32):
        "linalg.yield"(%arg11) : (f32) -> ()
      }) : (f32, memref<128xf32>) -> ()
      "scf.yield"() : () -> ()
    }, {
    }) {hivm.unlikely_condition} : (i1) -> ()
    %13 = "memref.subview"(%5, %11) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (memref<128xf32, strided<[1], offset: ?>>, index) -> memref<?xf32, strided<[1], offset: ?>>
    %14 = "memref.subview"(%6, %11) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (memref<128xf32>, index) -> memref<?xf32, strided<[1]>>
    "memref.copy"(%13, %14) : (memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1]>>) -> ()
    %15 = "bufferization.to_tensor"(%6) <{restrict, writable}> : (memref<128xf32>) -> tensor<128xf32>
    %16 = "memref.extract_aligned_pointer_as_index"(%arg3) : (memref<?xf32>) -> index
    %17 = "arith.index_cast"(%16) : (index) -> i64
    %18 = "tt.extern_elementwise"(%17, %arg4) <{libname = "", libpath = "", pure = true, symbol = "aclshmem_ptr_float"}> : (i64, i32) -> i64
    %19 = "arith.constant"() <{value = 4 : i64}> : () -> i64
    %20 = "arith.constant"() <{value = 128 : index}> : () -> index
    %21 = "arith.index_cast"(%4) : (index) -> i64
    %22 = "arith.muli"(%21, %19) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %23 = "arith.addi"(%18, %22) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %24 = "hivm.hir.pointer_cast"(%23, %20) <{operandSegmentSizes = array<i32: 1, 1>}> : (i64, index) -> memref<?xf32>
    "annotation.mark"(%24) {address_space = #hivm.address_space<gm>} : (memref<?xf32>) -> ()
    %25 = "memref.reinterpret_cast"(%24) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 128>, static_strides = array<i64: 1>}> : (memref<?xf32>) -> memref<128xf32, strided<[1], offset: ?>>
    %26 = "tensor.extract_slice"(%15, %11) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (tensor<128xf32>, index) -> tensor<?xf32>
    %27 = "memref.subview"(%25, %11) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: -9223372036854775808>, static_strides = array<i64: 1>}> : (memref<128xf32, strided<[1], offset: ?>>, index) -> memref<?xf32, strided<[1], offset: ?>>
    "bufferization.materialize_in_destination"(%26, %27) <{writable}> : (tensor<?xf32>, memref<?xf32, strided<[1], offset: ?>>) -> ()
    "hivm.hir.sync_block_set"() <{operandSegmentSizes = array<i32: 0, 0>, pipe = #hivm.pipe<PIPE_MTE2>, static_flag_id = 3 : index, tcore_type = #hivm.tcore_type<CUBE>, tpipe = #hivm.pipe<PIPE_FIX>}> : () -> ()
    "func.return"() : () -> ()
  }) {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} : () -> ()
}) : () -> ()

