// lower-ascend-linalg-to-cpu on triton-ascend 3.2's atomics (generic form, from a real kernel:
// tl.atomic_add(x, 1, sem="acq_rel") whose old value is stored, and tl.atomic_xchg):
// each becomes memref.atomic_rmw, its result replacing the separate fetch of the old value.
// RUN: tdist-opt %s --allow-unregistered-dialect --lower-ascend-linalg-to-cpu | FileCheck %s
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-cpu | FileCheck %s --check-prefix=LLVM
// CHECK-NOT: GenericAtomicRMW
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %{{.*}}, %[[DST:.*]][%{{.*}}] : (i64, memref<1xi64, strided<[1]>>) -> i64
// CHECK-NEXT: memref.store %[[OLD]], %[[FETCH:.*]][%{{.*}}] : memref<1xi64>
// CHECK-NOT: memref.copy %[[DST]], %[[FETCH]]
// CHECK: memref.atomic_rmw assign
// CHECK-NOT: GenericAtomicRMW
// LLVM-COUNT-2: llvm.atomicrmw
#map = affine_map<(d0) -> (d0)>
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {}, {tt.tensor_kind = 2 : i32}, {tt.tensor_kind = 1 : i32}, {}, {}, {}, {}, {}, {}, {}], function_type = (memref<?xi8>, memref<?xi8>, memref<?xi64>, memref<?xi64>, i64, i32, i32, i32, i32, i32, i32) -> (), sym_name = "k"}> ({
  ^bb0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi64>, %arg3: memref<?xi64>, %arg4: i64, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32, %arg10: i32):
    %0 = "arith.constant"() <{value = 0 : index}> : () -> index
    %1 = "arith.constant"() <{value = 1 : i64}> : () -> i64
    %2 = "tensor.empty"() : () -> tensor<1xi64>
    %3 = "linalg.fill"(%1, %2) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg17: i64, %arg18: i64):
      "linalg.yield"(%arg17) : (i64) -> ()
    }) : (i64, tensor<1xi64>) -> tensor<1xi64>
    %4 = "memref.reinterpret_cast"(%arg2) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1]>>
    %5 = "bufferization.to_buffer"(%3) : (tensor<1xi64>) -> memref<1xi64>
    %6 = "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<1xi64>
    "memref.copy"(%4, %6) : (memref<1xi64, strided<[1]>>, memref<1xi64>) -> ()
    %7 = "bufferization.to_tensor"(%6) <{restrict, writable}> : (memref<1xi64>) -> tensor<1xi64>
    "linalg.generic"(%4, %5, %4) <{indexing_maps = [#map, #map, #map], iterator_types = [#linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg14: i64, %arg15: i64, %arg16: i64):
      %23 = "arith.addi"(%arg14, %arg15) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
      "linalg.yield"(%23) : (i64) -> ()
    }) {GenericAtomicRMW = "add", MemSemantic = "acq_rel", MemSyncScope = "sys"} : (memref<1xi64, strided<[1]>>, memref<1xi64>, memref<1xi64, strided<[1]>>) -> ()
    %8 = "tensor.extract"(%7, %0) : (tensor<1xi64>, index) -> i64
    %9 = "tensor.insert"(%8, %2, %0) : (i64, tensor<1xi64>, index) -> tensor<1xi64>
    %10 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1]>>
    "bufferization.materialize_in_destination"(%9, %10) <{writable}> : (tensor<1xi64>, memref<1xi64, strided<[1]>>) -> ()
    %11 = "tensor.insert"(%arg4, %2, %0) : (i64, tensor<1xi64>, index) -> tensor<1xi64>
    %12 = "memref.reinterpret_cast"(%arg2) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 8>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1], offset: 8>>
    %13 = "bufferization.to_buffer"(%11) : (tensor<1xi64>) -> memref<1xi64>
    %14 = "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<1xi64>
    "memref.copy"(%12, %14) : (memref<1xi64, strided<[1], offset: 8>>, memref<1xi64>) -> ()
    %15 = "bufferization.to_tensor"(%14) <{restrict, writable}> : (memref<1xi64>) -> tensor<1xi64>
    "linalg.generic"(%12, %13, %12) <{indexing_maps = [#map, #map, #map], iterator_types = [#linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg11: i64, %arg12: i64, %arg13: i64):
      "linalg.yield"(%arg12) : (i64) -> ()
    }) {GenericAtomicRMW = "exch", MemSemantic = "relaxed", MemSyncScope = "sys"} : (memref<1xi64, strided<[1], offset: 8>>, memref<1xi64>, memref<1xi64, strided<[1], offset: 8>>) -> ()
    %16 = "tensor.extract"(%15, %0) : (tensor<1xi64>, index) -> i64
    %17 = "tensor.insert"(%16, %2, %0) : (i64, tensor<1xi64>, index) -> tensor<1xi64>
    %18 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 1>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1], offset: 1>>
    "bufferization.materialize_in_destination"(%17, %18) <{writable}> : (tensor<1xi64>, memref<1xi64, strided<[1], offset: 1>>) -> ()
    %19 = "memref.reinterpret_cast"(%arg2) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 24>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1], offset: 24>>
    %20 = "memref.load"(%19, %0) : (memref<1xi64, strided<[1], offset: 24>>, index) -> i64
    %21 = "tensor.insert"(%20, %2, %0) : (i64, tensor<1xi64>, index) -> tensor<1xi64>
    %22 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 2>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi64>) -> memref<1xi64, strided<[1], offset: 2>>
    "bufferization.materialize_in_destination"(%21, %22) <{writable}> : (tensor<1xi64>, memref<1xi64, strided<[1], offset: 2>>) -> ()
    "func.return"() : () -> ()
  }) {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} : () -> ()
}) : () -> ()

