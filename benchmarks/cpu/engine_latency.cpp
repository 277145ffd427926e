// tdist-engine-latency: the cost of one device-ABI operation from host code on CPU ranks, towards
// the PE half the job away (on 2 hosts x 2 ranks: a PE on the other host, reached through the
// ROCE engine). Rank 0 prints the mean of N calls of each; every PE reports a recorded fault.
//
//   tdist-run -n 4 -- tdist-engine-latency [N]        (one host: the shared-memory path)
//   benchmarks/cpu/multihost_a2a.py's hosts, or tests/multihost/netns_hosts.py, for two hosts
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tdist/abi.h"
#include "tdist/tdist.h"

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  if (n < 1) {
    std::fprintf(stderr, "usage: tdist-engine-latency [calls per operation >= 1]\n");
    return 2;
  }
  tdist_init_attr_t attr;
  tdist_init_attr_default(&attr);
  attr.local_mem_size = 64ull << 20;
  attr.option_attr.backend = TDIST_BACKEND_CPU;
  if (tdist_init_from_env(&attr) != TDIST_SUCCESS) {
    std::fprintf(stderr, "tdist-engine-latency: init: %s\n", tdist_last_error_message());
    return 1;
  }
  const int me = tdist_my_pe(), world = tdist_n_pes(), peer = (me + world / 2) % world;
  auto *buf = static_cast<char *>(tdist_malloc(1 << 20));
  auto *sig = static_cast<uint64_t *>(tdist_calloc(64, 8));
  if (!buf || !sig) {
    std::fprintf(stderr, "tdist-engine-latency: malloc: %s\n", tdist_last_error_message());
    return 1;
  }
  std::vector<char> src(1 << 20, 1);
  int failures = 0;
  auto time = [&](const char *what, auto op) {
    tdist_host_barrier_all();
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) op(i);
    const double us = (now_s() - t0) / n * 1e6;
    if (tdist_host_barrier_all() != TDIST_SUCCESS) {
      std::fprintf(stderr, "tdist-engine-latency[pe %d]: %s: %s\n", me, what, tdist_last_error_message());
      ++failures;
    }
    if (me == 0) std::printf("%-24s %10.1f us\n", what, us);
  };
  if (me == 0) std::printf("%d PEs, PE 0 -> PE %d, mean of %d calls\n", world, peer, n);
  time("putmem 64 B", [&](int) { tdist_putmem(buf, src.data(), 64, peer); });
  time("putmem 4 KiB", [&](int) { tdist_putmem(buf, src.data(), 4096, peer); });
  time("putmem 64 KiB", [&](int) { tdist_putmem(buf, src.data(), 65536, peer); });
  time("putmem 64 B + quiet", [&](int) {
    tdist_putmem(buf, src.data(), 64, peer);
    tdist_quiet();
  });
  time("signal ADD", [&](int) { tdist_signal_op(sig + 8, 1, TDIST_SIGNAL_ADD, peer); });
  time("signal SET", [&](int i) { tdist_signal_op(sig + 16, uint64_t(i), TDIST_SIGNAL_SET, peer); });
  time("host barrier", [&](int) { tdist_host_barrier_all(); });
  tdist_free(sig);
  tdist_free(buf);
  if (tdist_finalize() != TDIST_SUCCESS) ++failures;
  return failures ? 1 : 0;
}
