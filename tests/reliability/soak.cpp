// Soak: thousands of randomly sized all-to-alls and barriers across the PEs of a job (run under
// tdist-run, 8 ranks in CI), every byte checked. Exits non-zero on any mismatch or error.
//
// Each round: every PE sends every PE (itself included) a block of a size drawn from the shared
// seed (0 .. a per-round maximum of 64 B .. 256 KiB), through one of four paths (host putmem +
// signal_op, putmem_signal, a CPU kernel launch of 1-4 programs with putmem_signal_nbi + quiet
// and in-kernel waits, getmem pulled by the receiver), then waits for the signals (EQ the round
// count: a duplicate or lost signal is caught) and checks the block and the poison after it.
// Rounds are separated by a barrier whose kind also rotates (host, device barrier in a launch,
// control plane). Every 64 rounds a randomly sized collective malloc / free runs.
//   TDIST_SOAK_SECONDS (default 45): stop after this long (decided by PE 0, broadcast)
//   TDIST_SOAK_ROUNDS (default unlimited): stop after this many rounds
//   TDIST_TEST_SEED: fix the seed (printed at the start)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tdist/CPU/launch.h"
#include "tdist/tdist.h"

namespace {

constexpr size_t kMaxBlock = 256 * 1024;
constexpr size_t kSlot = TDIST_SIGNAL_SLOT_BYTES / sizeof(uint64_t);
constexpr uint8_t kPoison = 0xA5;

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

struct Round {
  uint64_t seed, round;
  int n;
  size_t max_block;
  int path;     // 0 host put+signal_op, 1 putmem_signal, 2 kernel nbi, 3 getmem (pull)
  int barrier;  // 0 host, 1 device (launch), 2 control plane
  int grid;
  size_t size(int src, int dst) const {
    uint64_t h = mix(seed ^ (round * 0x9E3779B97F4A7C15ull) ^ (uint64_t(src) << 40) ^ (uint64_t(dst) << 20));
    if (h % 17 == 0) return 0;  // empty blocks happen
    return size_t(h >> 8) % (max_block + 1);
  }
  // The block PE src sends PE dst this round (8 bytes per hash).
  void fill(int src, int dst, uint8_t *out, size_t sz) const {
    const uint64_t base = seed ^ round ^ (uint64_t(src) << 48) ^ (uint64_t(dst) << 32);
    for (size_t i = 0; i < sz; i += 8) {
      uint64_t w = mix(base ^ (i / 8));
      std::memcpy(out + i, &w, std::min<size_t>(8, sz - i));
    }
  }
};

struct Bufs {
  uint8_t *recv;  // [n][kMaxBlock] symmetric: block from PE src at src * kMaxBlock
  uint8_t *send;  // [n][kMaxBlock] symmetric (getmem pulls from it): block for PE dst
  uint64_t *sig;  // [n][kSlot] symmetric: signal from PE src
};

Round g_round;
Bufs g_bufs;
int g_me;

void fill_send(const Round &r) {
  for (int dst = 0; dst < r.n; ++dst) {
    r.fill(g_me, dst, g_bufs.send + dst * kMaxBlock, r.size(g_me, dst));
  }
}

void kernel_alltoall(void *) {
  const Round &r = g_round;
  int pid = tdistx_program_id(0), np = tdistx_num_programs(0);
  for (int k = pid; k < r.n; k += np) {
    int dst = (g_me + k) % r.n;
    size_t sz = r.size(g_me, dst);
    tdist_putmem_signal_nbi(g_bufs.recv + g_me * kMaxBlock, g_bufs.send + dst * kMaxBlock, sz,
                            g_bufs.sig + g_me * kSlot, 1, TDIST_SIGNAL_ADD, dst);
  }
  tdist_quiet();
  for (int k = pid; k < r.n; k += np)
    tdist_signal_wait_until(g_bufs.sig + k * kSlot, TDIST_CMP_EQ, r.round + 1);
}

void kernel_barrier(void *) { tdist_barrier_all(); }

int fail(const char *what) {
  std::fprintf(stderr, "soak[pe %d]: %s failed: %s\n", g_me, what, tdist_last_error_message());
  return 2;
}

}  // namespace

int main() {
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 32u << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  a.option_attr.wait_timeout_ms = 60000;  // a lost signal fails the soak instead of hanging it
  if (tdist_init_from_env(&a) != TDIST_SUCCESS) return fail("tdist_init_from_env");
  g_me = tdist_my_pe();
  const int n = tdist_n_pes();
  uint64_t seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  if (const char *e = std::getenv("TDIST_TEST_SEED")) seed = std::strtoull(e, nullptr, 10);
  if (tdist_ctrl_broadcast(&seed, sizeof seed, 0)) return fail("broadcast");
  const double secs = std::getenv("TDIST_SOAK_SECONDS") ? std::atof(std::getenv("TDIST_SOAK_SECONDS")) : 45;
  const uint64_t max_rounds = std::getenv("TDIST_SOAK_ROUNDS")
                                  ? std::strtoull(std::getenv("TDIST_SOAK_ROUNDS"), nullptr, 10)
                                  : UINT64_MAX;
  if (g_me == 0) std::printf("soak: %d PEs, seed %llu, %.0f s\n", n, (unsigned long long)seed, secs);

  g_bufs.recv = static_cast<uint8_t *>(tdist_malloc(n * kMaxBlock));
  g_bufs.send = static_cast<uint8_t *>(tdist_malloc(n * kMaxBlock));
  g_bufs.sig = static_cast<uint64_t *>(tdist_calloc(n * kSlot, sizeof(uint64_t)));
  if (!g_bufs.recv || !g_bufs.send || !g_bufs.sig) return fail("tdist_malloc");
  std::memset(g_bufs.recv, kPoison, n * kMaxBlock);
  if (tdist_host_barrier_all()) return fail("barrier");

  std::vector<uint8_t> expect(kMaxBlock), poison(kMaxBlock, kPoison);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t mismatches = 0, bytes = 0, rounds = 0, barriers = 0, allocs = 0;
  uint64_t per_path[4] = {0, 0, 0, 0};
  for (uint64_t round = 0; round < max_rounds; ++round) {
    if (round % 32 == 0) {  // PE 0 decides when to stop; everyone follows
      int go = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs;
      if (tdist_ctrl_broadcast(&go, sizeof go, 0)) return fail("broadcast");
      if (!go) break;
    }
    Round &r = g_round;
    uint64_t h = mix(seed + round);
    static const size_t maxes[] = {64, 4096, 65536, kMaxBlock};
    r = Round{seed, round, n, maxes[h % 4], int((h >> 8) % 4), int((h >> 16) % 3), 1 + int((h >> 24) % 4)};
    fill_send(r);
    // Barrier: previous round verified and re-poisoned everywhere, send buffers filled.
    int rc = r.barrier == 0   ? tdist_host_barrier_all()
             : r.barrier == 1 ? tdist_cpu_launch(r.grid, kernel_barrier, nullptr)
                              : tdist_ctrl_barrier();
    if (rc) return fail("barrier");
    ++barriers;
    ++per_path[r.path];
    if (r.path == 2) {
      if (tdist_cpu_launch(r.grid, kernel_alltoall, nullptr)) return fail("all-to-all kernel");
    } else if (r.path == 3) {
      for (int k = 0; k < n; ++k) {  // pull: read each source's block for me
        int src = (g_me + k) % n;
        tdist_getmem(g_bufs.recv + src * kMaxBlock, g_bufs.send + g_me * kMaxBlock, r.size(src, g_me), src);
      }
      if (tdist_last_error() != TDIST_SUCCESS) return fail("getmem");
    } else {
      for (int k = 0; k < n; ++k) {
        int dst = (g_me + k) % n;
        size_t sz = r.size(g_me, dst);
        void *to = g_bufs.recv + g_me * kMaxBlock;
        const void *from = g_bufs.send + dst * kMaxBlock;
        if (r.path == 0) {
          tdist_putmem(to, from, sz, dst);
          tdist_signal_op(g_bufs.sig + g_me * kSlot, 1, TDIST_SIGNAL_ADD, dst);
        } else {
          tdist_putmem_signal(to, from, sz, g_bufs.sig + g_me * kSlot, 1, TDIST_SIGNAL_ADD, dst);
        }
      }
      for (int src = 0; src < n; ++src)
        if (tdist_signal_wait_until(g_bufs.sig + src * kSlot, TDIST_CMP_EQ, round + 1) != round + 1) {
          std::fprintf(stderr, "soak[pe %d]: round %llu: signal from PE %d is %llu, expected %llu\n", g_me,
                       (unsigned long long)round, src, (unsigned long long)g_bufs.sig[src * kSlot],
                       (unsigned long long)round + 1);
          return 2;
        }
    }
    if (r.path == 3) {
      // Pulls carry no signal; count the round on my own slots so the EQ check stays exact.
      for (int src = 0; src < n; ++src) g_bufs.sig[src * kSlot] += 1;
      if (tdist_host_barrier_all()) return fail("barrier after pull");  // sources may refill
      ++barriers;
    }
    for (int src = 0; src < n; ++src) {
      size_t sz = r.size(src, g_me);
      const uint8_t *p = g_bufs.recv + src * kMaxBlock;
      r.fill(src, g_me, expect.data(), sz);
      size_t bad = 0, first = SIZE_MAX;
      // Nothing may be written past the block either (the rest of the slot keeps its poison).
      if (std::memcmp(p, expect.data(), sz) != 0 || std::memcmp(p + sz, poison.data(), kMaxBlock - sz) != 0)
        for (size_t i = 0; i < kMaxBlock; ++i)
          if (p[i] != (i < sz ? expect[i] : kPoison)) {
            if (first == SIZE_MAX) first = i;
            ++bad;
          }
      if (bad && mismatches < 10)
        std::fprintf(stderr,
                     "soak[pe %d]: round %llu path %d: %zu bad bytes from PE %d (size %zu), first at %zu\n",
                     g_me, (unsigned long long)round, r.path, bad, src, sz, first);
      mismatches += bad;
      bytes += sz;
      std::memset(g_bufs.recv + src * kMaxBlock, kPoison, sz);
    }
    if (round % 64 == 63) {  // collective malloc / free of a size every PE derives from the seed
      size_t sz = 1 + mix(seed ^ round) % (1u << 20);
      void *p = tdist_malloc(sz);
      if (!p || tdist_free(p)) return fail("collective malloc/free");
      ++allocs;
    }
    ++rounds;
  }
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<uint64_t> all(n);
  if (tdist_ctrl_allgather(&mismatches, all.data(), sizeof mismatches)) return fail("allgather");
  uint64_t total = 0;
  for (uint64_t m : all) total += m;
  if (g_me == 0)
    std::printf(
        "soak: %llu all-to-alls (paths host %llu / putmem_signal %llu / kernel %llu / pull %llu), "
        "%llu barriers, %llu malloc/free, %.1f s, %.0f all-to-alls/s, %.1f MB checked on PE 0, "
        "%llu mismatched bytes\n",
        (unsigned long long)rounds, (unsigned long long)per_path[0], (unsigned long long)per_path[1],
        (unsigned long long)per_path[2], (unsigned long long)per_path[3], (unsigned long long)barriers,
        (unsigned long long)allocs, el, rounds / el, bytes / 1e6, (unsigned long long)total);
  if (tdist_free(g_bufs.sig) || tdist_free(g_bufs.send) || tdist_free(g_bufs.recv)) return fail("free");
  if (tdist_finalize()) return fail("finalize");
  return total == 0 ? 0 : 1;
}
