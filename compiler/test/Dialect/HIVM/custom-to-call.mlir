// Seed 000 section 4.2: the link name is `_mlir_ciface_` + symbol when no operand or result is a
// memref, the bare symbol otherwise; arguments are ins then outs.
// RUN: tdist-opt %s --convert-distributed-to-hivm --hivm-custom-to-call | FileCheck %s

// CHECK-DAG: func.func private @_mlir_ciface_aclshmem_my_pe(i32) -> i32
// CHECK-DAG: func.func private @_mlir_ciface_aclshmem_n_pes(i32) -> i32
// CHECK-DAG: func.func private @_mlir_ciface_aclshmem_wait_int32(!llvm.ptr<1>, i32, i32) -> i32
// CHECK-DAG: func.func private @_mlir_ciface_aclshmem_consume_token_float_1d(tensor<8xf32>, i32, tensor<8xf32>) -> tensor<8xf32>
// CHECK-DAG: func.func private @aclshmem_ptr_float(memref<?xf32>, i32) -> memref<?xf32>
// CHECK-DAG: func.func private @aclshmemx_signal_op(memref<?xi32>, i64, i32, i32)
// CHECK-DAG: func.func private @_mlir_ciface_aclshmem_int64_p(!llvm.ptr<1>, i64, i32)

// CHECK-LABEL: func.func @kernel
// CHECK: %[[R:.*]] = call @_mlir_ciface_aclshmem_my_pe(%{{.*}}) : (i32) -> i32
// CHECK: call @_mlir_ciface_aclshmem_n_pes
// CHECK: %[[P:.*]] = call @aclshmem_ptr_float(%arg0, %[[R]]) : (memref<?xf32>, i32) -> memref<?xf32>
// CHECK: call @aclshmemx_signal_op(%arg1, %arg4, %{{.*}}, %[[R]]) : (memref<?xi32>, i64, i32, i32) -> ()
// CHECK: call @_mlir_ciface_aclshmem_int64_p(%arg2, %arg4, %[[R]])
// CHECK: %[[T:.*]] = call @_mlir_ciface_aclshmem_wait_int32(%arg2, %{{.*}}, %{{.*}})
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: call @_mlir_ciface_aclshmem_consume_token_float_1d(%arg3, %[[T]], %[[E]]) : (tensor<8xf32>, i32, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT: hivm.hir.custom
func.func @kernel(%buf: memref<?xf32>, %sig: memref<?xi32>, %p: !llvm.ptr<1>, %t: tensor<8xf32>, %v: i64)
    -> (memref<?xf32>, i32, tensor<8xf32>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %me = distributed.get_rank %c0
  %np = distributed.get_num_ranks %c0
  %remote = distributed.symm_at %buf, %me : memref<?xf32>
  distributed.notify %sig, %v, %me sig_op = add comm_scope = intra_node : memref<?xi32>
  distributed.notify %p, %v, %me sig_op = set comm_scope = intra_node : !llvm.ptr<1>
  %tok = distributed.wait %p, %c1, %c1 scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %t2 = distributed.consume_token %t, %tok : tensor<8xf32>, i32
  return %remote, %np, %t2 : memref<?xf32>, i32, tensor<8xf32>
}
