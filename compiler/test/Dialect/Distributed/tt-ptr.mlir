// The seven ops on Triton's pointer types (docs/COMPILE.md section 2): `!tt.ptr<T>` is an opaque
// type here (tdist-opt does not link Triton); its pointee is parsed from the text.
// RUN: tdist-opt %s --allow-unregistered-dialect | tdist-opt --allow-unregistered-dialect | FileCheck %s

// CHECK-LABEL: "tt.func"
// CHECK: distributed.symm_at %{{.*}}, %{{.*}} : !tt.ptr<f32>
// CHECK: distributed.symm_at %{{.*}}, %{{.*}} : !tt.ptr<f32, 1>
// CHECK: distributed.wait %{{.*}}, %{{.*}}, %{{.*}} scope = sys semantic = acquire : !tt.ptr<i64>, i32, i64
// CHECK: distributed.wait %{{.*}}, %{{.*}}, %{{.*}} scope = gpu semantic = relaxed : tensor<4x!tt.ptr<i32>>, tensor<4xi32>, i32
// CHECK: distributed.notify %{{.*}}, %{{.*}}, %{{.*}} sig_op = add comm_scope = intra_node : !tt.ptr<i32>
// CHECK: distributed.consume_token %{{.*}}, %{{.*}} : !tt.ptr<f32>, i32
// CHECK: distributed.consume_token %{{.*}}, %{{.*}} : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
"tt.func"() <{function_type = (!tt.ptr<f32>, !tt.ptr<f32, 1>, !tt.ptr<i64>, !tt.ptr<i32>, tensor<4x!tt.ptr<i32>>, tensor<4xi32>, i32, i64) -> (), sym_name = "k"}> ({
^bb0(%p: !tt.ptr<f32>, %q: !tt.ptr<f32, 1>, %s64: !tt.ptr<i64>, %s32: !tt.ptr<i32>, %ts: tensor<4x!tt.ptr<i32>>, %tn: tensor<4xi32>, %pe: i32, %v: i64):
  %r = distributed.symm_at %p, %pe : !tt.ptr<f32>
  %r1 = distributed.symm_at %q, %pe : !tt.ptr<f32, 1>
  %t = distributed.wait %s64, %pe, %v scope = sys semantic = acquire : !tt.ptr<i64>, i32, i64
  %tt = distributed.wait %ts, %tn, %pe scope = gpu semantic = relaxed : tensor<4x!tt.ptr<i32>>, tensor<4xi32>, i32
  distributed.notify %s32, %v, %pe sig_op = add comm_scope = intra_node : !tt.ptr<i32>
  %c = distributed.consume_token %r, %t : !tt.ptr<f32>, i32
  %ct = distributed.consume_token %ts, %tt : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
  "test.keep"(%c, %r1, %ct) : (!tt.ptr<f32>, !tt.ptr<f32, 1>, tensor<4x!tt.ptr<i32>>) -> ()
  "tt.return"() : () -> ()
}) : () -> ()
