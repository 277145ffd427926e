// tdist-ascend-exact-addresses: tt.ptr_to_int of a tt.addptr chain becomes the root's address plus
// offset * element size (triton-ascend 3.2 would take the reinterpreted memref's aligned base and
// drop the offset). A kernel's own code is covered, not only the aclshmem operands.
// RUN: tdist-opt %s --allow-unregistered-dialect --tdist-ascend-exact-addresses | FileCheck %s

// CHECK-LABEL: "tt.func"
// CHECK: %[[ROOT:.*]] = "tt.ptr_to_int"(%arg0) : (!tt.ptr<f16>) -> i64
// CHECK: %[[O1:.*]] = arith.extsi %arg1 : i32 to i64
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[B1:.*]] = arith.muli %[[O1]], %[[TWO]] : i64
// CHECK: %[[A1:.*]] = arith.addi %[[ROOT]], %[[B1]] : i64
// CHECK: %[[B2:.*]] = arith.muli %arg2, %{{.*}} : i64
// CHECK: %[[A2:.*]] = arith.addi %[[A1]], %[[B2]] : i64
// CHECK: "use"(%[[A2]])
// An address made from an integer stays that integer, plus the offset (f32: 4 bytes).
// CHECK: %[[B3:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.addi %arg2, %[[B3]] : i64
// CHECK-NOT: "tt.ptr_to_int"(%{{.*}}) : (!tt.ptr<f32>)
"tt.func"() <{function_type = (!tt.ptr<f16>, i32, i64) -> (), sym_name = "k"}> ({
^bb0(%p: !tt.ptr<f16>, %i: i32, %j: i64):
  %q = "tt.addptr"(%p, %i) : (!tt.ptr<f16>, i32) -> !tt.ptr<f16>
  %r = "tt.addptr"(%q, %j) : (!tt.ptr<f16>, i64) -> !tt.ptr<f16>
  %a = "tt.ptr_to_int"(%r) : (!tt.ptr<f16>) -> i64
  "use"(%a) : (i64) -> ()
  %f = "tt.int_to_ptr"(%j) : (i64) -> !tt.ptr<f32>
  %g = "tt.addptr"(%f, %i) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
  %b = "tt.ptr_to_int"(%g) : (!tt.ptr<f32>) -> i64
  "use"(%b) : (i64) -> ()
  "tt.return"() : () -> ()
}) : () -> ()
