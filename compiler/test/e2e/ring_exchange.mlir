// Ring exchange written with the distributed ops; compiled for the CPU backend by the e2e rule
// (tdist-opt --tdist-pipeline=cpu, mlir-translate, clang-19) and run by ring_driver.cpp on 4 PEs.
//
// Symmetric buffer layout (bytes), identical on every PE:
//   [0, 64)                    params: word 0 = salt (broadcast from PE 0 by the driver)
//   [64, 64 + 8*64)            signal slots, one i32 per 64-byte line, slot p for program p
//   [576, 576 + 8*K*8)         inbox: written by the previous PE through symm_at
//   [576 + 8*K*8, ... + 8*K*8) out: inbox + 1, written locally after the wait
// with K = 64 i64 words per program and at most 8 programs.
//
// Each program p of PE `me` writes K words salt + me*1000003 + idx (idx = p*K + j) into the
// inbox of PE next = (me + 1) % n, notifies slot p on PE next (set 1), waits for its own slot p
// (set by PE prev), then copies its inbox words + 1 into out, reading through consume_token.
// Program 0 finally waits on all slots at once (a strided wait over num_programs slots).

func.func @ring_exchange(%buf: !llvm.ptr) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one64 = arith.constant 1 : i64
  %K = arith.constant 64 : i64
  %slotBase = arith.constant 64 : i64      // bytes
  %slotStride = arith.constant 64 : i64    // bytes
  %inboxWord = arith.constant 72 : i64     // 576 / 8
  %outWord = arith.constant 584 : i64      // 72 + 8 * 64
  %mult = arith.constant 1000003 : i64

  %me = distributed.get_rank %c0
  %np = distributed.get_num_ranks %c0
  %pid = distributed.extern_call "tdistx_program_id"(%c0) {libname = "tdist", libpath = "", pure = true} : (i32) -> i32
  %grid = distributed.extern_call "tdistx_num_programs"(%c0) {libname = "tdist", libpath = "", pure = true} : (i32) -> i32

  %me1 = arith.addi %me, %c1 : i32
  %next = arith.remsi %me1, %np : i32
  %salt = llvm.load %buf : !llvm.ptr -> i64
  %me64 = arith.extsi %me : i32 to i64
  %meTerm = arith.muli %me64, %mult : i64
  %base = arith.addi %salt, %meTerm : i64
  %pid64 = arith.extsi %pid : i32 to i64
  %first = arith.muli %pid64, %K : i64

  // Put my words into the next PE's inbox.
  %remote = distributed.symm_at %buf, %next : !llvm.ptr
  %lb = arith.constant 0 : i64
  scf.for %j = %lb to %K step %one64 : i64 {
    %idx = arith.addi %first, %j : i64
    %val = arith.addi %base, %idx : i64
    %w = arith.addi %inboxWord, %idx : i64
    %dst = llvm.getelementptr %remote[%w] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    llvm.store %val, %dst : i64, !llvm.ptr
  }

  // Signal slot `pid` on the next PE (release: the words above are visible first).
  %slotOff0 = arith.muli %pid64, %slotStride : i64
  %slotOff = arith.addi %slotBase, %slotOff0 : i64
  %slot = llvm.getelementptr %buf[%slotOff] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  distributed.notify %slot, %one64, %next sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr

  // Wait for my own slot `pid` (set by the previous PE), then read my inbox after the wait.
  %tok = distributed.wait %slot, %c1, %c1 scope = sys semantic = acquire : !llvm.ptr, i32, i32
  %inbox = distributed.consume_token %buf, %tok : !llvm.ptr, i32
  scf.for %j = %lb to %K step %one64 : i64 {
    %idx = arith.addi %first, %j : i64
    %wi = arith.addi %inboxWord, %idx : i64
    %src = llvm.getelementptr %inbox[%wi] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %v = llvm.load %src : !llvm.ptr -> i64
    %v1 = arith.addi %v, %one64 : i64
    %wo = arith.addi %outWord, %idx : i64
    %dst = llvm.getelementptr %buf[%wo] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    llvm.store %v1, %dst : i64, !llvm.ptr
  }

  // Program 0: all `grid` slots, 64 bytes apart, must read 1.
  %isZero = arith.cmpi eq, %pid, %c0 : i32
  scf.if %isZero {
    %slots = llvm.getelementptr %buf[%slotBase] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %all = distributed.wait %slots, %grid, %c1 scope = sys semantic = acquire : !llvm.ptr, i32, i32
  }
  return
}
