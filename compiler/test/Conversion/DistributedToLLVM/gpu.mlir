// target=gpu: every op is a call of the NVIDIA device bitcode. Rank queries and symm_at call the
// thread-form ABI; wait and notify call the program-collective `_i64` twins (the device ABI's one
// wait and one notify, include/tdist/NVIDIA/device.cuh) with the slot address as i64;
// consume_token disappears.
// RUN: tdist-opt %s --convert-distributed-to-llvm=target=gpu | FileCheck %s
// RUN: tdist-opt %s --convert-distributed-to-llvm="target=gpu wait-timeout-ns=0" \
// RUN:   | FileCheck %s --check-prefix=FOREVER
// RUN: tdist-opt %s --convert-distributed-to-llvm="target=gpu wait-timeout-ns=2000000000" \
// RUN:   | FileCheck %s --check-prefix=BOUND
// RUN: tdist-opt %s --convert-distributed-to-llvm=target=gpu | FileCheck %s --check-prefix=NONE

// int32_t tdistx_wait_<T>_i64(int64_t slots, int32_t n, T value, int64_t timeout_ns);
// int32_t tdistx_notify_<T>_i64(int64_t slot, T value, int32_t pe, int32_t sig_op);
// CHECK-DAG: llvm.func @tdistx_wait_int32_i64(i64, i32, i32, i64) -> i32
// CHECK-DAG: llvm.func @tdistx_wait_int64_i64(i64, i32, i64, i64) -> i32
// CHECK-DAG: llvm.func @tdistx_notify_int32_i64(i64, i32, i32, i32) -> i32
// CHECK-DAG: llvm.func @tdistx_notify_int64_i64(i64, i64, i32, i32) -> i32
// CHECK-DAG: llvm.func @tdistx_notify_uint64_i64(i64, i64, i32, i32) -> i32
// No wait or notify of the lowering's own, and no thread-form wait / notify.
// NONE-NOT: inline_asm
// NONE-NOT: vprintf
// NONE-NOT: nvvm.
// NONE-NOT: scf.
// NONE-NOT: @tdistx_wait_int32(
// NONE-NOT: @tdistx_notify_int32(
// NONE-NOT: distributed.

// CHECK-LABEL: func.func @queries
// CHECK: llvm.call @tdist_my_pe() : () -> i32
// CHECK: llvm.call @tdist_n_pes() : () -> i32
// CHECK: %[[G:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[P:.*]] = llvm.call @tdist_ptr(%[[G]], %{{.*}}) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK: llvm.addrspacecast %[[P]] : !llvm.ptr to !llvm.ptr<1>
func.func @queries(%p: !llvm.ptr<1>) -> (i32, i32, !llvm.ptr<1>) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %n = distributed.get_num_ranks %c0
  %q = distributed.symm_at %p, %r : !llvm.ptr<1>
  return %r, %n, %q : i32, i32, !llvm.ptr<1>
}

// One call of the ABI's wait: the slots' generic address as i64, n, the value and the bound
// (-1 by default: the runtime's TDIST_WAIT_TIMEOUT_MS). Its result is the token;
// consume_token is replaced by its input (the call orders the load after it).
// CHECK-LABEL: func.func @wait_sys_acquire
// CHECK: %[[G:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[A:.*]] = llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK: %[[TO:.*]] = arith.constant -1 : i64
// CHECK: %[[T:.*]] = llvm.call @tdistx_wait_int32_i64(%[[A]], %arg1, %arg2, %[[TO]]) : (i64, i32, i32, i64) -> i32
// CHECK-NOT: distributed.consume_token
// CHECK: %[[X:.*]] = llvm.load %arg3 : !llvm.ptr<1> -> f32
// CHECK: return %[[T]], %[[X]]
// FOREVER-LABEL: func.func @wait_sys_acquire
// FOREVER: %[[TO:.*]] = arith.constant 0 : i64
// FOREVER: llvm.call @tdistx_wait_int32_i64(%{{.*}}, %arg1, %arg2, %[[TO]])
// BOUND-LABEL: func.func @wait_sys_acquire
// BOUND: %[[TO:.*]] = arith.constant 2000000000 : i64
// BOUND: llvm.call @tdistx_wait_int32_i64(%{{.*}}, %arg1, %arg2, %[[TO]])
func.func @wait_sys_acquire(%slots: !llvm.ptr<1>, %n: i32, %v: i32, %data: !llvm.ptr<1>) -> (i32, f32) {
  %t = distributed.wait %slots, %n, %v scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %d = distributed.consume_token %data, %t : !llvm.ptr<1>, i32
  %x = llvm.load %d : !llvm.ptr<1> -> f32
  return %t, %x : i32, f32
}

// Scope and semantic select nothing (the ABI's wait is acquire at system scope, at least as
// strong as any of them); the slot type picks the variant; a generic pointer needs no cast; an
// i64 n is narrowed to the ABI's int32 and the token widened back to n's type.
// CHECK-LABEL: func.func @wait_variants
// CHECK: %[[A:.*]] = llvm.ptrtoint %arg0 : !llvm.ptr to i64
// CHECK: llvm.call @tdistx_wait_int64_i64(%[[A]], %arg1, %arg2, %{{.*}}) : (i64, i32, i64, i64) -> i32
// CHECK: %[[N:.*]] = arith.trunci %arg4 : i64 to i32
// CHECK: %[[T:.*]] = llvm.call @tdistx_wait_int32_i64(%{{.*}}, %[[N]], %arg3, %{{.*}}) : (i64, i32, i32, i64) -> i32
// CHECK: %[[TW:.*]] = arith.extsi %[[T]] : i32 to i64
// CHECK: return %[[TW]]
func.func @wait_variants(%slots: !llvm.ptr, %n: i32, %v64: i64, %v: i32, %n64: i64) -> i64 {
  %a = distributed.wait %slots, %n, %v64 scope = gpu semantic = relaxed : !llvm.ptr, i32, i64
  %b = distributed.wait %slots, %n64, %v scope = cta semantic = acquire : !llvm.ptr, i64, i32
  return %b : i64
}

// A wait whose token is unused stays (it is the synchronisation).
// CHECK-LABEL: func.func @unused_wait
// CHECK: llvm.call @tdistx_wait_int32_i64
func.func @unused_wait(%p: !llvm.ptr<1>, %n: i32) {
  %t = distributed.wait %p, %n, %n scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  return
}

// notify: one call of the ABI's notify (it synchronises the CTA, thread 0 translates and
// releases): the slot as i64, the value narrowed to the slot width, the PE, SET = 1 / ADD = 2.
// CHECK-LABEL: func.func @notify_set_i32
// CHECK: %[[G:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[A:.*]] = llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK: %[[V:.*]] = arith.trunci %arg1 : i64 to i32
// CHECK: %[[SET:.*]] = arith.constant 1 : i32
// CHECK: llvm.call @tdistx_notify_int32_i64(%[[A]], %[[V]], %arg2, %[[SET]]) : (i64, i32, i32, i32) -> i32
// CHECK-NEXT: return
func.func @notify_set_i32(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  return
}

// CHECK-LABEL: func.func @notify_add_i64
// CHECK: %[[ADD:.*]] = arith.constant 2 : i32
// CHECK: llvm.call @tdistx_notify_int64_i64(%{{.*}}, %arg1, %arg2, %[[ADD]]) : (i64, i64, i32, i32) -> i32
func.func @notify_add_i64(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = add comm_scope = gpu : !llvm.ptr<1>
  return
}

// Across nodes the same call: how the update reaches the peer is the ABI's choice.
// CHECK-LABEL: func.func @notify_inter_node
// CHECK: llvm.call @tdistx_notify_uint64_i64(%{{.*}}, %arg1, %arg2, %{{.*}}) : (i64, i64, i32, i32) -> i32
// CHECK-NEXT: return
func.func @notify_inter_node(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = set comm_scope = inter_node {elem_type = ui64} : !llvm.ptr<1>
  return
}

// consume_token of any type is its input on the GPU.
// CHECK-LABEL: func.func @consume
// CHECK-NOT: llvm.call
// CHECK: return %arg0, %arg1, %arg2
func.func @consume(%p: !llvm.ptr<1>, %i: i64, %f: f32, %t: i32) -> (!llvm.ptr<1>, i64, f32) {
  %a = distributed.consume_token %p, %t : !llvm.ptr<1>, i32
  %b = distributed.consume_token %i, %t : i64, i32
  %c = distributed.consume_token %f, %t : f32, i32
  return %a, %b, %c : !llvm.ptr<1>, i64, f32
}
