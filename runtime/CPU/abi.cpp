// The device ABI (include/tdist/abi.h) for CPU PEs, and the CPU launch (include/tdist/CPU/launch.h).
//
// Ordering: signals are std::atomic_ref release stores / fetch_adds on the peer's mapping of the
// slot; waits are acquire loads. Data moved with memcpy before a release is visible to a PE that
// acquires the signal (C++ happens-before through the shared mapping).
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/watchdog.hpp"
#include "tdist/CPU/launch.h"
#include "tdist/abi.h"

using tdist::now_ns;

namespace {

tdist_device_state_t *state() { return tdisti_cpu_device_state; }

// Launch context of the calling program (thread).
struct LaunchCtx;
thread_local LaunchCtx *t_launch = nullptr;
thread_local int32_t t_program_id = 0;

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

// ---- sleeping waits. A waiter that stops spinning announces itself in the sleepers count of the
// PE whose memory it watches, then sleeps on that PE's futex word; every writer of PE memory
// (signals, notify, p, put) bumps the word and wakes when the count is nonzero. Both sides are
// seq_cst (store value / load count vs. add count / load value), so no wake-up is lost; the sleep
// is also bounded (1 ms) as a second line of defence.
long futex(uint32_t *addr, int op, uint32_t val, const timespec *ts) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

void wake_words(uint32_t *sleepers, uint32_t *word) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(*sleepers).load(std::memory_order_seq_cst) == 0) return;
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_seq_cst);
  futex(word, FUTEX_WAKE, INT32_MAX, nullptr);
}

uint32_t *pe_word(int pe, uint32_t off) {
  tdist_device_state_t *s = tdisti_cpu_device_state;
  return reinterpret_cast<uint32_t *>(static_cast<char *>(s->p2p_heap_base[pe]) + off);
}

// Wake the waiters sleeping on PE `pe`'s memory (after a write to it).
inline void wake_pe(int pe) {
  if (tdisti_cpu_device_state) wake_words(pe_word(pe, TDIST_SYNC_SLEEPERS_OFF), pe_word(pe, TDIST_SYNC_FUTEX_OFF));
}

std::mutex g_fault_mu;  // serialises writers of the fault record (programs, the watchdog)
// What the first fault of the launch was about, in words, when the numeric record cannot say it
// (a bad call's reason, a block event's wait). Guarded by g_fault_mu; cleared with the fault.
std::string g_fault_note;

// The fault code is read by every waiting program while the watchdog thread may write it.
inline int32_t fault_code_of(tdist_device_state_t *s) {
  return std::atomic_ref<int32_t>(s->fault_code).load(std::memory_order_acquire);
}

// Records the first fault of the launch (sticky) and, in debug mode, aborts with the diagnostic.
void record_fault(int code, int pe, uint64_t offset, uint64_t expected, uint64_t seen, int cmp,
                  const std::string &note = {}) {
  tdist_device_state_t *s = state();
  if (!s) return;
  std::lock_guard<std::mutex> g(g_fault_mu);
  if (fault_code_of(s) == 0) {
    g_fault_note = note;
    s->fault_pe = pe;
    s->fault_offset = offset;
    s->fault_expected = expected;
    s->fault_seen = seen;
    s->fault_cmp = cmp;
    // Published last: a wait that sees the code sees the record (the watchdog thread writes too).
    std::atomic_ref<int32_t>(s->fault_code).store(code, std::memory_order_release);
  }
  if (s->debug) {
    std::fprintf(stderr,
                 "tdist[pe %d]: device fault %s: PE %d heap offset %llu expected %llu (cmp %d) "
                 "seen %llu%s%s\n",
                 s->my_pe, tdist_status_name(code), pe, (unsigned long long)offset,
                 (unsigned long long)expected, cmp, (unsigned long long)seen,
                 note.empty() ? "" : ": ", note.c_str());
    std::abort();
  }
}

bool faulted() {
  tdist_device_state_t *s = state();
  return !s || fault_code_of(s) != 0;
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
void locate(const void *addr, int *pe, uint64_t *off) {
  *pe = -1;
  *off = 0;
  tdist_device_state_t *s = state();
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

// Generic bounded wait: spin (cheapest while every PE has a core), then poll with sched_yield for
// kYieldWindowNs (with more PEs than cores the PE being waited for is often runnable but not
// running: yielding hands it the core at once, where a futex sleep would add a wake-up of tens of
// microseconds), then sleep on the futex of the PE whose memory holds `addr` (or on
// `sleepers`/`word` when given, for process-local waits). Returns true when `ready()` held, false
// on timeout or an earlier fault (sticky). `note`, when given, says in words what was awaited
// (process-local waits have no heap offset to name).
constexpr uint64_t kYieldWindowNs = 200000;

template <class Ready>
bool bounded_wait(Ready &&ready, const void *addr, uint64_t expected, int cmp,
                  uint64_t (*seen)(const void *), uint32_t *sleepers = nullptr,
                  uint32_t *word = nullptr, const std::function<std::string()> &note = {}) {
  for (int i = 0; i < 256; ++i)  // the common, short wait: no clock, no syscalls
    if (ready()) return true;
  tdist_device_state_t *s = state();
  if (faulted()) return false;
  const uint64_t start = now_ns();
  const uint64_t spin_until = start + s->spin_before_backoff_ns;
  const uint64_t deadline = s->wait_timeout_ns ? start + s->wait_timeout_ns : UINT64_MAX;
  if (!sleepers) {
    int pe;
    uint64_t off;
    locate(addr, &pe, &off);
    if (pe >= 0) {
      sleepers = pe_word(pe, TDIST_SYNC_SLEEPERS_OFF);
      word = pe_word(pe, TDIST_SYNC_FUTEX_OFF);
    }
  }
  for (uint64_t i = 1;; ++i) {
    if (ready()) return true;
    if (i & 63) continue;  // look at the clock every 64 polls
    uint64_t t = now_ns();
    if (fault_code_of(s)) return false;  // another program of this PE faulted / a peer was lost
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

template <class T>
uint64_t seen_as_u64(const void *p) {
  return uint64_t(std::atomic_ref<T>(*const_cast<T *>(static_cast<const T *>(p))).load(std::memory_order_relaxed));
}

void bad_call(int pe, const void *addr, const std::string &msg);

// Waits until *addr <cmp> value; returns the value that satisfied it (or the last one seen).
template <class T>
T wait_value(T *addr, int cmp, T value) {
  // A bad wait must not hang (a wrong comparison never becomes true) nor fault the process.
  if (!addr || reinterpret_cast<uintptr_t>(addr) % sizeof(T) != 0) {
    bad_call(tdist_my_pe(), addr, tdist::strfmt("wait on %p: not a %zu-byte aligned address", static_cast<void *>(addr), sizeof(T)));
    return T{};
  }
  if (cmp < TDIST_CMP_EQ || cmp > TDIST_CMP_LE) {
    bad_call(tdist_my_pe(), addr, tdist::strfmt("wait comparison %d: must be EQ=0, NE=1, GT=2, GE=3, LT=4 or LE=5", cmp));
    return T{};
  }
  std::atomic_ref<T> a(*addr);
  T v{};
  bounded_wait([&] { return compare<T>(v = a.load(std::memory_order_acquire), cmp, value); }, addr,
               uint64_t(value), cmp, &seen_as_u64<T>);
  return v;
}

// ---------------------------------------------------------------- SDMA: the copy thread

class CopyEngine {
 public:
  void submit(std::function<void()> job) {
    std::unique_lock<std::mutex> g(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    q_.push_back(std::move(job));
    ++pending_;
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> g(mu_);
    done_cv_.wait(g, [&] { return pending_ == 0; });
  }
  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> g(mu_);
    while (true) {
      cv_.wait(g, [&] { return stop_ || !q_.empty(); });
      if (q_.empty() && stop_) return;
      auto job = std::move(q_.front());
      q_.pop_front();
      g.unlock();
      job();
      g.lock();
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> q_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

CopyEngine &copy_engine() {
  static CopyEngine e;
  return e;
}

bool use_sdma() {
  tdist_device_state_t *s = state();
  return s && (s->engine_mask & TDIST_ENGINE_SDMA) &&
         !(s->engine_mask & (TDIST_ENGINE_MTE | TDIST_ENGINE_UDMA));
}

// Reports a bad device-ABI call: a sticky INVALID_PARAM fault inside a launch, and this thread's
// last error either way. The call then does nothing (no write, no wait).
void bad_call(int pe, const void *addr, const std::string &msg) {
  tdist_device_state_t *s = state();
  if (s && t_launch) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(s->heap_base);
    record_fault(TDIST_ERR_INVALID_PARAM, pe, a >= b && a < b + s->heap_size ? a - b : 0, 0, a, -1, msg);
  }
  tdist::set_last_error(TDIST_ERR_INVALID_PARAM, msg);
}

// A signal word: 8-byte aligned (atomics need it) and a known op.
bool signal_ok(const void *sig, int sig_op, int pe, size_t align = 8) {
  if (reinterpret_cast<uintptr_t>(sig) % align != 0) {
    bad_call(pe, sig, tdist::strfmt("signal address %p is not %zu-byte aligned", sig, align));
    return false;
  }
  if (sig_op != TDIST_SIGNAL_SET && sig_op != TDIST_SIGNAL_ADD) {
    bad_call(pe, sig, tdist::strfmt("signal op %d: must be TDIST_SIGNAL_SET=1 or TDIST_SIGNAL_ADD=2", sig_op));
    return false;
  }
  return true;
}

// Translates with checks; records INVALID_PARAM and returns nullptr on bad input. `n` bytes from
// `addr` must lie inside the symmetric heap (a put past its end would hit whatever is mapped next).
void *translate(const void *addr, int pe, size_t n = 1) {
  tdist_device_state_t *s = state();
  if (!s) {
    tdist::set_last_error(TDIST_ERR_NOT_INITED, "device ABI used before tdist_init");
    return nullptr;
  }
  uintptr_t a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(s->heap_base);
  if (pe < 0 || pe >= s->n_pes) {
    std::string m = tdist::strfmt("tdist_ptr: PE %d out of range [0, %d)", pe, s->n_pes);
    if (t_launch) record_fault(TDIST_ERR_INVALID_PARAM, pe, a >= b ? a - b : 0, 0, 0, -1, m);
    tdist::set_last_error(TDIST_ERR_INVALID_PARAM, m);
    return nullptr;
  }
  if (a < b || a >= b + s->heap_size) {
    std::string m = tdist::strfmt("tdist_ptr: %p is not a symmetric address (heap is [%p, %p))",
                                  addr, s->heap_base, static_cast<void *>(
                                      static_cast<char *>(s->heap_base) + s->heap_size));
    if (t_launch) record_fault(TDIST_ERR_INVALID_PARAM, pe, 0, 0, a, -1, m);
    tdist::set_last_error(TDIST_ERR_INVALID_PARAM, m);
    return nullptr;
  }
  if (n > b + s->heap_size - a) {
    bad_call(pe, addr, tdist::strfmt("%zu bytes at heap offset %llu run past the end of the "
                                     "symmetric heap (%llu bytes)",
                                     n, (unsigned long long)(a - b), (unsigned long long)s->heap_size));
    return nullptr;
  }
  void *base = s->p2p_heap_base[pe];
  return base ? static_cast<char *>(base) + (a - b) : nullptr;
}

void copy_checked(void *dst, const void *src, size_t n, bool nbi, int wake = -1) {
  if (!dst || !src || n == 0) return;  // a failed translation was reported by translate()
  if (use_sdma()) {
    if (nbi) {
      copy_engine().submit([=] { std::memcpy(dst, src, n); });
    } else {
      copy_engine().submit([=] { std::memcpy(dst, src, n); });
      copy_engine().drain();
    }
    return;
  }
  std::memcpy(dst, src, n);  // MTE and UDMA: the calling core moves the data
  if (wake >= 0) wake_pe(wake);
}

void signal_update(uint64_t *remote, uint64_t v, int op, int pe) {
  std::atomic_ref<uint64_t> a(*remote);
  if (op == TDIST_SIGNAL_ADD) a.fetch_add(v, std::memory_order_release);
  else a.store(v, std::memory_order_release);
  wake_pe(pe);
}

// Persistent program threads: a launch wakes grid - 1 parked workers (program 0 runs on the
// caller) instead of creating threads, which costs tens of microseconds per launch on a busy host.
// Workers park on a futex (std::atomic::wait) between launches. One launch at a time per process.
class ProgramPool {
 public:
  template <class Body>
  void run(int32_t grid, Body &body) {
    std::lock_guard<std::mutex> g(launch_mu_);
    while (int32_t(workers_) < grid - 1) {
      // The worker must start from the epoch before this launch's bump, or it would sleep
      // through the launch it was created for.
      std::thread(&ProgramPool::worker, this, int32_t(workers_) + 1,
                  epoch_.load(std::memory_order_acquire))
          .detach();
      ++workers_;
    }
    body_ = [&body](int32_t pid) { body(pid); };
    remaining_.store(grid - 1, std::memory_order_relaxed);
    // The grid travels in the epoch word: a worker outside this launch may wake late, after the
    // next launch began, and must judge membership by the launch it woke for (a separate grid_
    // field was a data race found by TSan: such a worker could run the next launch twice).
    uint64_t next = (((epoch_.load(std::memory_order_relaxed) >> 16) + 1) << 16) | uint64_t(grid);
    epoch_.store(next, std::memory_order_release);
    epoch_.notify_all();
    body(0);
    for (int32_t left; (left = remaining_.load(std::memory_order_acquire)) != 0;)
      remaining_.wait(left, std::memory_order_acquire);
  }

 private:
  void worker(int32_t pid, uint64_t seen) {
    while (true) {
      epoch_.wait(seen, std::memory_order_acquire);
      seen = epoch_.load(std::memory_order_acquire);
      if (pid >= int32_t(seen & 0xFFFF)) continue;  // not part of this launch
      body_(pid);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_all();
    }
  }
  std::mutex launch_mu_;
  size_t workers_ = 0;
  std::function<void(int32_t)> body_;
  std::atomic<uint64_t> epoch_{0};  // (launch count << 16) | grid of that launch
  static_assert(TDIST_CPU_MAX_GRID < (1 << 16), "the grid must fit the epoch word's low 16 bits");
  std::atomic<int32_t> remaining_{0};
};

ProgramPool &program_pool() {
  static ProgramPool *pool = new ProgramPool;  // never destroyed: parked workers outlive main
  return *pool;
}

}  // namespace

namespace tdist {

void report_bad_device_call(int pe, const void *addr, const std::string &msg) { bad_call(pe, addr, msg); }

void record_peer_lost(tdist_device_state_t &s, int lost_pe) {
  std::lock_guard<std::mutex> g(g_fault_mu);
  s.fault_pe = lost_pe;
  s.fault_offset = 0;
  s.fault_expected = 0;
  s.fault_seen = 0;
  s.fault_cmp = -1;
  std::atomic_ref<int32_t>(s.fault_code).store(TDIST_ERR_BOOTSTRAP, std::memory_order_release);
  // Wake the waiters asleep on any PE's memory at once (their sleep is also bounded by 1 ms).
  for (int pe = 0; s.p2p_heap_base && pe < s.n_pes; ++pe)
    if (auto *b = static_cast<char *>(s.p2p_heap_base[pe]))
      wake_words(reinterpret_cast<uint32_t *>(b + TDIST_SYNC_SLEEPERS_OFF),
                 reinterpret_cast<uint32_t *>(b + TDIST_SYNC_FUTEX_OFF));
}

int take_device_fault(tdist_device_state_t &s, std::string *what) {
  std::lock_guard<std::mutex> g(g_fault_mu);
  int code = fault_code_of(&s);
  if (code == 0) return 0;
  if (code == TDIST_ERR_BOOTSTRAP) {  // a lost peer: sticky for good
    std::string m = peer_lost_message();
    *what = strfmt("PE %d: peer PE %d was lost: %s", s.my_pe, s.fault_pe,
                   m.empty() ? "(no message)" : m.c_str());
    return code;
  }
  if (code == TDIST_ERR_TIMEOUT && !g_fault_note.empty())  // a process-local wait: no heap slot
    *what = strfmt("PE %d: %s", s.my_pe, g_fault_note.c_str());
  else if (code == TDIST_ERR_TIMEOUT)
    *what = strfmt("PE %d: wait timed out on PE %d's heap offset %llu: expected %llu (cmp %d), "
                   "saw %llu",
                   s.my_pe, s.fault_pe, (unsigned long long)s.fault_offset,
                   (unsigned long long)s.fault_expected, s.fault_cmp,
                   (unsigned long long)s.fault_seen);
  else
    *what = strfmt("PE %d: invalid device call (PE %d, heap offset %llu, address 0x%llx)%s%s",
                   s.my_pe, s.fault_pe, (unsigned long long)s.fault_offset,
                   (unsigned long long)s.fault_seen, g_fault_note.empty() ? "" : ": ",
                   g_fault_note.c_str());
  g_fault_note.clear();
  std::atomic_ref<int32_t>(s.fault_code).store(0, std::memory_order_relaxed);
  return code;
}

}  // namespace tdist

extern "C" {

int tdist_my_pe(void) { return state() ? state()->my_pe : -1; }
int tdist_n_pes(void) { return state() ? state()->n_pes : -1; }

void *tdist_ptr(const void *addr, int pe) { return translate(addr, pe); }

#define TDIST_DEFINE_PG(name, T)                                  \
  void tdist_##name##_p(T *dst, T value, int pe) {                \
    if (T *r = static_cast<T *>(translate(dst, pe))) {            \
      *r = value;                                                 \
      wake_pe(pe);                                                \
    }                                                             \
  }                                                               \
  T tdist_##name##_g(const T *src, int pe) {                      \
    const T *r = static_cast<const T *>(translate(src, pe));      \
    return r ? *r : T{};                                          \
  }
TDIST_FOR_EACH_RMA_TYPE(TDIST_DEFINE_PG)
#undef TDIST_DEFINE_PG

// The local side of a copy must exist when there is something to copy.
static bool local_ok(const void *p, size_t n, int pe, const char *what) {
  if (n && !p) bad_call(pe, p, tdist::strfmt("copy of %zu bytes %s NULL", n, what));
  return !n || p;
}

void tdist_putmem(void *dst, const void *src, size_t n, int pe) {
  if (local_ok(src, n, pe, "from")) copy_checked(translate(dst, pe, n), src, n, false, pe);
}
void tdist_getmem(void *dst, const void *src, size_t n, int pe) {
  if (local_ok(dst, n, pe, "into")) copy_checked(dst, translate(src, pe, n), n, false);
}
void tdist_putmem_nbi(void *dst, const void *src, size_t n, int pe) {
  if (local_ok(src, n, pe, "from")) copy_checked(translate(dst, pe, n), src, n, true, pe);
}
void tdist_getmem_nbi(void *dst, const void *src, size_t n, int pe) {
  if (local_ok(dst, n, pe, "into")) copy_checked(dst, translate(src, pe, n), n, true);
}

void tdist_putmem_signal(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t signal,
                         int sig_op, int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;  // checked first: no data without its signal
  tdist_putmem(dst, src, n, pe);
  if (auto *r = static_cast<uint64_t *>(translate(sig, pe, sizeof *sig))) signal_update(r, signal, sig_op, pe);
}

void tdist_putmem_signal_nbi(void *dst, const void *src, size_t n, uint64_t *sig, uint64_t signal,
                             int sig_op, int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;
  void *d = translate(dst, pe, n);
  auto *r = static_cast<uint64_t *>(translate(sig, pe, sizeof *sig));
  if (!d || !r) return;
  if (!local_ok(src, n, pe, "from")) return;
  if (use_sdma()) {
    // The signal is written by the copy thread after the data, preserving put-then-signal.
    copy_engine().submit([=] {
      std::memcpy(d, src, n);
      signal_update(r, signal, sig_op, pe);
    });
    return;
  }
  std::memcpy(d, src, n);
  signal_update(r, signal, sig_op, pe);
}

void tdist_signal_op(uint64_t *sig, uint64_t signal, int sig_op, int pe) {
  if (!signal_ok(sig, sig_op, pe)) return;
  if (auto *r = static_cast<uint64_t *>(translate(sig, pe, sizeof *sig))) signal_update(r, signal, sig_op, pe);
}

uint64_t tdist_signal_fetch(const uint64_t *sig) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t *>(sig)).load(std::memory_order_acquire);
}

uint64_t tdist_signal_wait_until(uint64_t *sig, int cmp, uint64_t v) {
  return wait_value<uint64_t>(sig, cmp, v);
}

#define TDIST_DEFINE_WAIT_UNTIL(name, T) \
  void tdist_##name##_wait_until(T *ivar, int cmp, T v) { wait_value<T>(ivar, cmp, v); }
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DEFINE_WAIT_UNTIL)
#undef TDIST_DEFINE_WAIT_UNTIL

#define TDIST_DEFINE_SLOT_OPS(name, T)                                                  \
  int32_t tdistx_wait_##name(T *slots, int32_t n, T value) {                            \
    constexpr int32_t stride = TDIST_SIGNAL_SLOT_BYTES / sizeof(T);                     \
    for (int32_t i = 0; i < n; ++i)                                                     \
      if (wait_value<T>(slots + i * stride, TDIST_CMP_EQ, value) != value) break;       \
    return 0;                                                                           \
  }                                                                                     \
  void tdistx_notify_##name(T *slot, T value, int32_t pe, int32_t sig_op) {             \
    if (!signal_ok(slot, sig_op, pe, sizeof(T))) return;                                \
    T *r = static_cast<T *>(translate(slot, pe, sizeof(T)));                            \
    if (!r) return;                                                                     \
    std::atomic_ref<T> a(*r);                                                           \
    if (sig_op == TDIST_SIGNAL_ADD) a.fetch_add(value, std::memory_order_release);      \
    else a.store(value, std::memory_order_release);                                     \
    wake_pe(pe);                                                                        \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DEFINE_SLOT_OPS)
#undef TDIST_DEFINE_SLOT_OPS

void *tdistx_consume_token_ptr(void *value, int32_t) { return value; }
int64_t tdistx_consume_token_int64(int64_t value, int32_t) { return value; }

void tdist_fence(void) { std::atomic_thread_fence(std::memory_order_seq_cst); }

void tdist_quiet(void) {
  if (use_sdma()) copy_engine().drain();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void tdisti_cpu_quiet_all(void) { copy_engine().drain(); }

uint64_t tdisti_cpu_wait_u64(const volatile uint64_t *addr, int cmp, uint64_t value, int pe,
                             int barrier_tolerance) {
  uint64_t *p = const_cast<uint64_t *>(addr);
  std::atomic_ref<uint64_t> a(*p);
  (void)pe;
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
void tdisti_cpu_pull_barrier(uint64_t slot_off) {
  tdist_device_state_t *s = state();
  if (!s) return;
  auto *mine = reinterpret_cast<uint64_t *>(static_cast<char *>(s->heap_base) + slot_off);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t epoch = std::atomic_ref<uint64_t>(*mine).load(std::memory_order_relaxed) + 1;
  std::atomic_ref<uint64_t>(*mine).store(epoch, std::memory_order_release);
  wake_pe(s->my_pe);
  for (int k = 1; k < s->n_pes; ++k) {
    int pe = (s->my_pe + k) % s->n_pes;  // staggered start spreads the reads
    auto *theirs = reinterpret_cast<uint64_t *>(static_cast<char *>(s->p2p_heap_base[pe]) + slot_off);
    tdisti_cpu_wait_u64(theirs, TDIST_CMP_EQ, epoch, pe, 1);
    if (fault_code_of(s)) return;
  }
}

void tdist_barrier_all(void) {
  tdist_device_state_t *s = state();
  if (!s) return;
  LaunchCtx *L = t_launch;
  if (!L || L->grid == 1) {
    tdist_quiet();
    tdisti_cpu_pull_barrier(TDIST_SYNC_DEVICE_BARRIER_OFF);
    return;
  }
  // Grid barrier: the last program to arrive runs the cross-PE barrier for all of them.
  tdist_quiet();
  uint64_t gen = L->generation.load(std::memory_order_acquire);
  if (L->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(L->grid)) {
    L->arrived.store(0, std::memory_order_relaxed);
    tdisti_cpu_pull_barrier(TDIST_SYNC_DEVICE_BARRIER_OFF);
    L->generation.store(gen + 1, std::memory_order_release);
    wake_words(&L->sleepers, &L->futex);
  } else {
    bounded_wait([&] { return L->generation.load(std::memory_order_acquire) != gen; },
                 &L->generation, gen + 1, TDIST_CMP_NE, &seen_as_u64<uint64_t>, &L->sleepers,
                 &L->futex);
  }
}

int32_t tdistx_program_id(int32_t axis) { return axis == 0 ? t_program_id : 0; }
int32_t tdistx_num_programs(int32_t axis) { return axis == 0 && t_launch ? t_launch->grid : 1; }

int tdist_cpu_launch(int32_t grid, tdist_cpu_kernel_fn fn, void *args) {
  return tdist::c_boundary("tdist_cpu_launch", [&] {
    tdist::Context &c = tdist::require_context("tdist_cpu_launch");
    TDIST_CHECK(c.cpu_backend, TDIST_ERR_NOT_SUPPORTED,
                "tdist_cpu_launch needs the CPU backend (this job runs the %s backend)",
                c.transport->name());
    TDIST_CHECK(fn, TDIST_ERR_INVALID_PARAM, "kernel function is NULL");
    TDIST_CHECK(grid >= 1 && grid <= TDIST_CPU_MAX_GRID, TDIST_ERR_INVALID_PARAM,
                "grid %d out of range [1, %d]", grid, TDIST_CPU_MAX_GRID);
    TDIST_CHECK(t_launch == nullptr, TDIST_ERR_INVALID_VALUE,
                "tdist_cpu_launch called from inside a kernel");
    tdist_device_state_t &s = c.state;
    LaunchCtx L;
    L.grid = grid;
    auto body = [&](int32_t pid) {
      t_launch = &L;
      t_program_id = pid;
      fn(args);
      t_launch = nullptr;
      t_program_id = 0;
    };
    program_pool().run(grid, body);
    tdist_quiet();
    std::string what;
    if (int code = tdist::take_device_fault(s, &what)) TDIST_THROW(code, "kernel fault: %s", what.c_str());
  });
}

int tdist_cpu_launch_grid(const int32_t grid[3], tdist_cpu_kernel_fn entry, void **args) {
  int32_t g = 0;
  int rc = tdist::c_boundary("tdist_cpu_launch_grid", [&] {
    TDIST_CHECK(grid, TDIST_ERR_INVALID_PARAM, "grid is NULL");
    TDIST_CHECK(grid[0] >= 1 && grid[1] >= 1 && grid[2] >= 1, TDIST_ERR_INVALID_PARAM,
                "grid %d x %d x %d: every dimension must be >= 1", grid[0], grid[1], grid[2]);
    const int64_t n = int64_t(grid[0]) * grid[1] * grid[2];
    TDIST_CHECK(n <= TDIST_CPU_MAX_GRID, TDIST_ERR_INVALID_PARAM,
                "grid %d x %d x %d = %lld programs exceeds TDIST_CPU_MAX_GRID (%d)", grid[0],
                grid[1], grid[2], (long long)n, TDIST_CPU_MAX_GRID);
    g = int32_t(n);
  });
  if (rc != TDIST_SUCCESS) return rc;
  tdist_kernel_pack_t pack;
  pack.args = args;
  for (int i = 0; i < 3; ++i) pack.grid[i] = grid[i];
  return tdist_cpu_launch(g, entry, &pack);
}

// ---- block events among the programs of one launch (Ascend's sync_block_{set,wait,all})

static LaunchCtx::Event *block_event(const char *what, int32_t event_id) {
  if (!t_launch) {
    bad_call(tdist_my_pe(), nullptr,
             tdist::strfmt("%s(event %d) called outside a tdist_cpu_launch kernel", what, event_id));
    return nullptr;
  }
  if (event_id < 0 || event_id >= kBlockEvents) {
    bad_call(tdist_my_pe(), nullptr,
             tdist::strfmt("%s: event id %d out of range [0, %d)", what, event_id, kBlockEvents));
    return nullptr;
  }
  return &t_launch->events[event_id];
}

void tdist_cpu_sync_block_set(int32_t event_id) {
  LaunchCtx::Event *e = block_event("tdist_cpu_sync_block_set", event_id);
  if (!e) return;
  e->sets.fetch_add(1, std::memory_order_release);
  wake_words(&t_launch->sleepers, &t_launch->futex);
}

void tdist_cpu_sync_block_wait(int32_t event_id) {
  LaunchCtx::Event *e = block_event("tdist_cpu_sync_block_wait", event_id);
  if (!e) return;
  LaunchCtx *L = t_launch;
  const uint32_t ticket = e->takes.fetch_add(1, std::memory_order_relaxed);
  bounded_wait(
      [&] { return e->sets.load(std::memory_order_acquire) > ticket; }, &e->sets, ticket + 1,
      TDIST_CMP_GE, &seen_as_u64<uint32_t>, &L->sleepers, &L->futex, [&] {
        return tdist::strfmt("tdist_cpu_sync_block_wait: block event %d was never set for this "
                             "wait: program %d of a %d-program launch waited for set #%u of "
                             "event %d, %u set(s) seen",
                             event_id, t_program_id, L->grid, ticket + 1, event_id,
                             e->sets.load(std::memory_order_relaxed));
      });
}

void tdist_cpu_sync_block_all(int32_t event_id) {
  LaunchCtx::Event *e = block_event("tdist_cpu_sync_block_all", event_id);
  if (!e) return;
  LaunchCtx *L = t_launch;
  const uint64_t gen = e->generation.load(std::memory_order_acquire);
  if (e->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(L->grid)) {
    e->arrived.store(0, std::memory_order_relaxed);
    e->generation.store(gen + 1, std::memory_order_release);
    wake_words(&L->sleepers, &L->futex);
    return;
  }
  bounded_wait(
      [&] { return e->generation.load(std::memory_order_acquire) != gen; }, &e->generation,
      gen + 1, TDIST_CMP_NE, &seen_as_u64<uint64_t>, &L->sleepers, &L->futex, [&] {
        return tdist::strfmt("tdist_cpu_sync_block_all: block event %d barrier timed out: %u of "
                             "%d programs arrived (program %d waiting)",
                             event_id, e->arrived.load(std::memory_order_relaxed), L->grid,
                             t_program_id);
      });
}

}  // extern "C"
