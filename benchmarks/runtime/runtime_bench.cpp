// Runtime benchmark (a program, not a test): prints ratios against baselines measured in the same
// run. Run under tdist-run:
//   tdist-run -n 2 -- runtime_bench            signal round trip, putmem bandwidth, barrier
//   tdist-run -n 8 -- runtime_bench --barrier  barrier latency only
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tdist/tdist.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(int rc, const char *what) {
  if (rc != TDIST_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, tdist_last_error_message());
    std::exit(1);
  }
}

// Round trip through the tdist signal API: PE 0 sets PE 1's slot, PE 1 answers on PE 0's slot.
double tdist_rtt_us(uint64_t *sig, int iters) {
  int me = tdist_my_pe();
  check(tdist_host_barrier_all(), "barrier");
  double t0 = now_s();
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      tdist_signal_op(sig, uint64_t(i), TDIST_SIGNAL_SET, 1);
      tdist_signal_wait_until(sig + 8, TDIST_CMP_EQ, uint64_t(i));
    } else if (me == 1) {
      tdist_signal_wait_until(sig, TDIST_CMP_EQ, uint64_t(i));
      tdist_signal_op(sig + 8, uint64_t(i), TDIST_SIGNAL_SET, 0);
    }
  }
  double t = now_s() - t0;
  check(tdist_host_barrier_all(), "barrier");
  return t / iters * 1e6;
}

// The floor: the same exchange with raw C++ atomics on the same shared mapping, pure spinning.
double raw_rtt_us(uint64_t *sig, int iters) {
  int me = tdist_my_pe();
  auto *mine = sig + 16, *peer_slot = static_cast<uint64_t *>(tdist_ptr(sig + 16, 1 - me));
  auto *ack = sig + 24, *peer_ack = static_cast<uint64_t *>(tdist_ptr(sig + 24, 1 - me));
  check(tdist_host_barrier_all(), "barrier");
  double t0 = now_s();
  for (uint64_t i = 1; i <= uint64_t(iters); ++i) {
    if (me == 0) {
      std::atomic_ref<uint64_t>(*peer_slot).store(i, std::memory_order_release);
      while (std::atomic_ref<uint64_t>(*ack).load(std::memory_order_acquire) != i) {
      }
    } else if (me == 1) {
      while (std::atomic_ref<uint64_t>(*mine).load(std::memory_order_acquire) != i) {
      }
      std::atomic_ref<uint64_t>(*peer_ack).store(i, std::memory_order_release);
    }
  }
  double t = now_s() - t0;
  check(tdist_host_barrier_all(), "barrier");
  return t / iters * 1e6;
}

}  // namespace

int main(int argc, char **argv) {
  bool barrier_only = argc > 1 && std::string(argv[1]) == "--barrier";
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 512ull << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  check(tdist_init_from_env(&a), "init");
  int me = tdist_my_pe(), n = tdist_n_pes();

  if (!barrier_only && n >= 2) {
    auto *sig = static_cast<uint64_t *>(tdist_calloc(64, sizeof(uint64_t)));
    tdist_rtt_us(sig, 2000);  // warm-up
    raw_rtt_us(sig, 2000);
    double best_t = 1e9, best_r = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
      best_t = std::min(best_t, tdist_rtt_us(sig, 20000));
      best_r = std::min(best_r, raw_rtt_us(sig, 20000));
    }
    if (me == 0)
      std::printf("signal_rtt: tdist %.3f us, raw atomic ping-pong %.3f us, ratio %.3f (goal <= 1.2)\n",
                  best_t, best_r, best_t / best_r);

    const size_t bytes = 64ull << 20;
    auto *dst = static_cast<uint8_t *>(tdist_malloc(bytes));
    std::vector<uint8_t> src(bytes, uint8_t(me + 1)), local(bytes);
    std::memset(dst, 0, bytes);
    check(tdist_host_barrier_all(), "barrier");
    double put_best = 1e9, cpy_best = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
      check(tdist_host_barrier_all(), "barrier");
      double t0 = now_s();
      if (me == 0) tdist_putmem(dst, src.data(), bytes, 1);
      double t1 = now_s();
      if (me == 0) std::memcpy(local.data(), src.data(), bytes);
      double t2 = now_s();
      put_best = std::min(put_best, t1 - t0);
      cpy_best = std::min(cpy_best, t2 - t1);
    }
    check(tdist_host_barrier_all(), "barrier");
    if (me == 1 && (dst[0] != 1 || dst[bytes - 1] != 1)) {
      std::fprintf(stderr, "putmem data check failed\n");
      return 1;
    }
    if (me == 0)
      std::printf("putmem_bw: tdist %.2f GB/s, memcpy %.2f GB/s, ratio %.3f (goal >= 0.9)\n",
                  bytes / put_best / 1e9, bytes / cpy_best / 1e9, cpy_best / put_best);
    tdist_free(dst);
    tdist_free(sig);
  }

  const int iters = 2000;
  check(tdist_host_barrier_all(), "barrier");
  double t0 = now_s();
  for (int i = 0; i < iters; ++i) check(tdist_host_barrier_all(), "barrier");
  double host_us = (now_s() - t0) / iters * 1e6;
  t0 = now_s();
  for (int i = 0; i < 200; ++i) check(tdist_ctrl_barrier(), "ctrl barrier");
  double ctrl_us = (now_s() - t0) / 200 * 1e6;
  if (me == 0)
    std::printf("barrier_all: %d PEs: %.2f us (store-based control barrier %.2f us, ratio %.3f)\n", n,
                host_us, ctrl_us, host_us / ctrl_us);
  check(tdist_finalize(), "finalize");
  return 0;
}
