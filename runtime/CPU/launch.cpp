// The CPU launch (include/tdist/CPU/launch.h): tdist_cpu_launch / tdist_cpu_launch_grid on a pool
// of persistent program threads, the program id, and the block events among a launch's programs.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "CPU/backend.hpp"
#include "core/error.hpp"
#include "tdist/CPU/launch.h"

namespace tdist::cpu {

thread_local constinit LaunchCtx *t_launch = nullptr;
thread_local constinit int32_t t_program_id = 0;

}  // namespace tdist::cpu

using namespace tdist::cpu;

namespace {

// Persistent program threads: a launch wakes grid - 1 parked workers (program 0 runs on the
// caller) instead of creating threads, which costs tens of microseconds per launch on a busy host.
// One launch at a time per process.
//
// Parking is on raw 32-bit futex words, not std::atomic::wait: the kernel compares the word as it
// sleeps, so a wake-up cannot be lost, and every sleep is also bounded (kParkSleepNs) and followed
// by a fresh look at the state, so that even a lost wake-up costs a bounded delay, never a stall.
// (libstdc++ 12 waits on a 64-bit atomic through a shared proxy word and without a bound.)
constexpr long kParkSleepNs = 50'000'000;  // 50 ms: an idle worker looks again 20 times a second
constexpr int kParkSpins = 128;            // polls before the first sleep (a launch right after)

void park(std::atomic<uint32_t> &word, uint32_t seen) {
  timespec ts{0, kParkSleepNs};
  futex(reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, seen, &ts);
}
void wake_all(std::atomic<uint32_t> &word) {
  futex(reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr);
}
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words are plain 32-bit atomics");

class ProgramPool {
 public:
  template <class Body>
  void run(int32_t grid, Body &body) {
    std::lock_guard<std::mutex> g(launch_mu_);
    while (int32_t(workers_) < grid - 1) {
      // The worker must start from the epoch before this launch's bump, or it would sleep
      // through the launch it was created for.
      std::thread(&ProgramPool::worker, this, int32_t(workers_) + 1, epoch_.load(std::memory_order_acquire))
          .detach();
      ++workers_;
    }
    body_ = [&body](int32_t pid) { body(pid); };
    remaining_.store(uint32_t(grid - 1), std::memory_order_relaxed);
    // The grid travels in the epoch word: a worker outside this launch may wake late, after the
    // next launch began, and must judge membership by the launch it woke for (a separate grid_
    // field was a data race found by TSan: such a worker could run the next launch twice).
    uint64_t next = (((epoch_.load(std::memory_order_relaxed) >> 16) + 1) << 16) | uint64_t(grid);
    epoch_.store(next, std::memory_order_release);
    // The wake word moves after the epoch: a worker that sees the new word sees the new epoch,
    // and one that read the old word before sleeping finds it changed and does not sleep.
    wake_.fetch_add(1, std::memory_order_release);
    if (grid > 1) wake_all(wake_);
    body(0);
    for (int i = 0;; ++i) {
      uint32_t left = remaining_.load(std::memory_order_acquire);
      if (left == 0) break;
      if (i < kParkSpins) continue;
      park(remaining_, left);
    }
  }

 private:
  void worker(int32_t pid, uint64_t seen) {
    for (int i = 0;; ++i) {
      const uint32_t w = wake_.load(std::memory_order_acquire);
      const uint64_t e = epoch_.load(std::memory_order_acquire);
      if (e == seen) {
        if (i >= kParkSpins) park(wake_, w);
        continue;
      }
      seen = e;
      i = 0;
      if (pid >= int32_t(e & 0xFFFF)) continue;  // not part of this launch
      body_(pid);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) wake_all(remaining_);
    }
  }
  std::mutex launch_mu_;
  size_t workers_ = 0;
  std::function<void(int32_t)> body_;
  std::atomic<uint64_t> epoch_{0};  // (launch count << 16) | grid of that launch
  static_assert(TDIST_CPU_MAX_GRID < (1 << 16), "the grid must fit the epoch word's low 16 bits");
  std::atomic<uint32_t> wake_{0};       // futex word of the parked workers: bumped by every launch
  std::atomic<uint32_t> remaining_{0};  // futex word of the launcher: programs still running
};

ProgramPool &program_pool() {
  static ProgramPool *pool = new ProgramPool;  // never destroyed: parked workers outlive main
  return *pool;
}

}  // namespace

extern "C" {

int32_t tdistx_program_id(int32_t axis) { return axis == 0 ? t_program_id : 0; }
int32_t tdistx_num_programs(int32_t axis) { return axis == 0 && t_launch ? t_launch->grid : 1; }

int tdist_cpu_launch(int32_t grid, tdist_cpu_kernel_fn fn, void *args) {
  return tdist::c_boundary("tdist_cpu_launch", [&] {
    tdist::Context &c = tdist::require_context("tdist_cpu_launch");
    TDIST_CHECK(c.cpu_backend, TDIST_ERR_NOT_SUPPORTED,
                "tdist_cpu_launch needs the CPU backend (this job runs the %s backend)", c.transport->name());
    TDIST_CHECK(fn, TDIST_ERR_INVALID_PARAM, "kernel function is NULL");
    TDIST_CHECK(grid >= 1 && grid <= TDIST_CPU_MAX_GRID, TDIST_ERR_INVALID_PARAM,
                "grid %d out of range [1, %d]", grid, TDIST_CPU_MAX_GRID);
    TDIST_CHECK(t_launch == nullptr, TDIST_ERR_INVALID_VALUE, "tdist_cpu_launch called from inside a kernel");
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
    if (int code = tdist::take_fault(&what)) TDIST_THROW(code, "kernel fault: %s", what.c_str());
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
                "grid %d x %d x %d = %lld programs exceeds TDIST_CPU_MAX_GRID (%d)", grid[0], grid[1],
                grid[2], (long long)n, TDIST_CPU_MAX_GRID);
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
  bounded_wait([&] { return e->sets.load(std::memory_order_acquire) > ticket; }, &e->sets, ticket + 1,
               TDIST_CMP_GE, &seen_as_u64<uint32_t>, &L->sleepers, &L->futex,
               [&] {
                 return tdist::strfmt(
                     "tdist_cpu_sync_block_wait: block event %d was never set for this "
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
  bounded_wait([&] { return e->generation.load(std::memory_order_acquire) != gen; }, &e->generation, gen + 1,
               TDIST_CMP_NE, &seen_as_u64<uint64_t>, &L->sleepers, &L->futex,
               [&] {
                 return tdist::strfmt(
                     "tdist_cpu_sync_block_all: block event %d barrier timed out: %u of "
                     "%d programs arrived (program %d waiting)",
                     event_id, e->arrived.load(std::memory_order_relaxed), L->grid, t_program_id);
               });
}

}  // extern "C"
