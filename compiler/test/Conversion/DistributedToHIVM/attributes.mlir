// gm_addr_args_indices, no_side_effect, DPS inits, erase vs replace, and "every other op is left
// as it was".
// RUN: tdist-opt %s --split-input-file --allow-unregistered-dialect --convert-distributed-to-hivm | FileCheck %s

// gm_addr_args_indices: pointer operands that are entry-block arguments of the function. Not
// included: integers (the rank), pointers computed in the body (symm_at results), tensors of
// pointers, and pointers that are block arguments of a nested region.
// CHECK-LABEL: func.func @gm_addr
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_ptr_float"}
// CHECK: %[[R:.*]] = hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_ptr_int64"}
// CHECK: hivm.hir.custom {hivm.is_distributed, {{.*}}symbol = "aclshmem_int64_p"} "dist.aclshmem_int64_p" ins(%[[R]],
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0, 1>, {{.*}}symbol = "aclshmem_putmem"}
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 1>, {{.*}}symbol = "aclshmem_getmem"}
// CHECK: scf.for
// CHECK: hivm.hir.custom {gm_addr_args_indices = array<i32: 0>, {{.*}}symbol = "aclshmem_wait_int32"}
// CHECK: hivm.hir.custom {hivm.is_distributed, {{.*}}symbol = "aclshmem_consume_token_ptr_1d"}
// CHECK: "test.region"
// CHECK: hivm.hir.custom {hivm.is_distributed, {{.*}}symbol = "aclshmem_ptr_int32"}
func.func @gm_addr(%buf: memref<?xf32>, %sig: !llvm.ptr<1>, %pe: i32, %n: i64,
                   %slots: memref<?xi32>, %tp: tensor<4x!llvm.ptr<1>>) {
  %remote = distributed.symm_at %buf, %pe : memref<?xf32>
  %v = arith.constant 1 : i64
  %remote_sig = distributed.symm_at %sig, %pe {elem_type = i64} : !llvm.ptr<1>
  distributed.notify %remote_sig, %v, %pe sig_op = set comm_scope = intra_node : !llvm.ptr<1>
  distributed.extern_call "aclshmem_putmem"(%buf, %sig, %n, %pe) {libname = "", libpath = "", pure = false} : (memref<?xf32>, !llvm.ptr<1>, i64, i32) -> ()
  distributed.extern_call "aclshmem_getmem"(%pe, %buf, %remote, %n) {libname = "", libpath = "", pure = false} : (i32, memref<?xf32>, memref<?xf32>, i64) -> ()
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  scf.for %i = %lb to %ub step %st {
    %one = arith.constant 1 : i32
    %t = distributed.wait %slots, %one, %one scope = sys semantic = acquire : memref<?xi32>, i32, i32
    %q = distributed.consume_token %tp, %t : tensor<4x!llvm.ptr<1>>, i32
    "test.keep"(%q) : (tensor<4x!llvm.ptr<1>>) -> ()
  }
  "test.region"() ({
  ^bb0(%inner: memref<?xi32>):
    %p = distributed.symm_at %inner, %pe : memref<?xi32>
    "test.keep"(%p) : (memref<?xi32>) -> ()
  }) : () -> ()
  "test.keep"(%remote) : (memref<?xf32>) -> ()
  return
}

// -----

// no_side_effect exactly when the source op has no memory effects: get_rank, get_num_ranks,
// consume_token and pure extern_call have it; wait, symm_at, notify and impure extern_call do not.
// CHECK-LABEL: func.func @effects
// CHECK: {{.*}}no_side_effect, symbol = "aclshmem_my_pe"}
// CHECK: {{.*}}no_side_effect, symbol = "aclshmem_n_pes"}
// CHECK: {{.*}}hivm.vf_mode = #hivm.vf_mode<SIMD>, symbol = "aclshmem_wait_int32"}
// CHECK: {{.*}}no_side_effect, symbol = "aclshmem_consume_token_float_ptr_1d"}
// CHECK: {{.*}}hivm.vf_mode = #hivm.vf_mode<SIMD>, symbol = "aclshmem_ptr_float"}
// CHECK: {{.*}}hivm.vf_mode = #hivm.vf_mode<SIMD>, symbol = "aclshmemx_signal_op"}
// CHECK: {{.*}}hivm.vf_mode = #hivm.vf_mode<SIMD>, symbol = "lib_impure"}
// CHECK: {{.*}}no_side_effect, symbol = "lib_pure"}
func.func @effects(%m: memref<?xf32>, %s: memref<?xi32>, %v: i64) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %n = distributed.get_num_ranks %c0
  %t = distributed.wait %s, %r, %c0 scope = sys semantic = acquire : memref<?xi32>, i32, i32
  %m2 = distributed.consume_token %m, %t : memref<?xf32>, i32
  %p = distributed.symm_at %m2, %n : memref<?xf32>
  distributed.notify %s, %v, %r sig_op = add comm_scope = intra_node : memref<?xi32>
  %a = distributed.extern_call "lib_impure"(%r) {libname = "", libpath = "", pure = false} : (i32) -> i32
  %b = distributed.extern_call "lib_pure"(%r) {libname = "", libpath = "", pure = true} : (i32) -> i32
  "test.keep"(%p, %a, %b) : (memref<?xf32>, i32, i32) -> ()
  return
}

// -----

// DPS: each ranked-tensor result gets a tensor.empty init in outs (dynamic sizes from the
// operand of the same type); scalar, memref and pointer results have none; ops without results
// are erased, the others replaced (their users now use the custom op's results).
// CHECK-LABEL: func.func @dps
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[C0:.*]] = hivm.hir.custom {{.*}} "dist.aclshmem_consume_token_float_1d" ins(%{{.*}}, %{{.*}} : tensor<16xf32>, i32) outs(%[[E0]] : tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[C:.*]] = arith.constant 0 : index
// CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %[[C]] : tensor<?x8xf16>
// CHECK: %[[E1:.*]] = tensor.empty(%[[D]]) : tensor<?x8xf16>
// CHECK: %[[C1:.*]] = hivm.hir.custom {{.*}} "dist.aclshmem_consume_token_half_2d" ins({{.*}}) outs(%[[E1]] : tensor<?x8xf16>) -> tensor<?x8xf16>
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4xi32>
// CHECK: %[[E3:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK: %[[X:.*]]:3 = hivm.hir.custom {{.*}} "dist.my_lib_op" ins(%{{.*}} : i32) outs(%[[E2]], %[[E3]] : tensor<4xi32>, tensor<2x2xf32>) -> tensor<4xi32>, i32, tensor<2x2xf32>
// CHECK: "test.keep"(%[[C0]], %[[C1]], %[[X]]#0, %[[X]]#1, %[[X]]#2)
func.func @dps(%t: tensor<16xf32>, %d: tensor<?x8xf16>, %tok: i32) {
  %0 = distributed.consume_token %t, %tok : tensor<16xf32>, i32
  %1 = distributed.consume_token %d, %tok : tensor<?x8xf16>, i32
  %2:3 = distributed.extern_call "my_lib_op"(%tok) {libname = "", libpath = "", pure = true} : (i32) -> (tensor<4xi32>, i32, tensor<2x2xf32>)
  "test.keep"(%0, %1, %2#0, %2#1, %2#2) : (tensor<16xf32>, tensor<?x8xf16>, tensor<4xi32>, i32, tensor<2x2xf32>) -> ()
  return
}

// -----

// Every other op is left exactly as it was: no folding (the foldable add and the unused constant
// stay), no CSE of the duplicated constants, no reordering.
// CHECK-LABEL: func.func @others_untouched
// CHECK-NEXT: %[[A:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[B:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT: %{{.*}} = arith.constant 42 : i64
// CHECK-NEXT: %{{.*}} = hivm.hir.custom {{.*}} "dist.aclshmem_my_pe" ins(%[[S]] : i32) -> i32
// CHECK-NEXT: return
func.func @others_untouched() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 2 : i32
  %s = arith.addi %a, %b : i32
  %unused = arith.constant 42 : i64
  %r = distributed.get_rank %s
  return %r : i32
}

// -----

// A wait whose token is unused (dl.wait as a barrier) is kept, as are other unused results.
// CHECK-LABEL: func.func @unused_wait
// CHECK: hivm.hir.custom {{.*}}symbol = "aclshmem_wait_int32"}
// CHECK: hivm.hir.custom {{.*}}symbol = "aclshmem_ptr_float"}
func.func @unused_wait(%s: memref<?xi32>, %m: memref<?xf32>, %n: i32, %v: i32) {
  %t = distributed.wait %s, %n, %v scope = sys semantic = acquire : memref<?xi32>, i32, i32
  %p = distributed.symm_at %m, %n : memref<?xf32>
  return
}
