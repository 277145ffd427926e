// The CPU backend's internals, shared by its files (runtime/CPU): the state its device ABI reads,
// the sleeping bounded wait, the launch context, the copy engine. Nothing outside runtime/CPU
// includes this; the runtime core reaches the backend only through HeapTransport
// (core/transport.hpp), implemented in cpu_transport.cpp.
//
//   cpu_transport.cpp  the heap (memfd per PE) and the core's hooks
//   abi.cpp            the device ABI (include/tdist/abi.h): RMA, signals, waits, barriers
//   copy_engine.cpp    SDMA: the copy thread
//   launch.cpp         tdist_cpu_launch / _grid, the program pool, block events (tdist/CPU/launch.h)
//   aclshmem.cpp       the aclshmem link-time symbols of compiled kernels, on the device ABI
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>

#include "core/context.hpp"
#include "core/fault.hpp"
#include "tdist/abi.h"
#include "tdist/device_state.h"

namespace tdist::cpu {

// The device state the device ABI reads: the runtime's host copy, set by the transport's publish()
// and cleared by its unmap() (nullptr before init and after finalize). Read-only here: the fault
// record is written through core/fault.hpp.
extern const tdist_device_state_t *g_state;
inline const tdist_device_state_t *state() { return g_state; }

inline bool faulted() {
  const tdist_device_state_t *s = state();
  return !s || fault_code(*s) != 0;
}

inline void record_fault(int32_t code, int32_t pe, uint64_t offset, uint64_t expected, uint64_t seen,
                         int32_t cmp, const std::string &note = {}) {
  tdist::record_fault(Fault{code, pe, offset, cmp, expected, seen}, note);
}

// Reports a bad device-ABI call: a sticky INVALID_PARAM fault inside a launch, and this thread's
// last error either way. The call then does nothing (no write, no wait).
void bad_call(int pe, const void *addr, const std::string &msg);

// ---- launch context of the calling program (thread); launch.cpp

constexpr int32_t kBlockEvents = 16;  // Ascend's intra-kernel block event ids 0..15

struct LaunchCtx {
  int32_t grid = 1;
  // grid barrier (tdist_barrier_all inside a launch)
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint64_t> generation{0};
  // Block events (tdist_cpu_sync_block_*), fresh for every launch: `sets` counts the releases of
  // an event, `takes` hands each waiter a ticket (the k-th wait consumes the k-th set); each event
  // also has its own reusable all-program barrier.
  struct Event {
    std::atomic<uint32_t> sets{0}, takes{0};
    std::atomic<uint32_t> arrived{0};
    std::atomic<uint64_t> generation{0};
  } events[kBlockEvents];
  // futex pair for programs asleep in the grid barrier or on a block event
  uint32_t sleepers = 0, futex = 0;
};

extern thread_local constinit LaunchCtx *t_launch;  // nullptr outside a launch
extern thread_local constinit int32_t t_program_id;

// ---- sleeping waits. A waiter that stops spinning announces itself in the sleepers count of the
// PE whose memory it watches, then sleeps on that PE's futex word; every writer of PE memory
// (signals, notify, p, put) bumps the word and wakes when the count is nonzero. Both sides are
// seq_cst (store value / load count vs. add count / load value), so no wake-up is lost; the sleep
// is also bounded (1 ms) as a second line of defence.
inline long futex(uint32_t *addr, int op, uint32_t val, const timespec *ts) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

inline void wake_words(uint32_t *sleepers, uint32_t *word) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(*sleepers).load(std::memory_order_seq_cst) == 0) return;
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_seq_cst);
  futex(word, FUTEX_WAKE, INT32_MAX, nullptr);
}

inline uint32_t *pe_word(const tdist_device_state_t &s, int pe, uint32_t off) {
  return reinterpret_cast<uint32_t *>(static_cast<char *>(s.p2p_heap_base[pe]) + off);
}

// Wake the waiters sleeping on PE `pe`'s memory (after a write to it).
inline void wake_pe(int pe) {
  if (const tdist_device_state_t *s = state())
    wake_words(pe_word(*s, pe, TDIST_SYNC_SLEEPERS_OFF), pe_word(*s, pe, TDIST_SYNC_FUTEX_OFF));
}

template <class T>
bool compare(T v, int cmp, T ref) {
  switch (cmp) {
    case TDIST_CMP_EQ: return v == ref;
    case TDIST_CMP_NE: return v != ref;
    case TDIST_CMP_GT: return v > ref;
    case TDIST_CMP_GE: return v >= ref;
    case TDIST_CMP_LT: return v < ref;
    case TDIST_CMP_LE: return v <= ref;
  }
  return false;
}

// Which PE's heap holds `addr`, and at what offset (for diagnostics). pe = -1 if none.
inline void locate(const void *addr, int *pe, uint64_t *off) {
  *pe = -1;
  *off = 0;
  const tdist_device_state_t *s = state();
  if (!s) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  for (int p = 0; p < s->n_pes; ++p) {
    uintptr_t b = reinterpret_cast<uintptr_t>(s->p2p_heap_base[p]);
    if (b && a >= b && a < b + s->heap_size) {
      *pe = p;
      *off = a - b;
      return;
    }
  }
}

template <class T>
uint64_t seen_as_u64(const void *p) {
  return uint64_t(
      std::atomic_ref<T>(*const_cast<T *>(static_cast<const T *>(p))).load(std::memory_order_relaxed));
}

// Generic bounded wait: spin (cheapest while every PE has a core), then poll with sched_yield for
// kYieldWindowNs (with more PEs than cores the PE being waited for is often runnable but not
// running: yielding hands it the core at once, where a futex sleep would add a wake-up of tens of
// microseconds), then sleep on the futex of the PE whose memory holds `addr` (or on
// `sleepers`/`word` when given, for process-local waits). Returns true when `ready()` held, false
// on timeout or an earlier fault (sticky). `note`, when given, says in words what was awaited
// (process-local waits have no heap offset to name).
constexpr uint64_t kYieldWindowNs = 200000;

template <class Ready>
bool bounded_wait(Ready &&ready, const void *addr, uint64_t expected, int cmp, uint64_t (*seen)(const void *),
                  uint32_t *sleepers = nullptr, uint32_t *word = nullptr,
                  const std::function<std::string()> &note = {}) {
  for (int i = 0; i < 256; ++i)  // the common, short wait: no clock, no syscalls
    if (ready()) return true;
  const tdist_device_state_t *s = state();
  if (faulted()) return false;
  const uint64_t start = now_ns();
  const uint64_t spin_until = start + s->spin_before_backoff_ns;
  const uint64_t deadline = s->wait_timeout_ns ? start + s->wait_timeout_ns : UINT64_MAX;
  if (!sleepers) {
    int pe;
    uint64_t off;
    locate(addr, &pe, &off);
    if (pe >= 0) {
      sleepers = pe_word(*s, pe, TDIST_SYNC_SLEEPERS_OFF);
      word = pe_word(*s, pe, TDIST_SYNC_FUTEX_OFF);
    }
  }
  for (uint64_t i = 1;; ++i) {
    if (ready()) return true;
    if (i & 63) continue;  // look at the clock every 64 polls
    uint64_t t = now_ns();
    if (fault_code(*s)) return false;  // another program of this PE faulted / a peer was lost
    if (t > deadline) {
      if (ready()) return true;
      int pe;
      uint64_t off;
      locate(addr, &pe, &off);
      record_fault(TDIST_ERR_TIMEOUT, pe, off, expected, seen(addr), cmp, note ? note() : std::string());
      return false;
    }
    if (t < spin_until) continue;
    if (t < spin_until + kYieldWindowNs) {
      sched_yield();
      continue;
    }
    uint64_t left = std::min<uint64_t>(deadline - t, 1000000);
    timespec ts{0, long(left)};
    if (sleepers) {
      std::atomic_ref<uint32_t>(*sleepers).fetch_add(1, std::memory_order_seq_cst);
      uint32_t w = std::atomic_ref<uint32_t>(*word).load(std::memory_order_seq_cst);
      if (!ready()) futex(word, FUTEX_WAIT, w, &ts);
      std::atomic_ref<uint32_t>(*sleepers).fetch_sub(1, std::memory_order_seq_cst);
    } else {
      nanosleep(&ts, nullptr);
    }
  }
}

// ---- the copy engine (SDMA); copy_engine.cpp

// SDMA selected alone: bulk copies go to the copy thread.
inline bool use_sdma() {
  const tdist_device_state_t *s = state();
  return s && (s->engine_mask & TDIST_ENGINE_SDMA) &&
         !(s->engine_mask & (TDIST_ENGINE_MTE | TDIST_ENGINE_UDMA));
}
void copy_engine_submit(std::function<void()> job);
// Returns when every job submitted so far has run.
void copy_engine_drain();

// ---- barriers; abi.cpp

// Waits, with the device-side timeout/fault rules, until the uint64 at `addr` satisfies `cmp`
// against `value` (or equals value + 1 with `barrier_tolerance`). Returns the value seen.
uint64_t wait_u64(const uint64_t *addr, int cmp, uint64_t value, bool barrier_tolerance);
// Centralised pull barrier over all PEs using the epoch slot at heap offset `slot_off`.
void pull_barrier(uint64_t slot_off);

}  // namespace tdist::cpu
