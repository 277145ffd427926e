// --tdist-pipeline=ascend-ttir on a real triton-ascend kernel's TTIR (generic form, trimmed):
// dl.symm_at's marker raised, then lowered to the link-time form that triton-adapter-opt reads.
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-ttir --mlir-print-op-generic | FileCheck %s
// The output parses again (generic form, unregistered tt).
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-pipeline=ascend-ttir --mlir-print-op-generic \
// RUN:   | tdist-opt --allow-unregistered-dialect -o /dev/null

// CHECK: "func.func"() <{function_type = (i64, i32) -> i64, sym_name = "aclshmem_ptr_float", sym_visibility = "private"}> ({
// CHECK-NEXT: }) {llvm.emit_c_interface} : () -> ()
// CHECK: "tt.func"()
// CHECK-NOT: tt.extern_elementwise
// CHECK: %[[I:.*]] = "tt.ptr_to_int"(%arg1) : (!tt.ptr<f32>) -> i64
// CHECK: %[[R:.*]] = "func.call"(%[[I]], %arg2) <{callee = @aclshmem_ptr_float}> {gm_addr_args_indices = array<i32: 0>, hivm.is_distributed, hivm.pipe = #hivm.pipe<PIPE_S>, hivm.tcore_type = #hivm.tcore_type<VECTOR>, hivm.vf_mode = "SIMD", symbol = "aclshmem_ptr_float"} : (i64, i32) -> i64
// CHECK: %[[P:.*]] = "tt.int_to_ptr"(%[[R]]) : (i64) -> !tt.ptr<f32>
// CHECK: "tt.splat"(%[[P]])
// CHECK-NOT: distributed.
"builtin.module"() ({
  "tt.func"() <{function_type = (!tt.ptr<f32>, !tt.ptr<f32>, i32) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%arg0: !tt.ptr<f32>, %arg1: !tt.ptr<f32>, %arg2: i32):
    %0 = "arith.constant"() <{value = dense<0.000000e+00> : tensor<128xf32>}> : () -> tensor<128xf32>
    %1 = "arith.constant"() <{value = 128 : i32}> : () -> i32
    %2 = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %3 = "arith.muli"(%2, %1) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %4 = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %5 = "tt.splat"(%3) : (i32) -> tensor<128xi32>
    %6 = "arith.addi"(%5, %4) <{overflowFlags = #arith.overflow<none>}> : (tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
    %7 = "tt.splat"(%arg2) : (i32) -> tensor<128xi32>
    %8 = "arith.cmpi"(%6, %7) <{predicate = 2 : i64}> : (tensor<128xi32>, tensor<128xi32>) -> tensor<128xi1>
    %9 = "tt.splat"(%arg0) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
    %10 = "tt.addptr"(%9, %6) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    %11 = "tt.load"(%10, %8, %0) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<128x!tt.ptr<f32>>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
    %12 = "tt.ptr_to_int"(%arg1) : (!tt.ptr<f32>) -> i64
    %13 = "tt.extern_elementwise"(%12, %arg2) <{libname = "libtdist_device", libpath = "", pure = true, symbol = "tdist_ptr_i64"}> : (i64, i32) -> i64
    %14 = "tt.int_to_ptr"(%13) : (i64) -> !tt.ptr<f32>
    %15 = "tt.splat"(%14) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
    %16 = "tt.addptr"(%15, %6) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    "tt.store"(%16, %11, %8) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>, tensor<128xi1>) -> ()
    "tt.return"() : () -> ()
  }) {noinline = false} : () -> ()
}) : () -> ()

