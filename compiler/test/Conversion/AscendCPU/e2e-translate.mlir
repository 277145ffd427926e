// --tdist-pipeline=ascend-cpu end to end: triton-ascend's ttadapter output (generic form) to LLVM
// IR that mlir-translate accepts. This file: a real kernel storing
// pid_x * 1000 + num_programs_x * 10 + pid_z + n (its ABI: sync_block_lock, workspace, the
// kernel's arguments, num_programs x/y/z, program_id x/y/z); real-kernel.mlir: the aclshmem one.
// REQUIRES: mlir-translate
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s
// RUN: tdist-opt %S/real-kernel.mlir --allow-unregistered-dialect --tdist-pipeline=ascend-cpu \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=SHMEM

// CHECK: define void @k(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4, ptr %5, ptr %6, i64 %7, i64 %8, i64 %9, ptr %10, ptr %11, i64 %12, i64 %13, i64 %14, i32 %15, i32 %16, i32 %17, i32 %18, i32 %19, i32 %20, i32 %21)
// CHECK: mul i32 %{{.*}}, 1000
// CHECK: store i32
// CHECK: define void @_mlir_ciface_k(ptr %0, ptr %1, ptr %2, i32 %3, i32 %4, i32 %5, i32 %6, i32 %7, i32 %8, i32 %9)

// SHMEM-DAG: declare void @tdist_cpu_sync_block_set(i32)
// SHMEM-DAG: declare i64 @_mlir_ciface_aclshmem_ptr_float(i64, i32)
// SHMEM-NOT: memrefCopy
// SHMEM: define void @k(
// SHMEM: call i64 @aclshmem_ptr_float(i64 %{{.*}}, i32 %20)
// SHMEM: call void @tdist_cpu_sync_block_set(i32 3)
// SHMEM: define void @_mlir_ciface_k(ptr %0, ptr %1, ptr %2, ptr %3, i32 %4, i32 %5, i32 %6, i32 %7, i32 %8, i32 %9, i32 %10)
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {}, {tt.tensor_kind = 1 : i32}, {}, {}, {}, {}, {}, {}, {}], function_type = (memref<?xi8>, memref<?xi8>, memref<?xi32>, i32, i32, i32, i32, i32, i32, i32) -> (), sym_name = "k"}> ({
  ^bb0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi32>, %arg3: i32, %arg4: i32, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32):
    %0 = "arith.constant"() <{value = 0 : index}> : () -> index
    %1 = "arith.constant"() <{value = 10 : i32}> : () -> i32
    %2 = "arith.constant"() <{value = 1000 : i32}> : () -> i32
    %3 = "arith.muli"(%arg7, %2) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %4 = "arith.muli"(%arg4, %1) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %5 = "arith.addi"(%3, %4) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %6 = "arith.addi"(%5, %arg9) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %7 = "arith.addi"(%6, %arg3) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %8 = "tensor.empty"() : () -> tensor<1xi32>
    %9 = "tensor.insert"(%7, %8, %0) : (i32, tensor<1xi32>, index) -> tensor<1xi32>
    %10 = "memref.reinterpret_cast"(%arg2) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi32>) -> memref<1xi32, strided<[1]>>
    "bufferization.materialize_in_destination"(%9, %10) <{writable}> : (tensor<1xi32>, memref<1xi32, strided<[1]>>) -> ()
    "func.return"() : () -> ()
  }) {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} : () -> ()
}) : () -> ()

