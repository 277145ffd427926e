// The aclshmem link-time symbols (docs/COMPILE.md section 3) for CPU ranks: `_mlir_ciface_<symbol>`
// as called by a triton-ascend kernel lowered to LLVM by MLIR. Every one is a thin conversion onto
// the device ABI (include/tdist/abi.h, runtime/CPU/abi.cpp), so waits stay bounded, faults stay
// sticky, lost peers are noticed and bad addresses get the ABI's own errors.
#include "aclshmem.h"

#include <cstdio>
#include <string>

#include "CPU/backend.hpp"
#include "CPU/ucx_engine.hpp"
#include "core/error.hpp"
#include "tdist/abi.h"

namespace {

template <class T = void>
T *addr(int64_t a) {
  return reinterpret_cast<T *>(static_cast<intptr_t>(a));
}

int64_t to_i64(const void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

// dl.symm_at: PE pe's copy for the kernel's own loads and stores. A PE whose heap is not mapped here
// (another host, reached through the ROCE engine only) has none: that is reported by name, a fault
// and a line on stderr, before the kernel uses the NULL it gets.
void *symm_at(void *p, int32_t pe) {
  void *r = tdist_ptr(p, pe);
  if (!r && tdist::cpu::g_ucx && tdist::cpu::g_ucx->remote(pe)) {
    const std::string m = tdist::strfmt(
        "dl.symm_at / aclshmem_ptr of PE %d: that PE is on another host, reached through the ROCE engine "
        "only, so its heap cannot be loaded from or stored to; this kernel needs every PE on one host (or "
        "putmem / getmem / signals for remote PEs)",
        int(pe));
    std::fprintf(stderr, "tdist[pe %d]: %s\n", tdist_my_pe(), m.c_str());
    tdist::cpu::bad_call(pe, p, m);
  }
  return r;
}

// A byte count from the compiled kernel (i64): negative is a bad call, not a huge copy.
bool size_ok(const char *what, int64_t dst, int64_t nbytes, int32_t pe) {
  if (nbytes >= 0) return true;
  tdist::cpu::bad_call(pe, addr(dst), tdist::strfmt("%s: negative size %lld", what, (long long)nbytes));
  return false;
}

}  // namespace

extern "C" {

int32_t _mlir_ciface_aclshmem_my_pe(void) { return tdist_my_pe(); }
int32_t _mlir_ciface_aclshmem_n_pes(void) { return tdist_n_pes(); }

#define TDIST_ASCEND_PTR_TYPE(tname)                                                        \
  int64_t _mlir_ciface_aclshmem_ptr_##tname(int64_t ptr, int32_t pe) {                      \
    return to_i64(symm_at(addr(ptr), pe));                                                  \
  }                                                                                         \
  int64_t _mlir_ciface_aclshmem_consume_token_##tname##_ptr(int64_t value, int32_t token) { \
    return to_i64(tdistx_consume_token_ptr(addr(value), token));                            \
  }
#define TDIST_ASCEND_WAIT_TYPE(tname)                                                     \
  int32_t _mlir_ciface_aclshmem_wait_##tname(int64_t slots, int32_t n, tname##_t value) { \
    tdistx_wait_##tname(addr<tname##_t>(slots), n, value);                                \
    return 0;                                                                             \
  }
#define TDIST_ASCEND_P_TYPE(tname)                                                       \
  void _mlir_ciface_aclshmem_##tname##_p(int64_t dst, int64_t value, int32_t pe) {       \
    tdistx_notify_##tname(addr<tname##_t>(dst), tname##_t(value), pe, TDIST_SIGNAL_SET); \
  }
#include "../../device/Ascend/symbols.def"

void _mlir_ciface_aclshmemx_signal_op(int64_t sig_addr, int64_t signal, int32_t sig_op, int32_t pe) {
  tdistx_notify_int32(addr<int32_t>(sig_addr), int32_t(signal), pe, sig_op);
}

int64_t _mlir_ciface_aclshmem_signal_wait_until(int64_t sig_addr, int32_t cmp, int64_t value) {
  // The typed ABI wait compares as int64 (Triton's view of the slot); the value returned is read
  // after the predicate held (acquire), as tdist_signal_wait_until's is.
  auto *p = addr<int64_t>(sig_addr);
  tdist_int64_wait_until(p, cmp, value);
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

int32_t _mlir_ciface_aclshmem_consume_token_int32(int32_t value, int32_t) { return value; }
int64_t _mlir_ciface_aclshmem_consume_token_int64(int64_t value, int32_t token) {
  return tdistx_consume_token_int64(value, token);
}
int64_t _mlir_ciface_aclshmem_consume_token_ptr(int64_t value, int32_t token) {
  return to_i64(tdistx_consume_token_ptr(addr(value), token));
}

void _mlir_ciface_aclshmem_putmem(int64_t dst, int64_t src, int64_t nbytes, int32_t pe) {
  if (size_ok("aclshmem_putmem", dst, nbytes, pe)) tdist_putmem(addr(dst), addr(src), size_t(nbytes), pe);
}
void _mlir_ciface_aclshmem_getmem(int64_t dst, int64_t src, int64_t nbytes, int32_t pe) {
  if (size_ok("aclshmem_getmem", src, nbytes, pe)) tdist_getmem(addr(dst), addr(src), size_t(nbytes), pe);
}
void _mlir_ciface_aclshmem_putmem_nbi(int64_t dst, int64_t src, int64_t nbytes, int32_t pe) {
  if (size_ok("aclshmem_putmem_nbi", dst, nbytes, pe))
    tdist_putmem_nbi(addr(dst), addr(src), size_t(nbytes), pe);
}
void _mlir_ciface_aclshmem_getmem_nbi(int64_t dst, int64_t src, int64_t nbytes, int32_t pe) {
  if (size_ok("aclshmem_getmem_nbi", src, nbytes, pe))
    tdist_getmem_nbi(addr(dst), addr(src), size_t(nbytes), pe);
}

void _mlir_ciface_aclshmem_putmem_signal(int64_t dst, int64_t src, int64_t nbytes, int64_t sig_addr,
                                         int64_t signal, int32_t sig_op, int32_t pe) {
  if (size_ok("aclshmem_putmem_signal", dst, nbytes, pe))
    tdist_putmem_signal(addr(dst), addr(src), size_t(nbytes), addr<uint64_t>(sig_addr), uint64_t(signal),
                        sig_op, pe);
}
void _mlir_ciface_aclshmem_putmem_signal_nbi(int64_t dst, int64_t src, int64_t nbytes, int64_t sig_addr,
                                             int64_t signal, int32_t sig_op, int32_t pe) {
  if (size_ok("aclshmem_putmem_signal_nbi", dst, nbytes, pe))
    tdist_putmem_signal_nbi(addr(dst), addr(src), size_t(nbytes), addr<uint64_t>(sig_addr), uint64_t(signal),
                            sig_op, pe);
}

void _mlir_ciface_aclshmem_fence(void) { tdist_fence(); }
void _mlir_ciface_aclshmem_quiet(void) { tdist_quiet(); }
void _mlir_ciface_aclshmem_barrier_all(void) { tdist_barrier_all(); }
// The vector-core form of the barrier: on CPU ranks every program is one core, the same barrier.
void _mlir_ciface_aclshmemx_barrier_all_vec(void) { tdist_barrier_all(); }

}  // extern "C"
