// target=cpu: every op becomes a call into the CPU device ABI, with the exact names and
// signatures of include/tdist/abi.h.
// RUN: tdist-opt %s --convert-distributed-to-llvm=target=cpu | FileCheck %s
// The full cpu pipeline leaves only the LLVM dialect.
// RUN: tdist-opt %s --tdist-pipeline=cpu | FileCheck %s --check-prefix=PIPE

// int tdist_my_pe(void); int tdist_n_pes(void); void *tdist_ptr(const void *, int);
// int32_t tdistx_wait_<T>(T *slots, int32_t n, T value);
// void tdistx_notify_<T>(T *slot, T value, int32_t pe, int32_t sig_op);
// void *tdistx_consume_token_ptr(void *, int32_t); int64_t tdistx_consume_token_int64(int64_t, int32_t)
// CHECK-DAG: llvm.func @tdist_my_pe() -> i32
// CHECK-DAG: llvm.func @tdist_n_pes() -> i32
// CHECK-DAG: llvm.func @tdist_ptr(!llvm.ptr, i32) -> !llvm.ptr
// CHECK-DAG: llvm.func @tdistx_wait_int32(!llvm.ptr, i32, i32) -> i32
// CHECK-DAG: llvm.func @tdistx_wait_int64(!llvm.ptr, i32, i64) -> i32
// CHECK-DAG: llvm.func @tdistx_notify_int32(!llvm.ptr, i32, i32, i32)
// CHECK-DAG: llvm.func @tdistx_notify_int64(!llvm.ptr, i64, i32, i32)
// CHECK-DAG: llvm.func @tdistx_notify_uint64(!llvm.ptr, i64, i32, i32)
// CHECK-DAG: llvm.func @tdistx_consume_token_ptr(!llvm.ptr, i32) -> !llvm.ptr
// CHECK-DAG: llvm.func @tdistx_consume_token_int64(i64, i32) -> i64
// CHECK-DAG: llvm.func @tdist_putmem(!llvm.ptr, !llvm.ptr, i64, i32)
// CHECK-NOT: distributed.

// CHECK-LABEL: func.func @queries
// CHECK: %[[R:.*]] = llvm.call @tdist_my_pe() : () -> i32
// CHECK: %[[N:.*]] = llvm.call @tdist_n_pes() : () -> i32
// CHECK: return %[[R]], %[[N]]
func.func @queries() -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %r = distributed.get_rank %c0
  %n = distributed.get_num_ranks %c0
  return %r, %n : i32, i32
}

// Address-space-1 pointers are cast to generic for the ABI and back.
// CHECK-LABEL: func.func @symm_at
// CHECK: %[[G:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[P:.*]] = llvm.call @tdist_ptr(%[[G]], %arg1) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK: %[[B:.*]] = llvm.addrspacecast %[[P]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: %[[Q:.*]] = llvm.call @tdist_ptr(%arg2, %arg1) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK: return %[[B]], %[[Q]]
func.func @symm_at(%p: !llvm.ptr<1>, %pe: i32, %g: !llvm.ptr) -> (!llvm.ptr<1>, !llvm.ptr) {
  %a = distributed.symm_at %p, %pe : !llvm.ptr<1>
  %b = distributed.symm_at %g, %pe : !llvm.ptr
  return %a, %b : !llvm.ptr<1>, !llvm.ptr
}

// The slot type picks the ABI variant; i64 numBarriers are narrowed to the ABI's int32; the
// token takes numBarriers' type.
// CHECK-LABEL: func.func @waits
// CHECK: %[[T0:.*]] = llvm.call @tdistx_wait_int32(%arg0, %arg1, %arg3) : (!llvm.ptr, i32, i32) -> i32
// CHECK: %[[N:.*]] = arith.trunci %arg2 : i64 to i32
// CHECK: %[[T1:.*]] = llvm.call @tdistx_wait_int64(%arg0, %[[N]], %arg4) : (!llvm.ptr, i32, i64) -> i32
// CHECK: %[[T1W:.*]] = arith.extsi %[[T1]] : i32 to i64
// CHECK: return %[[T0]], %[[T1W]]
func.func @waits(%p: !llvm.ptr, %n: i32, %n64: i64, %v: i32, %v64: i64) -> (i32, i64) {
  %a = distributed.wait %p, %n, %v scope = sys semantic = acquire : !llvm.ptr, i32, i32
  %b = distributed.wait %p, %n64, %v64 scope = gpu semantic = relaxed : !llvm.ptr, i64, i64
  return %a, %b : i32, i64
}

// A wait whose token is unused stays (it is the synchronisation).
// CHECK-LABEL: func.func @unused_wait
// CHECK: llvm.call @tdistx_wait_int32
func.func @unused_wait(%p: !llvm.ptr, %n: i32) {
  %t = distributed.wait %p, %n, %n scope = sys semantic = acquire : !llvm.ptr, i32, i32
  return
}

// notify: the slot type picks the variant (default i64), the value is narrowed for i32 slots,
// SET = 1 and ADD = 2.
// CHECK-LABEL: func.func @notifies
// CHECK: %[[V32:.*]] = arith.trunci %arg1 : i64 to i32
// CHECK: %[[SET:.*]] = arith.constant 1 : i32
// CHECK: llvm.call @tdistx_notify_int32(%arg0, %[[V32]], %arg2, %[[SET]]) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK: %[[ADD:.*]] = arith.constant 2 : i32
// CHECK: llvm.call @tdistx_notify_int64(%arg0, %arg1, %arg2, %[[ADD]]) : (!llvm.ptr, i64, i32, i32) -> ()
// CHECK: llvm.call @tdistx_notify_uint64(%arg0, %arg1, %arg2, %{{.*}}) : (!llvm.ptr, i64, i32, i32) -> ()
func.func @notifies(%p: !llvm.ptr, %v: i64, %pe: i32) {
  distributed.notify %p, %v, %pe sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr
  distributed.notify %p, %v, %pe sig_op = add comm_scope = intra_node : !llvm.ptr
  distributed.notify %p, %v, %pe sig_op = set comm_scope = inter_node {elem_type = ui64} : !llvm.ptr
  return
}

// consume_token: pointers and i64 through the ABI's opaque identity, anything else unchanged.
// CHECK-LABEL: func.func @consume
// CHECK: %[[P:.*]] = llvm.call @tdistx_consume_token_ptr(%arg0, %arg3) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK: %[[I:.*]] = llvm.call @tdistx_consume_token_int64(%arg1, %arg3) : (i64, i32) -> i64
// CHECK: return %[[P]], %[[I]], %arg2
func.func @consume(%p: !llvm.ptr, %i: i64, %f: f32, %t: i32) -> (!llvm.ptr, i64, f32) {
  %a = distributed.consume_token %p, %t : !llvm.ptr, i32
  %b = distributed.consume_token %i, %t : i64, i32
  %c = distributed.consume_token %f, %t : f32, i32
  return %a, %b, %c : !llvm.ptr, i64, f32
}

// extern_call: a call of its own symbol.
// CHECK-LABEL: func.func @extern
// CHECK: llvm.call @tdist_putmem(%arg0, %arg1, %arg2, %arg3) : (!llvm.ptr, !llvm.ptr, i64, i32) -> ()
// CHECK: %[[X:.*]] = llvm.call @tdistx_program_id(%arg3) : (i32) -> i32
func.func @extern(%d: !llvm.ptr, %s: !llvm.ptr, %n: i64, %pe: i32) -> i32 {
  distributed.extern_call "tdist_putmem"(%d, %s, %n, %pe) {libname = "tdist", libpath = "", pure = false} : (!llvm.ptr, !llvm.ptr, i64, i32) -> ()
  %x = distributed.extern_call "tdistx_program_id"(%pe) {libname = "tdist", libpath = "", pure = true} : (i32) -> i32
  return %x : i32
}

// PIPE-NOT: distributed.
// PIPE-NOT: func.func
// PIPE-NOT: arith.
// PIPE-LABEL: llvm.func @queries
// PIPE: llvm.call @tdist_my_pe
// PIPE-LABEL: llvm.func @waits
// PIPE: llvm.call @tdistx_wait_int32
