// target=gpu: rank queries and symm_at call the device ABI; wait is a bounded inline-PTX spin
// loop over slots 64 bytes apart; notify is a one-thread release store / atomic add after a
// block barrier; consume_token disappears.
// RUN: tdist-opt %s --convert-distributed-to-llvm="target=gpu spin-budget=1000" | FileCheck %s

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

// One spin loop per slot: slot i at byte offset i * 64; system-scope acquire load; the loop
// stops when the slot equals the value or after spin-budget iterations; if unequal it prints what
// it waited for (polls, slot address, expected, last seen) through vprintf, then traps.
// consume_token is replaced by its input.
// CHECK-LABEL: func.func @wait_sys_acquire
// CHECK: %[[STRIDE:.*]] = arith.constant 64 : i64
// CHECK: %[[BUDGET:.*]] = arith.constant 1000 : i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %arg1 step %{{.*}} : i32 {
// CHECK:   %[[I64:.*]] = arith.extsi %[[I]] : i32 to i64
// CHECK:   %[[OFF:.*]] = arith.muli %[[I64]], %[[STRIDE]] : i64
// CHECK:   %[[SLOT:.*]] = llvm.getelementptr %arg0[%[[OFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK:   %[[ADDR:.*]] = llvm.ptrtoint %[[SLOT]] : !llvm.ptr<1> to i64
// CHECK:   %[[W:.*]]:3 = scf.while (%[[S:.*]] = %{{.*}}) : (i64) -> (i64, i1, i32) {
// CHECK:     %[[V:.*]] = llvm.inline_asm has_side_effects "ld.acquire.sys.b32 $0, [$1];", "=r,l,~{memory}" %[[ADDR]] : (i64) -> i32
// CHECK:     %[[NE:.*]] = arith.cmpi ne, %[[V]], %arg2 : i32
// CHECK:     %[[MORE:.*]] = arith.cmpi ult, %[[S]], %[[BUDGET]] : i64
// CHECK:     %[[AGAIN:.*]] = arith.andi %[[NE]], %[[MORE]] : i1
// CHECK:     scf.condition(%[[AGAIN]]) %[[S]], %[[NE]], %[[V]] : i64, i1, i32
// CHECK:   scf.if %[[W]]#1 {
// CHECK:     %[[FMT:.*]] = llvm.mlir.addressof @__tdist_wait_expired : !llvm.ptr
// CHECK:     %[[BUF:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, i64, i64, i64)>
// CHECK-DAG: llvm.store %[[W]]#0, %{{.*}} : i64, !llvm.ptr
// CHECK-DAG: llvm.store %[[ADDR]], %{{.*}} : i64, !llvm.ptr
// CHECK:     llvm.call @vprintf(%[[FMT]], %[[BUF]]) : (!llvm.ptr, !llvm.ptr) -> i32
// CHECK:     llvm.intr.trap
// CHECK-NOT: distributed.consume_token
// CHECK: %[[X:.*]] = llvm.load %arg3 : !llvm.ptr<1> -> f32
// CHECK: return %{{.*}}, %[[X]]
func.func @wait_sys_acquire(%slots: !llvm.ptr<1>, %n: i32, %v: i32, %data: !llvm.ptr<1>) -> (i32, f32) {
  %t = distributed.wait %slots, %n, %v scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %d = distributed.consume_token %data, %t : !llvm.ptr<1>, i32
  %x = llvm.load %d : !llvm.ptr<1> -> f32
  return %t, %x : i32, f32
}

// Scope and semantic pick the PTX qualifiers; 64-bit slots use .b64 and 64-bit registers.
// CHECK-LABEL: func.func @wait_variants
// CHECK: "ld.relaxed.gpu.b64 $0, [$1];", "=l,l,~{memory}"
// CHECK: "ld.acquire.cta.b32 $0, [$1];", "=r,l,~{memory}"
func.func @wait_variants(%slots: !llvm.ptr<1>, %n: i32, %v64: i64, %v: i32) {
  %a = distributed.wait %slots, %n, %v64 scope = gpu semantic = relaxed : !llvm.ptr<1>, i32, i64
  %b = distributed.wait %slots, %n, %v scope = cta semantic = acquire : !llvm.ptr<1>, i32, i32
  return
}

// notify: block barrier, then thread (0,0,0) only: translate the slot with tdist_ptr and issue
// st.release.sys (set) or atom.add.release.sys (add); an unreachable peer (NULL) falls back to
// the ABI's tdistx_notify_<T>.
// CHECK-LABEL: func.func @notify_set_i32
// CHECK: %[[SLOT:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[V:.*]] = arith.trunci %arg1 : i64 to i32
// CHECK: nvvm.barrier0
// CHECK: %[[TX:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[TY:.*]] = nvvm.read.ptx.sreg.tid.y : i32
// CHECK: %[[TZ:.*]] = nvvm.read.ptx.sreg.tid.z : i32
// CHECK: %[[OR1:.*]] = arith.ori %[[TX]], %[[TY]] : i32
// CHECK: %[[OR2:.*]] = arith.ori %[[OR1]], %[[TZ]] : i32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[OR2]], %{{.*}} : i32
// CHECK: scf.if %[[FIRST]] {
// CHECK:   %[[R:.*]] = llvm.call @tdist_ptr(%[[SLOT]], %arg2) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:   %[[UNREACH:.*]] = llvm.icmp "eq" %[[R]], %[[NULL]] : !llvm.ptr
// CHECK:   scf.if %[[UNREACH]] {
// CHECK:     llvm.call @tdistx_notify_int32(%[[SLOT]], %[[V]], %arg2, %{{.*}}) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK:   } else {
// CHECK:     %[[A:.*]] = llvm.ptrtoint %[[R]] : !llvm.ptr to i64
// CHECK:     llvm.inline_asm has_side_effects "st.release.sys.b32 [$0], $1;", "l,r,~{memory}" %[[A]], %[[V]] : (i64, i32) -> ()
func.func @notify_set_i32(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  return
}

// CHECK-LABEL: func.func @notify_add_i64
// CHECK: nvvm.barrier0
// CHECK: llvm.inline_asm has_side_effects "atom.add.release.sys.u64 $0, [$1], $2;", "=l,l,l,~{memory}" %{{.*}}, %arg1 : (i64, i64) -> i64
func.func @notify_add_i64(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = add comm_scope = gpu : !llvm.ptr<1>
  return
}

// Across nodes the ABI delivers the signal (from thread 0).
// CHECK-LABEL: func.func @notify_inter_node
// CHECK: scf.if
// CHECK-NEXT: llvm.call @tdistx_notify_uint64(%{{.*}}, %arg1, %arg2, %{{.*}}) : (!llvm.ptr, i64, i32, i32) -> ()
// CHECK-NOT: inline_asm
// CHECK: return
func.func @notify_inter_node(%sig: !llvm.ptr<1>, %v: i64, %pe: i32) {
  distributed.notify %sig, %v, %pe sig_op = set comm_scope = inter_node {elem_type = ui64} : !llvm.ptr<1>
  return
}
