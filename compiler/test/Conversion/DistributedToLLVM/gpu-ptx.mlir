// A GPU kernel with the distributed ops, through the gpu pipeline, mlir-translate and llc to
// sm_90 PTX (not linked): every op is a call of the device ABI, the notify and the wait the
// program-collective twins tdistx_notify_int32_i64 / tdistx_wait_int32_i64, which the NVIDIA
// bitcode resolves (compiler/test/e2e checks the linked PTX). No poll, barrier or release of the
// lowering's own.
// REQUIRES: mlir-translate, llc
// RUN: tdist-opt %s --tdist-pipeline=gpu | mlir-translate --mlir-to-llvmir \
// RUN:   | %llc -march=nvptx64 -mcpu=sm_90 | FileCheck %s

// CHECK-DAG: .extern .func (.param .b32 func_retval0) tdist_my_pe
// CHECK-DAG: .extern .func (.param .b32 func_retval0) tdist_n_pes
// CHECK-DAG: .extern .func (.param .b64 func_retval0) tdist_ptr
// CHECK-DAG: .extern .func (.param .b32 func_retval0) tdistx_notify_int32_i64
// CHECK-DAG: .extern .func (.param .b32 func_retval0) tdistx_wait_int32_i64
// CHECK-LABEL: .entry ring_kernel(
// CHECK-NOT: bar.sync
// CHECK-NOT: .release.
// CHECK-NOT: .acquire.
// CHECK-NOT: trap;
// CHECK: call.uni (retval0), tdist_my_pe,
// CHECK: call.uni (retval0), tdist_n_pes,
// CHECK: call.uni (retval0), tdist_ptr,
// CHECK: st.global.b32
// The slot as a generic address (i64), the value 1, the PE, SET = 1.
// CHECK: cvta.global.u64 %rd[[SLOT:[0-9]+]], %rd{{[0-9]+}};
// CHECK: st.param.b64 [param0], %rd[[SLOT]];
// CHECK: call.uni (retval0), tdistx_notify_int32_i64, (param0, param1, param2, param3);
// The wait: the same slot, the bound -1 (the runtime's TDIST_WAIT_TIMEOUT_MS).
// CHECK: st.param.b64 [param0], %rd[[SLOT]];
// CHECK: st.param.b64 [param3], -1;
// CHECK: call.uni (retval0), tdistx_wait_int32_i64, (param0, param1, param2, param3);
// The load after the wait stays after it.
// CHECK: ld.global.b32
// CHECK-NOT: bar.sync
// CHECK-NOT: .release.
// CHECK-NOT: .acquire.
// CHECK-NOT: trap;
// CHECK: ret;
func.func @ring_kernel(%buf: !llvm.ptr<1>, %sig: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {tdist.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1 : i64
  %me = distributed.get_rank %c0
  %np = distributed.get_num_ranks %c0
  %next0 = arith.addi %me, %c1 : i32
  %next = arith.remsi %next0, %np : i32
  // Write my rank into the next PE's buffer, then signal it.
  %remote = distributed.symm_at %buf, %next : !llvm.ptr<1>
  %mef = arith.sitofp %me : i32 to f32
  llvm.store %mef, %remote : f32, !llvm.ptr<1>
  distributed.notify %sig, %one, %next sig_op = set comm_scope = intra_node {elem_type = i32} : !llvm.ptr<1>
  // Wait for the previous PE's signal, then read what it wrote.
  %t = distributed.wait %sig, %c1, %c1 scope = sys semantic = acquire : !llvm.ptr<1>, i32, i32
  %local = distributed.consume_token %buf, %t : !llvm.ptr<1>, i32
  %x = llvm.load %local : !llvm.ptr<1> -> f32
  llvm.store %x, %out : f32, !llvm.ptr<1>
  return
}
