// The HIVM lowering on TTIR (docs/COMPILE.md section 2): !tt.ptr names, gm_addr_args_indices from
// an unregistered tt.func's entry block, existDot from tt.dot.
// RUN: tdist-opt %s --allow-unregistered-dialect --split-input-file --convert-distributed-to-hivm | FileCheck %s

// CHECK-LABEL: "tt.func"
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}hivm.tcore_type = #hivm.tcore_type<VECTOR>, {{.*}}symbol = "aclshmem_ptr_float"} "dist.aclshmem_ptr_float" ins(%arg0, %arg3 : !tt.ptr<f32>, i32) -> !tt.ptr<f32>
// CHECK: symbol = "aclshmem_consume_token_float_ptr"}
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmemx_signal_op"} "dist.aclshmemx_signal_op" ins(%arg1, {{.*}} : !tt.ptr<i32>, i64, i32, i32)
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_wait_int64"}
// CHECK: symbol = "aclshmem_consume_token_int32_ptr_1d"}
"tt.func"() <{function_type = (!tt.ptr<f32>, !tt.ptr<i32>, !tt.ptr<i64>, i32, i64, tensor<4x!tt.ptr<i32>>) -> (), sym_name = "k"}> ({
^bb0(%p: !tt.ptr<f32>, %s32: !tt.ptr<i32>, %s64: !tt.ptr<i64>, %pe: i32, %v: i64, %ts: tensor<4x!tt.ptr<i32>>):
  %r = distributed.symm_at %p, %pe : !tt.ptr<f32>
  %c0 = arith.constant 0 : i32
  %c = distributed.consume_token %r, %c0 : !tt.ptr<f32>, i32
  distributed.notify %s32, %v, %pe sig_op = add comm_scope = intra_node : !tt.ptr<i32>
  %t = distributed.wait %s64, %pe, %v scope = sys semantic = acquire : !tt.ptr<i64>, i32, i64
  %ct = distributed.consume_token %ts, %t : tensor<4x!tt.ptr<i32>>, i32
  "test.keep"(%c, %ct) : (!tt.ptr<f32>, tensor<4x!tt.ptr<i32>>) -> ()
  "tt.return"() : () -> ()
}) : () -> ()

// -----

// A tt.dot inside a tt.func makes every communication op CUBE_AND_VECTOR.
// CHECK-LABEL: "tt.func"
// CHECK: hivm.tcore_type = #hivm.tcore_type<CUBE_AND_VECTOR>, {{.*}}symbol = "aclshmem_my_pe"
"tt.func"() <{function_type = (tensor<16x16xf16>) -> (), sym_name = "dot"}> ({
^bb0(%a: tensor<16x16xf16>):
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = "tt.dot"(%a, %a, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %me = distributed.get_rank %c0
  "test.keep"(%d, %me) : (tensor<16x16xf32>, i32) -> ()
  "tt.return"() : () -> ()
}) : () -> ()
