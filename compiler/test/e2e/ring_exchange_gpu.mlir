// Ring exchange for the GPU, written with the distributed ops: the compiler half of the system
// running on the CUDA backend. Built by compiler/test/e2e (tdist-opt --tdist-pipeline=gpu,
// mlir-translate, llvm-link with the NVIDIA device bitcode, llc to sm_90 PTX) and run by
// ring_driver_gpu.cu, which loads the PTX, registers the module with tdist (the state patch) and
// launches it on every PE.
//
// Every wait and notify is a call of the device ABI's one wait / notify (the `_i64` twins of
// include/tdist/NVIDIA/device.cuh), inlined from the bitcode.
//
// One thread per program (grid = P programs). Program p of PE `me` owns two signal slots, 64
// bytes apart: set = slot 2p, count = slot 2p + 1.
//   buf[p]    on PE next = (me + 1) % n  <- salt + me * 1000 + p    (through symm_at)
//   set slot  on PE next                <- round                    (notify, set)
//   count     on PE next                += 1                        (notify, add; zeroed once, so
//                                                                    it equals round after it)
//   waits until both of its own slots == round (one wait over 2 slots, updated by PE prev), then
//   reads buf[p] through the consume_token result and stores it to out[p] (local).
// buf: f32 [P] symmetric; sig: i32 slots 64 bytes apart, [2P] symmetric; out: f32 [P] local.
func.func @ring_exchange_gpu(%buf: !llvm.ptr<1>, %sig: !llvm.ptr<1>, %out: !llvm.ptr<1>, %salt: f32,
                             %round: i32) attributes {tdist.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %one = arith.constant 1 : i64
  %c16 = arith.constant 16 : i64
  %c32 = arith.constant 32 : i64
  %thousand = arith.constant 1000.0 : f32
  %me = distributed.get_rank %c0
  %np = distributed.get_num_ranks %c0
  %pid = distributed.extern_call "tdistx_program_id"(%c0) {libname = "tdist", libpath = "", pure = true} : (i32) -> i32
  %next0 = arith.addi %me, %c1 : i32
  %next = arith.remsi %next0, %np : i32
  %pid64 = arith.extsi %pid : i32 to i64
  // value = salt + me * 1000 + pid
  %mef = arith.sitofp %me : i32 to f32
  %pidf = arith.sitofp %pid : i32 to f32
  %t0 = arith.mulf %mef, %thousand : f32
  %t1 = arith.addf %salt, %t0 : f32
  %val = arith.addf %t1, %pidf : f32
  %mybuf = llvm.getelementptr %buf[%pid64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  %remote = distributed.symm_at %mybuf, %next : !llvm.ptr<1>
  llvm.store %val, %remote : f32, !llvm.ptr<1>
  // my slots: 2 x 16 i32 (2 x 64 bytes) per program
  %slotIdx = arith.muli %pid64, %c32 : i64
  %slot = llvm.getelementptr %sig[%slotIdx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
  %count = llvm.getelementptr %slot[%c16] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
  %round64 = arith.extsi %round : i32 to i64
  distributed.notify %slot, %round64, %next sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  distributed.notify %count, %one, %next sig_op = add comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  %t = distributed.wait %slot, %c2, %round scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %local = distributed.consume_token %mybuf, %t : !llvm.ptr<1>, i32
  %x = llvm.load %local : !llvm.ptr<1> -> f32
  %o = llvm.getelementptr %out[%pid64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  llvm.store %x, %o : f32, !llvm.ptr<1>
  return
}
