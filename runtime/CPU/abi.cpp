// The device ABI (include/tdist/abi.h) for CPU PEs: RMA, signals, waits, fence / quiet, barriers.
//
// Ordering: signals are std::atomic_ref release stores / fetch_adds on the peer's mapping of the
// slot; waits are acquire loads. Data moved with tdisti_cpu_copy (tdist/CPU/copy.h, memcpy but
// where glibc's is slow) before a release is visible to a PE that acquires the signal (C++
// happens-before through the shared mapping).
#include <atomic>
#include <cstring>
#include <string>

#include "CPU/backend.hpp"
#include "core/error.hpp"
#include "CPU/ucx_engine.hpp"
#include "core/translate.hpp"
#include "tdist/CPU/copy.h"
#include "tdist/abi.h"

namespace tdist::cpu {

void bad_call(int pe, const void *addr, const std::string &msg) {
  const tdist_device_state_t *s = state();
  if (s && t_launch) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(s->heap_base);
    record_fault(TDIST_ERR_INVALID_PARAM, pe, a >= b && a < b + s->heap_size ? a - b : 0, 0, a, -1, msg);
  }
  set_last_error(TDIST_ERR_INVALID_PARAM, msg);
}

}  // namespace tdist::cpu

using namespace tdist::cpu;

namespace {

// No state: before tdist_init or after tdist_finalize, when the heap is not mapped (touching a
// heap address then would fault the process). Sets NOT_INITED naming `api`.
bool require_state(const char *api, const void *addr) {
  if (state()) return true;
  tdist::set_last_error(TDIST_ERR_NOT_INITED,
                        tdist::strfmt("%s(%p): called before tdist_init or after tdist_finalize", api, addr));
  return false;
}

// A wait called from host code (outside a launch) that ended without its condition: the caller
// learns why from the status (tdist_last_error) and the message, and the fault is taken, as a
// launch takes its own: a timeout is cleared, so the next host wait waits again; a lost peer stays
// (every later wait returns at once with it).
void report_host_wait(const char *api) {
  if (t_launch) return;  // inside a launch: the launch reports the sticky fault
  std::string what;
  if (int code = tdist::take_fault(&what))
    tdist::set_last_error(code, tdist::strfmt("%s: %s", api, what.c_str()));
}

// Waits until *addr <cmp> value; returns the value that satisfied it (or the last one seen).
template <class T>
T wait_value(T *addr, int cmp, T value, const char *api) {
  if (!require_state(api, addr)) return T{};
  // A bad wait must not hang (a wrong comparison never becomes true) nor fault the process.
  if (!addr || reinterpret_cast<uintptr_t>(addr) % sizeof(T) != 0) {
    bad_call(
        tdist_my_pe(), addr,
        tdist::strfmt("wait on %p: not a %zu-byte aligned address", static_cast<void *>(addr), sizeof(T)));
    return T{};
  }
  if (cmp < TDIST_CMP_EQ || cmp > TDIST_CMP_LE) {
    bad_call(tdist_my_pe(), addr,
             tdist::strfmt("wait comparison %d: must be EQ=0, NE=1, GT=2, GE=3, LT=4 or LE=5", cmp));
    return T{};
  }
  std::atomic_ref<T> a(*addr);
  T v{};
  if (!bounded_wait([&] { return compare<T>(v = a.load(std::memory_order_acquire), cmp, value); }, addr,
                    uint64_t(value), cmp, &seen_as_u64<T>))
    report_host_wait(api);
  return v;
}

// A signal word: 8-byte aligned (atomics need it) and a known op.
bool signal_ok(const void *sig, int sig_op, int pe, size_t align = 8) {
  if (reinterpret_cast<uintptr_t>(sig) % align != 0) {
    bad_call(pe, sig, tdist::strfmt("signal address %p is not %zu-byte aligned", sig, align));
    return false;
  }
  if (sig_op != TDIST_SIGNAL_SET && sig_op != TDIST_SIGNAL_ADD) {
    bad_call(pe, sig,
             tdist::strfmt("signal op %d: must be TDIST_SIGNAL_SET=1 or TDIST_SIGNAL_ADD=2", sig_op));
    return false;
  }
  return true;
}

// The host translation (core/translate.hpp) with the device ABI's error rule: a bad address or PE
// records INVALID_PARAM inside a launch and sets the last error; returns nullptr then. `n` bytes
// from `addr` must lie inside the symmetric heap (a put past its end would hit whatever is mapped
// next).
void *translate(const void *addr, int pe, size_t n = 1) {
  const tdist_device_state_t *s = state();
  if (!s) {
    tdist::set_last_error(TDIST_ERR_NOT_INITED, "device ABI used before tdist_init");
    return nullptr;
  }
  const tdist::PeerAddr r = tdist::peer_addr(*s, addr, pe, n);
  if (r.error == tdist::AddrError::kNone) return r.ptr;
  const std::string m = tdist::peer_addr_message(*s, r, addr, pe, n);
  const uint64_t a = reinterpret_cast<uintptr_t>(addr);
  if (r.error == tdist::AddrError::kPastEnd) {
    bad_call(pe, addr, m);
    return nullptr;
  }
  if (t_launch) {
    if (r.error == tdist::AddrError::kPeRange)
      record_fault(TDIST_ERR_INVALID_PARAM, pe, r.offset, 0, 0, -1, m);
    else
      record_fault(TDIST_ERR_INVALID_PARAM, pe, 0, 0, a, -1, m);
  }
  tdist::set_last_error(TDIST_ERR_INVALID_PARAM, m);
  return nullptr;
}

// Where an access of `n` bytes at symmetric `addr` on PE `pe` goes: `ptr`, PE pe's copy mapped
// here (load/store), or `remote` with the heap offset (the ROCE engine, runtime/CPU/ucx_engine.hpp),
// or neither (the error was reported as translate() reports it).
struct Where {
  void *ptr = nullptr;
  bool remote = false;
  uint64_t off = 0;
};

Where where(const void *addr, int pe, size_t n = 1) {
  const tdist_device_state_t *s = state();
  if (s && g_ucx && g_ucx->remote(pe)) {
    const tdist::PeerAddr r = tdist::peer_addr(*s, addr, pe, n);
    if (r.error == tdist::AddrError::kNone) return {nullptr, true, r.offset};
  }
  void *p = translate(addr, pe, n);
  if (!p && s && tdist::peer_addr(*s, addr, pe, n).error == tdist::AddrError::kNone)
    bad_call(pe, addr, tdist::strfmt("PE %d's heap is not reachable from PE %d", pe, s->my_pe));
  return {p};
}

// A signal word of PE pe updated through the ROCE engine: add, or set. A release, as a local
// notify is: the engine's fence first, so that a peer that sees the signal sees this PE's earlier
// puts to it.
void remote_signal(int pe, uint64_t off, uint64_t v, int op) {
  g_ucx->fence();
  if (op == TDIST_SIGNAL_ADD)
    g_ucx->atomic_add(pe, off, v);
  else
    g_ucx->atomic_set(pe, off, v);
}

// A notify of a signal slot of width T on PE pe through the ROCE engine. 64-bit slots are one
// engine atomic; narrower ones are refused by name (the engine's atomics are 64-bit).
template <class T>
void remote_notify(int pe, uint64_t off, T value, int op) {
  if constexpr (sizeof(T) == sizeof(uint64_t)) {
    uint64_t v;
    std::memcpy(&v, &value, sizeof v);
    remote_signal(pe, off, v, op);
  } else {
    record_fault(
        TDIST_ERR_NOT_SUPPORTED, pe, off, 0, 0, -1,
        tdist::strfmt("a %zu-byte signal slot of PE %d is reached through the ROCE engine, whose atomics "
                      "are 64-bit: use 64-bit signals across hosts",
                      sizeof(T), pe));
  }
}

void copy_checked(void *dst, const void *src, size_t n, bool nbi, int wake = -1) {
  if (!dst || !src || n == 0) return;  // a failed translation was reported by translate()
  if (use_sdma()) {
    copy_engine_submit([=] { tdisti_cpu_copy(dst, src, n); });
    if (!nbi) copy_engine_drain();
    return;
  }
  tdisti_cpu_copy(dst, src, n);  // MTE and UDMA: the calling core moves the data
  if (wake >= 0) wake_pe(wake);
}

void signal_update(uint64_t *remote, uint64_t v, int op, int pe) {
  std::atomic_ref<uint64_t> a(*remote);
  if (op == TDIST_SIGNAL_ADD)
    a.fetch_add(v, std::memory_order_release);
  else
    a.store(v, std::memory_order_release);
  wake_pe(pe);
}

// The local side of a copy must exist when there is something to copy.
bool local_ok(const void *p, size_t n, int pe, const char *what) {
  if (n && !p) bad_call(pe, p, tdist::strfmt("copy of %zu bytes %s NULL", n, what));
  return !n || p;
}

}  // namespace

namespace tdist::cpu {

uint64_t wait_u64(const uint64_t *addr, int cmp, uint64_t value, bool barrier_tolerance) {
  uint64_t *p = const_cast<uint64_t *>(addr);
  std::atomic_ref<uint64_t> a(*p);
  bounded_wait(
      [&] {
        uint64_t v = a.load(std::memory_order_acquire);
        return compare<uint64_t>(v, cmp, value) || (barrier_tolerance && v == value + 1);
      },
      p, value, cmp, &seen_as_u64<uint64_t>);
  return a.load(std::memory_order_acquire);
}

// Centralised pull barrier (seed 6.4): write my epoch, read every peer's; a peer that already
// entered the next barrier shows epoch + 1, which also counts as arrived.
void pull_barrier(uint64_t slot_off) {
  const tdist_device_state_t *s = state();
  if (!s) return;
  auto *mine = reinterpret_cast<uint64_t *>(static_cast<char *>(s->heap_base) + slot_off);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t epoch = std::atomic_ref<uint64_t>(*mine).load(std::memory_order_relaxed) + 1;
  std::atomic_ref<uint64_t>(*mine).store(epoch, std::memory_order_release);
  wake_pe(s->my_pe);
  // PEs behind the ROCE engine are told, not read: one posted atomic add to each one's arrivals
  // counter (reading a remote epoch costs a round trip through that PE's progress thread per look)
  const uint64_t arrivals_off =
      slot_off == TDIST_SYNC_HOST_BARRIER_OFF ? TDIST_SYNC_HOST_ARRIVALS_OFF : TDIST_SYNC_DEVICE_ARRIVALS_OFF;
  uint64_t n_remote = 0;
  if (g_ucx) {
    g_ucx->fence();  // this PE's earlier operations land before its arrival does
    for (int k = 1; k < s->n_pes; ++k) {
      int pe = (s->my_pe + k) % s->n_pes;
      if (!g_ucx->remote(pe)) continue;
      ++n_remote;
      if (!g_ucx->atomic_add(pe, arrivals_off, 1)) return;  // the fault is recorded
    }
  }
  for (int k = 1; k < s->n_pes; ++k) {
    int pe = (s->my_pe + k) % s->n_pes;  // staggered start spreads the reads
    if (g_ucx && g_ucx->remote(pe)) continue;
    auto *theirs = reinterpret_cast<uint64_t *>(static_cast<char *>(s->p2p_heap_base[pe]) + slot_off);
    wait_u64(theirs, TDIST_CMP_EQ, epoch, true);
    if (fault_code(*s)) return;
  }
  if (n_remote) {
    // every remote PE adds once per barrier and none starts barrier epoch + 1 before all arrived
    // at this one: epoch * n_remote adds have come once they all arrived (more: some went on)
    auto *arrived = reinterpret_cast<uint64_t *>(static_cast<char *>(s->heap_base) + arrivals_off);
    wait_u64(arrived, TDIST_CMP_GE, epoch * n_remote, false);
  }
}

}  // namespace tdist::cpu

extern "C" {

int tdist_my_pe(void) { return state() ? state()->my_pe : -1; }
int tdist_n_pes(void) { return state() ? state()->n_pes : -1; }

// On CPU ranks the device ABI's translation; from host code of another backend (no CPU state) the
// same translation of the runtime's host state (Python's tdist.ptr on the CUDA backend).
void *tdist_ptr(const void *addr, int pe) {
  return state() ? translate(addr, pe) : tdist::host_ptr(addr, pe);
}

#define TDIST_DEFINE_PG(name, T)                   \
  void tdist_##name##_p(T *dst, T value, int pe) { \
    Where w = where(dst, pe, sizeof(T));           \
    if (w.remote) {                                \
      g_ucx->put(pe, w.off, &value, sizeof(T));    \
    } else if (T *r = static_cast<T *>(w.ptr)) {   \
      *r = value;                                  \
      wake_pe(pe);                                 \
    }                                              \
  }                                                \
  T tdist_##name##_g(const T *src, int pe) {       \
    Where w = where(src, pe, sizeof(T));           \
    T v{};                                         \
    if (w.remote)                                  \
      g_ucx->get(pe, w.off, &v, sizeof(T));        \
    else if (w.ptr)                                \
      v = *static_cast<const T *>(w.ptr);          \
    return v;                                      \
  }
TDIST_FOR_EACH_RMA_TYPE(TDIST_DEFINE_PG)
#undef TDIST_DEFINE_PG

// Through the ROCE engine putmem_nbi is posted (the source must stay as it is until the next quiet,
// as SHMEM's nbi forms say); getmem_nbi completes before it returns (allowed: the next quiet is the
// latest it may complete).
void tdist_putmem(void *dst, const void *src, size_t n, int pe) {
  if (!local_ok(src, n, pe, "from")) return;
  Where w = where(dst, pe, n);
  if (w.remote)
    g_ucx->put(pe, w.off, src, n);
  else
    copy_checked(w.ptr, src, n, false, pe);
}
void tdist_getmem(void *dst, const void *src, size_t n, int pe) {
  if (!local_ok(dst, n, pe, "into")) return;
  Where w = where(src, pe, n);
  if (w.remote)
    g_ucx->get(pe, w.off, dst, n);
  else
    copy_checked(dst, w.ptr, n, false);
}
void tdist_putmem_nbi(void *dst, const void *src, size_t n, int pe) {
  if (!local_ok(src, n, pe, "from")) return;
  Where w = where(dst, pe, n);
  if (w.remote)
    g_ucx->put_nbi(pe, w.off, src, n);
  else
    copy_checked(w.ptr, src, n, true, pe);
}
void tdist_getmem_nbi(void *dst, const void *src, size_t n, int pe) {
  if (!local_ok(dst, n, pe, "into")) return;
  Where w = where(src, pe, n);
  if (w.remote)
    g_ucx->get(pe, w.off, dst, n);
  else
    copy_checked(dst, w.ptr, n, true);
}

// Data, then the engine's fence, then the signal: a peer that sees the signal sees the data.
bool remote_putmem_signal(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t signal, int sig_op,
                          int pe) {
  if (!g_ucx || !g_ucx->remote(pe)) return false;
  if (!local_ok(src, n, pe, "from")) return true;
  Where d = where(dst, pe, n), g = where(sig, pe, sizeof *sig);
  if (!d.remote || !g.remote) return true;  // reported
  if (n && !g_ucx->put(pe, d.off, src, n)) return true;
  g_ucx->fence();
  remote_signal(pe, g.off, signal, sig_op);
  return true;
}

void tdist_putmem_signal(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t signal, int sig_op,
                         int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;  // checked first: no data without its signal
  if (remote_putmem_signal(dst, src, n, sig, signal, sig_op, pe)) return;
  tdist_putmem(dst, src, n, pe);
  if (auto *r = static_cast<uint64_t *>(translate(sig, pe, sizeof *sig)))
    signal_update(r, signal, sig_op, pe);
}

void tdist_putmem_signal_nbi(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t signal, int sig_op,
                             int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;
  if (remote_putmem_signal(dst, src, n, sig, signal, sig_op, pe)) return;
  void *d = translate(dst, pe, n);
  auto *r = static_cast<uint64_t *>(translate(sig, pe, sizeof *sig));
  if (!d || !r) return;
  if (!local_ok(src, n, pe, "from")) return;
  if (use_sdma()) {
    // The signal is written by the copy thread after the data, preserving put-then-signal.
    copy_engine_submit([=] {
      tdisti_cpu_copy(d, src, n);
      signal_update(r, signal, sig_op, pe);
    });
    return;
  }
  tdisti_cpu_copy(d, src, n);
  signal_update(r, signal, sig_op, pe);
}

void tdist_signal_op(uint64_t *sig, uint64_t signal, int sig_op, int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;
  Where w = where(sig, pe, sizeof *sig);
  if (w.remote)
    remote_signal(pe, w.off, signal, sig_op);
  else if (auto *r = static_cast<uint64_t *>(w.ptr))
    signal_update(r, signal, sig_op, pe);
}

uint64_t tdist_signal_fetch(const uint64_t *sig) {
  if (!require_state("tdist_signal_fetch", sig)) return 0;
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t *>(sig)).load(std::memory_order_acquire);
}

uint64_t tdist_signal_wait_until(uint64_t *sig, int cmp, uint64_t v) {
  return wait_value<uint64_t>(sig, cmp, v, "tdist_signal_wait_until");
}

#define TDIST_DEFINE_WAIT_UNTIL(name, T)                       \
  void tdist_##name##_wait_until(T *ivar, int cmp, T v) {      \
    wait_value<T>(ivar, cmp, v, "tdist_" #name "_wait_until"); \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DEFINE_WAIT_UNTIL)
#undef TDIST_DEFINE_WAIT_UNTIL

#define TDIST_DEFINE_SLOT_OPS(name, T)                                                                  \
  int32_t tdistx_wait_##name(T *slots, int32_t n, T value) {                                            \
    constexpr int32_t stride = TDIST_SIGNAL_SLOT_BYTES / sizeof(T);                                     \
    for (int32_t i = 0; i < n; ++i)                                                                     \
      if (wait_value<T>(slots + i * stride, TDIST_CMP_EQ, value, "tdistx_wait_" #name) != value) break; \
    return 0;                                                                                           \
  }                                                                                                     \
  void tdistx_notify_##name(T *slot, T value, int32_t pe, int32_t sig_op) {                             \
    if (!signal_ok(slot, sig_op, pe, sizeof(T))) return;                                                \
    Where w = where(slot, pe, sizeof(T));                                                               \
    if (w.remote) {                                                                                     \
      remote_notify<T>(pe, w.off, value, sig_op);                                                       \
      return;                                                                                           \
    }                                                                                                   \
    T *r = static_cast<T *>(w.ptr);                                                                     \
    if (!r) return;                                                                                     \
    std::atomic_ref<T> a(*r);                                                                           \
    if (sig_op == TDIST_SIGNAL_ADD)                                                                     \
      a.fetch_add(value, std::memory_order_release);                                                    \
    else                                                                                                \
      a.store(value, std::memory_order_release);                                                        \
    wake_pe(pe);                                                                                        \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DEFINE_SLOT_OPS)
#undef TDIST_DEFINE_SLOT_OPS

void *tdistx_consume_token_ptr(void *value, int32_t) { return value; }
int64_t tdistx_consume_token_int64(int64_t value, int32_t) { return value; }

void tdist_fence(void) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_ucx) g_ucx->fence();
}

void tdist_quiet(void) {
  if (use_sdma()) copy_engine_drain();
  if (g_ucx) g_ucx->quiet();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void tdist_barrier_all(void) {
  const tdist_device_state_t *s = state();
  if (!s) return;
  LaunchCtx *L = t_launch;
  if (!L || L->grid == 1) {
    tdist_quiet();
    pull_barrier(TDIST_SYNC_DEVICE_BARRIER_OFF);
    if (tdist::fault_code(*s)) report_host_wait("tdist_barrier_all");
    return;
  }
  // Grid barrier: the last program to arrive runs the cross-PE barrier for all of them.
  tdist_quiet();
  uint64_t gen = L->generation.load(std::memory_order_acquire);
  if (L->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(L->grid)) {
    L->arrived.store(0, std::memory_order_relaxed);
    pull_barrier(TDIST_SYNC_DEVICE_BARRIER_OFF);
    L->generation.store(gen + 1, std::memory_order_release);
    wake_words(&L->sleepers, &L->futex);
  } else {
    bounded_wait([&] { return L->generation.load(std::memory_order_acquire) != gen; }, &L->generation,
                 gen + 1, TDIST_CMP_NE, &seen_as_u64<uint64_t>, &L->sleepers, &L->futex);
  }
}

}  // extern "C"
