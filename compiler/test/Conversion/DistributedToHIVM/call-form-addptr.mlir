// form=call: a pointer built by tt.addptr is passed as base address + offset * element size, in
// arith. triton-ascend 3.2 lowers tt.ptr_to_int of an addptr to the aligned base pointer of the
// reinterpreted memref, which drops the offset (docs/COMPILE.md section 3).
// RUN: tdist-opt %s --allow-unregistered-dialect --convert-distributed-to-hivm=form=call | FileCheck %s

// CHECK-LABEL: "tt.func"
// CHECK: %[[BASE:.*]] = "tt.ptr_to_int"(%arg0) : (!tt.ptr<i64>) -> i64
// CHECK: %[[OFF:.*]] = arith.extsi %arg1 : i32 to i64
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFF]], %[[EIGHT]] : i64
// CHECK: %[[ADDR:.*]] = arith.addi %[[BASE]], %[[BYTES]] : i64
// CHECK: func.call @aclshmem_int64_p(%[[ADDR]], %arg2, %arg1)
// CHECK-NOT: gm_addr_args_indices
// An addptr over a pointer a call returned: that call's i64 plus the offset (f32: 4 bytes).
// CHECK: %[[R:.*]] = func.call @aclshmem_ptr_float
// CHECK: %[[OFF2:.*]] = arith.extsi %arg1 : i32 to i64
// CHECK: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: %[[B2:.*]] = arith.muli %[[OFF2]], %[[FOUR]] : i64
// CHECK: %[[A2:.*]] = arith.addi %[[R]], %[[B2]] : i64
// CHECK: func.call @aclshmem_consume_token_float_ptr(%[[A2]],
"tt.func"() <{function_type = (!tt.ptr<i64>, i32, i64, !tt.ptr<f32>) -> (), sym_name = "k"}> ({
^bb0(%sig: !tt.ptr<i64>, %i: i32, %v: i64, %f: !tt.ptr<f32>):
  %slot = "tt.addptr"(%sig, %i) : (!tt.ptr<i64>, i32) -> !tt.ptr<i64>
  distributed.notify %slot, %v, %i sig_op = set comm_scope = intra_node : !tt.ptr<i64>
  %r = distributed.symm_at %f, %i : !tt.ptr<f32>
  %q = "tt.addptr"(%r, %i) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
  %t = arith.constant 0 : i32
  %c = distributed.consume_token %q, %t : !tt.ptr<f32>, i32
  "tt.return"() : () -> ()
}) : () -> ()
