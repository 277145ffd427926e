// All seven ops through the whole CPU-rank chain: raise-triton-distributed markers
// (RaiseTritonDistributed/markers.mlir) -> --tdist-pipeline=ascend-ttir -> triton-ascend 3.2's
// triton-adapter-opt (this file is its generic-form output) -> --tdist-pipeline=ascend-cpu ->
// mlir-translate. Every aclshmem symbol is called through its C interface.
// REQUIRES: mlir-translate
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s

// CHECK-DAG: declare i32 @_mlir_ciface_aclshmem_my_pe()
// CHECK-DAG: declare i32 @_mlir_ciface_aclshmem_n_pes()
// CHECK-DAG: declare i64 @_mlir_ciface_aclshmem_ptr_float(i64, i32)
// CHECK-DAG: declare i32 @_mlir_ciface_aclshmem_wait_int32(i64, i32, i32)
// CHECK-DAG: declare i32 @_mlir_ciface_aclshmem_wait_int64(i64, i32, i64)
// CHECK-DAG: declare i64 @_mlir_ciface_aclshmem_consume_token_float_ptr(i64, i32)
// CHECK-DAG: declare i32 @_mlir_ciface_aclshmem_consume_token_int32(i32, i32)
// CHECK-DAG: declare void @_mlir_ciface_aclshmemx_signal_op(i64, i64, i32, i32)
// CHECK-DAG: declare void @_mlir_ciface_aclshmem_int64_p(i64, i64, i32)
// CHECK-DAG: declare void @_mlir_ciface_aclshmem_putmem(i64, i64, i64, i32)
// CHECK-DAG: declare void @_mlir_ciface_aclshmem_quiet()
// CHECK-DAG: define void @_mlir_ciface_k(ptr %0, ptr %1, ptr %2, ptr %3, ptr %4, i32 %5, i32 %6, i32 %7, i32 %8, i32 %9, i32 %10)
"builtin.module"() ({
  "func.func"() <{function_type = (i32) -> i32, sym_name = "aclshmem_team_my_pe", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "aclshmem_quiet", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i64, i64, i32) -> (), sym_name = "aclshmem_putmem", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i64, i32) -> (), sym_name = "aclshmem_int64_p", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i64, i32, i32) -> (), sym_name = "aclshmemx_signal_op", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i32, i32) -> i32, sym_name = "aclshmem_consume_token_int32", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i32) -> i64, sym_name = "aclshmem_consume_token_float_ptr", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i32, i64) -> i32, sym_name = "aclshmem_wait_int64", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i32, i32) -> i32, sym_name = "aclshmem_wait_int32", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = (i64, i32) -> i64, sym_name = "aclshmem_ptr_float", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = () -> i32, sym_name = "aclshmem_n_pes", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{function_type = () -> i32, sym_name = "aclshmem_my_pe", sym_visibility = "private"}> ({
  }) {llvm.emit_c_interface} : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {tt.tensor_kind = 1 : i32}, {tt.tensor_kind = 1 : i32}, {}, {}, {}, {}, {}, {}, {}], function_type = (memref<?xi8>, memref<?xi8>, memref<?xf32>, memref<?xi32>, memref<?xi64>, i32, i32, i32, i32, i32, i32) -> (), sym_name = "k"}> ({
  ^bb0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xf32>, %arg3: memref<?xi32>, %arg4: memref<?xi64>, %arg5: i32, %arg6: i32, %arg7: i32, %arg8: i32, %arg9: i32, %arg10: i32):
    %0 = "arith.constant"() <{value = 0 : index}> : () -> index
    %1 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    %2 = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %3 = "arith.constant"() <{value = 1 : i64}> : () -> i64
    %4 = "arith.constant"() <{value = 2 : i32}> : () -> i32
    %5 = "arith.constant"() <{value = 64 : i64}> : () -> i64
    %6 = "arith.constant"() <{value = 1.000000e+00 : f32}> : () -> f32
    %7 = "tensor.empty"() : () -> tensor<1xf32>
    %8 = "linalg.fill"(%6, %7) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg11: f32, %arg12: f32):
      "linalg.yield"(%arg11) : (f32) -> ()
    }) : (f32, tensor<1xf32>) -> tensor<1xf32>
    %9 = "func.call"() <{callee = @aclshmem_my_pe}> {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_my_pe"} : () -> i32
    %10 = "func.call"() <{callee = @aclshmem_n_pes}> {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_n_pes"} : () -> i32
    %11 = "memref.extract_aligned_pointer_as_index"(%arg2) : (memref<?xf32>) -> index
    %12 = "arith.index_cast"(%11) : (index) -> i64
    %13 = "func.call"(%12, %9) <{callee = @aclshmem_ptr_float}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_ptr_float"} : (i64, i32) -> i64
    %14 = "arith.constant"() <{value = 4 : i64}> : () -> i64
    %15 = "arith.constant"() <{value = 1 : index}> : () -> index
    %16 = "arith.constant"() <{value = 0 : i64}> : () -> i64
    %17 = "arith.muli"(%16, %14) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %18 = "arith.addi"(%13, %17) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %19 = "hivm.hir.pointer_cast"(%18, %15) <{operandSegmentSizes = array<i32: 1, 1>}> : (i64, index) -> memref<?xf32>
    "annotation.mark"(%19) {address_space = #hivm.address_space<gm>} : (memref<?xf32>) -> ()
    %20 = "memref.reinterpret_cast"(%19) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xf32>) -> memref<1xf32, strided<[1]>>
    "bufferization.materialize_in_destination"(%8, %20) <{writable}> : (tensor<1xf32>, memref<1xf32, strided<[1]>>) -> ()
    %21 = "memref.extract_aligned_pointer_as_index"(%arg3) : (memref<?xi32>) -> index
    %22 = "arith.index_cast"(%21) : (index) -> i64
    %23 = "func.call"(%22, %2, %2) <{callee = @aclshmem_wait_int32}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_wait_int32"} : (i64, i32, i32) -> i32
    %24 = "memref.extract_aligned_pointer_as_index"(%arg4) : (memref<?xi64>) -> index
    %25 = "arith.index_cast"(%24) : (index) -> i64
    %26 = "func.call"(%25, %2, %3) <{callee = @aclshmem_wait_int64}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_wait_int64"} : (i64, i32, i64) -> i32
    %27 = "func.call"(%12, %23) <{callee = @aclshmem_consume_token_float_ptr}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_consume_token_float_ptr"} : (i64, i32) -> i64
    %28 = "func.call"(%10, %26) <{callee = @aclshmem_consume_token_int32}> {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_consume_token_int32"} : (i32, i32) -> i32
    "func.call"(%22, %3, %4, %9) <{callee = @aclshmemx_signal_op}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmemx_signal_op"} : (i64, i64, i32, i32) -> ()
    "func.call"(%25, %3, %9) <{callee = @aclshmem_int64_p}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_int64_p"} : (i64, i64, i32) -> ()
    "func.call"(%12, %13, %5, %9) <{callee = @aclshmem_putmem}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_putmem"} : (i64, i64, i64, i32) -> ()
    "func.call"() <{callee = @aclshmem_quiet}> {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_quiet"} : () -> ()
    %29 = "func.call"(%1) <{callee = @aclshmem_team_my_pe}> {hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", no_side_effect, symbol = "aclshmem_team_my_pe"} : (i32) -> i32
    %30 = "tensor.empty"() : () -> tensor<1xi32>
    %31 = "tensor.insert"(%28, %30, %0) : (i32, tensor<1xi32>, index) -> tensor<1xi32>
    %32 = "memref.reinterpret_cast"(%arg3) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xi32>) -> memref<1xi32, strided<[1]>>
    "bufferization.materialize_in_destination"(%31, %32) <{writable}> : (tensor<1xi32>, memref<1xi32, strided<[1]>>) -> ()
    %33 = "arith.constant"() <{value = 4 : i64}> : () -> i64
    %34 = "arith.constant"() <{value = 1 : index}> : () -> index
    %35 = "arith.constant"() <{value = 0 : i64}> : () -> i64
    %36 = "arith.muli"(%35, %33) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %37 = "arith.addi"(%27, %36) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %38 = "hivm.hir.pointer_cast"(%37, %34) <{operandSegmentSizes = array<i32: 1, 1>}> : (i64, index) -> memref<?xf32>
    "annotation.mark"(%38) {address_space = #hivm.address_space<gm>} : (memref<?xf32>) -> ()
    %39 = "memref.reinterpret_cast"(%38) <{operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0>, static_sizes = array<i64: 1>, static_strides = array<i64: 1>}> : (memref<?xf32>) -> memref<1xf32, strided<[1]>>
    "bufferization.materialize_in_destination"(%8, %39) <{writable}> : (tensor<1xf32>, memref<1xf32, strided<[1]>>) -> ()
    "func.return"() : () -> ()
  }) {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"} : () -> ()
}) : () -> ()

