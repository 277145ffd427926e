// Multi-process runtime suite: run under tdist-run with 1, 2, 4 and 8 ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/mp_env.hpp"
#include "tdist/CPU/launch.h"

using namespace tdist_test;

namespace {

int me() { return tdist_my_pe(); }
int npes() { return tdist_n_pes(); }

template <class T>
std::vector<T> gather(T v) {
  std::vector<T> out(npes());
  EXPECT_EQ(tdist_ctrl_allgather(&v, out.data(), sizeof v), TDIST_SUCCESS) << tdist_last_error_message();
  return out;
}

}  // namespace

TEST(Runtime, Identity) {
  ASSERT_GE(me(), 0);
  ASSERT_LT(me(), npes());
  EXPECT_EQ(npes(), std::atoi(std::getenv("WORLD_SIZE")));
  EXPECT_EQ(me(), std::atoi(std::getenv("RANK")));
  auto ids = gather(me());
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(ids[pe], pe);
  const tdist_device_state_t *s = tdist_host_device_state();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->magic, TDIST_DEVICE_STATE_MAGIC);
  EXPECT_EQ(s->my_pe, me());
  // Every peer is reached one way: mapped here (load/store) when it is on this host, or through the
  // ROCE engine (on another host, or every peer with TDIST_ROCE_PEERS=all), whose table holds the
  // peer's own base.
  const char *roce = std::getenv("TDIST_ROCE_PEERS");
  const bool all_roce = roce && std::strcmp(roce, "all") == 0;
  struct Host {
    char name[64] = {};
  } host;
  gethostname(host.name, sizeof host.name - 1);
  auto hosts = gather(host);
  for (int pe = 0; pe < npes(); ++pe) {
    const bool mapped = s->p2p_heap_base[pe] != nullptr, engine = s->rdma_heap_base[pe] != nullptr;
    EXPECT_NE(mapped, engine) << "PE " << pe;
    const bool other_host = std::strcmp(hosts[pe].name, host.name) != 0;
    if (pe != me()) EXPECT_EQ(engine, all_roce || other_host) << "PE " << pe << " on " << hosts[pe].name;
  }
  EXPECT_EQ(s->p2p_heap_base[me()], s->heap_base);
}

TEST(Runtime, SymmetricOffsets) {
  std::vector<void *> ptrs;
  for (size_t sz : {1ul, 100ul, 4096ul, 1ul << 20, 77ul}) {
    void *p = tdist_malloc(sz);
    ASSERT_NE(p, nullptr) << tdist_last_error_message();
    ptrs.push_back(p);
    auto offs = gather(tdist_heap_offset(p));
    for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(offs[pe], offs[0]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  }
  void *a = tdist_align(1 << 16, 1000);
  ASSERT_NE(a, nullptr) << tdist_last_error_message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (1 << 16), 0u);
  ptrs.push_back(a);
  auto *z = static_cast<uint8_t *>(tdist_calloc(1000, 3));
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(z[i], 0) << "calloc byte " << i;
  ptrs.push_back(z);
  for (void *p : ptrs) ASSERT_EQ(tdist_free(p), TDIST_SUCCESS) << tdist_last_error_message();
}

TEST(Runtime, PutGetEveryPeer) {
  const size_t n = 1 << 16;
  auto *dst = static_cast<uint8_t *>(tdist_malloc(n * npes()));
  auto *src = static_cast<uint8_t *>(tdist_malloc(n));
  ASSERT_TRUE(dst && src);
  std::memset(dst, 0xA5, n * npes());  // poison
  for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), i);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  // put my block into slot `me` on every peer
  for (int pe = 0; pe < npes(); ++pe) tdist_putmem(dst + me() * n, src, n, pe);
  tdist_quiet();
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  for (int pe = 0; pe < npes(); ++pe)
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(dst[pe * n + i], pattern(pe, i)) << "from PE " << pe << " byte " << i;
  // get every peer's src
  std::vector<uint8_t> got(n, 0x5A);
  for (int pe = 0; pe < npes(); ++pe) {
    tdist_getmem(got.data(), src, n, pe);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], pattern(pe, i)) << "get from PE " << pe;
  }
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(src);
  tdist_free(dst);
}

TEST(Runtime, TypedPG) {
  auto *buf = static_cast<int64_t *>(tdist_calloc(npes(), sizeof(int64_t)));
  auto *dbl = static_cast<double *>(tdist_calloc(npes(), sizeof(double)));
  ASSERT_TRUE(buf && dbl);
  int next = (me() + 1) % npes();
  tdist_int64_p(buf + me(), int64_t(1000 + me()), next);
  tdist_double_p(dbl + me(), 0.5 + me(), next);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  int prev = (me() + npes() - 1) % npes();
  EXPECT_EQ(buf[prev], 1000 + prev);
  EXPECT_EQ(dbl[prev], 0.5 + prev);
  EXPECT_EQ(tdist_int64_g(buf + me(), next), 1000 + me());  // read back what I put there
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(dbl);
  tdist_free(buf);
}

TEST(Runtime, SignalsAndPredicates) {
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  int next = (me() + 1) % npes();
  // ADD from every PE into PE 0's slot 0; SET into next's slot 1
  tdist_signal_op(sig, 1, TDIST_SIGNAL_ADD, 0);
  tdist_signal_op(sig + 1, 40 + uint64_t(me()), TDIST_SIGNAL_SET, next);
  int prev = (me() + npes() - 1) % npes();
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_EQ, 40 + uint64_t(prev)), 40u + prev);
  if (me() == 0) {
    EXPECT_EQ(tdist_signal_wait_until(sig, TDIST_CMP_GE, uint64_t(npes())), uint64_t(npes()));
  }
  // all six predicates against a value that already holds
  uint64_t v = tdist_signal_fetch(sig + 1);
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_NE, v + 1), v);
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_GT, v - 1), v);
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_GE, v), v);
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_LT, v + 1), v);
  EXPECT_EQ(tdist_signal_wait_until(sig + 1, TDIST_CMP_LE, v), v);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(sig);
}

TEST(Runtime, PutmemSignalOrdersDataBeforeSignal) {
  const size_t n = 1 << 20;
  auto *buf = static_cast<uint8_t *>(tdist_malloc(n));
  auto *sig = static_cast<uint64_t *>(tdist_calloc(1, 64));
  std::vector<uint8_t> src(n);
  for (int round = 1; round <= 5; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), i, uint64_t(round));
    int next = (me() + 1) % npes(), prev = (me() + npes() - 1) % npes();
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
    tdist_putmem_signal(buf, src.data(), n, sig, uint64_t(round), TDIST_SIGNAL_SET, next);
    tdist_signal_wait_until(sig, TDIST_CMP_EQ, uint64_t(round));
    for (size_t i = 0; i < n; i += 61)
      ASSERT_EQ(buf[i], pattern(prev, i, uint64_t(round))) << "round " << round;
    ASSERT_EQ(buf[n - 1], pattern(prev, n - 1, uint64_t(round)));
  }
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(sig);
  tdist_free(buf);
}

struct SlotArgs {
  int64_t *slots;
  int n;
};

TEST(Runtime, WaitOverStridedSlotsInKernel) {
  // slots 64 bytes apart (8 int64 elements); program p of PE q notifies slot p on the next PE
  const int grid = 4;
  auto *slots = static_cast<int64_t *>(tdist_calloc(grid * 8, sizeof(int64_t)));
  SlotArgs args{slots, grid};
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  int rc = tdist_cpu_launch(
      grid,
      [](void *p) {
        auto *a = static_cast<SlotArgs *>(p);
        int pid = tdistx_program_id(0);
        int next = (tdist_my_pe() + 1) % tdist_n_pes();
        tdistx_notify_int64(a->slots + pid * 8, 7, next, TDIST_SIGNAL_SET);
        if (pid == 0) tdistx_wait_int64(a->slots, a->n, 7);  // all programs' slots, strided
      },
      &args);
  ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
  for (int i = 0; i < grid; ++i) EXPECT_EQ(slots[i * 8], 7);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(slots);
}

struct BarrierArgs {
  int64_t *counters;  // [n_pes * 8] : each PE's phase counter in its own 64-byte slot
  int rounds;
  std::atomic<int> *errors;
};

TEST(Runtime, DeviceBarrierUnderSkew) {
  // Every program bumps its PE's phase counter on every PE, sleeps a random while, then meets the
  // others at tdist_barrier_all. After the barrier every counter must show the phase: nobody got
  // through early.
  const int grid = 2, rounds = 20;
  auto *counters = static_cast<int64_t *>(tdist_calloc(npes() * 8, sizeof(int64_t)));
  std::atomic<int> errors{0};
  BarrierArgs args{counters, rounds, &errors};
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  int rc = tdist_cpu_launch(
      grid,
      [](void *p) {
        auto *a = static_cast<BarrierArgs *>(p);
        int pid = tdistx_program_id(0), n = tdist_n_pes(), my = tdist_my_pe();
        std::mt19937 rng(unsigned(my * 131 + pid));
        for (int r = 1; r <= a->rounds; ++r) {
          if (pid == 0)
            for (int pe = 0; pe < n; ++pe) tdistx_notify_int64(a->counters + my * 8, r, pe, TDIST_SIGNAL_SET);
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
          tdist_barrier_all();
          for (int pe = 0; pe < n; ++pe)
            if (std::atomic_ref<int64_t>(a->counters[pe * 8]).load() < r) a->errors->fetch_add(1);
          tdist_barrier_all();
        }
      },
      &args);
  ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(counters);
}

TEST(Runtime, HostBarrierManyRounds) {
  auto *flag = static_cast<int64_t *>(tdist_calloc(npes(), sizeof(int64_t)));
  for (int r = 1; r <= 200; ++r) {
    for (int pe = 0; pe < npes(); ++pe) tdist_int64_p(flag + me(), r, pe);
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS) << tdist_last_error_message();
    for (int pe = 0; pe < npes(); ++pe) ASSERT_GE(std::atomic_ref<int64_t>(flag[pe]).load(), r);
  }
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(flag);
}

TEST(Runtime, ProducerConsumerAcrossPrograms) {
  // program 0 produces chunks into the next PE's buffer with per-chunk signals; program 1 there
  // consumes them as they arrive.
  struct Args {
    uint8_t *buf;
    int64_t *sig;
    uint8_t *out;
    int chunks;
    size_t chunk;
  };
  const int chunks = 16;
  const size_t chunk = 8192;
  auto *buf = static_cast<uint8_t *>(tdist_malloc(chunks * chunk));
  auto *sig = static_cast<int64_t *>(tdist_calloc(chunks * 8, sizeof(int64_t)));
  std::vector<uint8_t> out(chunks * chunk, 0xEE);
  Args a{buf, sig, out.data(), chunks, chunk};
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  int rc = tdist_cpu_launch(
      2,
      [](void *p) {
        auto *a = static_cast<Args *>(p);
        int next = (tdist_my_pe() + 1) % tdist_n_pes();
        if (tdistx_program_id(0) == 0) {
          std::vector<uint8_t> src(a->chunk);
          for (int c = 0; c < a->chunks; ++c) {
            for (size_t i = 0; i < a->chunk; ++i) src[i] = pattern(tdist_my_pe(), c * a->chunk + i);
            tdist_putmem(a->buf + c * a->chunk, src.data(), a->chunk, next);
            tdist_fence();
            tdistx_notify_int64(a->sig + c * 8, 1, next, TDIST_SIGNAL_SET);
          }
        } else {
          for (int c = a->chunks - 1; c >= 0; --c) {  // consume in reverse: waits really block
            int32_t tok = tdistx_wait_int64(a->sig + c * 8, 1, 1);
            auto *data = static_cast<uint8_t *>(tdistx_consume_token_ptr(a->buf, tok));
            std::memcpy(a->out + c * a->chunk, data + c * a->chunk, a->chunk);
          }
        }
      },
      &a);
  ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
  int prev = (me() + npes() - 1) % npes();
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], pattern(prev, i)) << "byte " << i;
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(sig);
  tdist_free(buf);
}

struct PoolArgs {
  std::atomic<int> *runs;  // [TDIST_CPU_MAX_GRID] times each program id ran in this launch
  std::atomic<int> *bad;
};

TEST(Runtime, LaunchesRunEveryProgramExactlyOnce) {
  // Many launches with changing grids on the persistent program pool: each program id below the
  // grid runs exactly once per launch, none above it (a late-waking idle worker must not run a
  // launch twice or join one it does not belong to).
  std::vector<std::atomic<int>> runs(64);
  std::atomic<int> bad{0};
  PoolArgs a{runs.data(), &bad};
  std::mt19937 rng(unsigned(run_seed()) + unsigned(me()));
  for (int it = 0; it < 300; ++it) {
    int grid = 1 + int(rng() % 6);
    for (auto &r : runs) r.store(0);
    int rc = tdist_cpu_launch(
        grid,
        [](void *p) {
          auto *x = static_cast<PoolArgs *>(p);
          int pid = tdistx_program_id(0);
          if (pid < 0 || pid >= tdistx_num_programs(0))
            x->bad->fetch_add(1);
          else
            x->runs[pid].fetch_add(1);
        },
        &a);
    ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
    for (int p = 0; p < 64; ++p)
      ASSERT_EQ(runs[p].load(), p < grid ? 1 : 0) << "launch " << it << " grid " << grid << " program " << p;
  }
  EXPECT_EQ(bad.load(), 0);
}

TEST(Teams, SplitStrided) {
  tdist_team_t even = TDIST_TEAM_INVALID;
  int half = (npes() + 1) / 2;
  ASSERT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 2, half, &even), TDIST_SUCCESS)
      << tdist_last_error_message();
  if (me() % 2 == 0) {
    ASSERT_NE(even, TDIST_TEAM_INVALID);
    EXPECT_EQ(tdist_team_my_pe(even), me() / 2);
    EXPECT_EQ(tdist_team_n_pes(even), half);
    EXPECT_EQ(tdist_team_translate_pe(even, tdist_team_my_pe(even), TDIST_TEAM_WORLD), me());
    EXPECT_EQ(tdist_team_destroy(even), TDIST_SUCCESS);
  } else {
    EXPECT_EQ(even, TDIST_TEAM_INVALID);
  }
  EXPECT_EQ(tdist_team_translate_pe(TDIST_TEAM_WORLD, me(), TDIST_TEAM_WORLD), me());
  // bad arguments fail on every PE
  tdist_team_t bad;
  EXPECT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 1, npes() + 1, &bad), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("do not fit"), std::string::npos);
  EXPECT_EQ(bad, TDIST_TEAM_INVALID);
  EXPECT_EQ(tdist_team_destroy(TDIST_TEAM_WORLD), TDIST_ERR_INVALID_PARAM);
}

// ---------------------------------------------------------------- teams and team heaps

namespace {

std::string last_msg() { return tdist_last_error_message(); }
bool has(const std::string &s, const std::string &needle) { return s.find(needle) != std::string::npos; }

// Every member's v, member order (the team's own all-gather).
template <class T>
std::vector<T> team_gather(tdist_team_t team, T v) {
  std::vector<T> out(size_t(std::max(tdist_team_n_pes(team), 0)));
  EXPECT_EQ(tdist_team_ctrl_allgather(team, &v, out.data(), sizeof v), TDIST_SUCCESS) << last_msg();
  return out;
}

struct Members {
  int start = -1, stride = 0, size = 0;
  int world(int r) const { return start + r * stride; }
};
Members members(tdist_team_t team) {
  Members m;
  EXPECT_EQ(tdist_team_world_pes(team, &m.start, &m.stride, &m.size), TDIST_SUCCESS) << last_msg();
  return m;
}

// Symmetric `dst` on `pe` <- local `src`, through the peer mapping (tdist_ptr) where there is one,
// else the engine (a peer reached through ROCE has no mapping); and the reverse.
void put_to(void *dst, const void *src, size_t n, int pe) {
  if (void *q = tdist_ptr(dst, pe))
    std::memcpy(q, src, n);
  else
    tdist_putmem(dst, src, n, pe);
}
void get_from(void *dst, const void *src, size_t n, int pe) {
  if (const void *q = tdist_ptr(const_cast<void *>(src), pe))
    std::memcpy(dst, q, n);
  else
    tdist_getmem(dst, src, n, pe);
}

void expect_world_heap_symmetric() {
  void *w = tdist_malloc(8192);
  ASSERT_NE(w, nullptr) << last_msg();
  auto offs = gather(tdist_heap_offset(w));
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(offs[pe], offs[0]) << "world malloc offset on PE " << pe;
  ASSERT_EQ(tdist_free(w), TDIST_SUCCESS) << last_msg();
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS) << last_msg();
}

// Allocates `count` buffers of `bytes` in `team`'s heap, checks the offsets are the members', writes
// this member's pattern into its slot of every member's buffer, and reads every slot back after a
// team barrier; then frees them. `salt` tells rounds apart.
void team_heap_round_trip(tdist_team_t team, int count, size_t bytes, uint64_t salt) {
  const Members m = members(team);
  const int my = tdist_team_my_pe(team);
  ASSERT_GE(my, 0);
  std::vector<uint8_t *> bufs;
  for (int k = 0; k < count; ++k) {
    auto *b = static_cast<uint8_t *>(tdist_team_malloc(team, bytes * size_t(m.size)));
    ASSERT_NE(b, nullptr) << last_msg();
    auto offs = team_gather(team, tdist_heap_offset(b));
    for (int r = 0; r < m.size; ++r) ASSERT_EQ(offs[size_t(r)], offs[0]) << "member " << r << " buffer " << k;
    bufs.push_back(b);
  }
  std::vector<uint8_t> src(bytes);
  for (int k = 0; k < count; ++k) {
    for (size_t i = 0; i < bytes; ++i) src[i] = pattern(me(), i, salt * 131 + uint64_t(k));
    for (int r = 0; r < m.size; ++r)
      put_to(bufs[size_t(k)] + size_t(my) * bytes, src.data(), bytes, m.world(r));
  }
  ASSERT_EQ(tdist_team_barrier(team), TDIST_SUCCESS) << last_msg();
  std::vector<uint8_t> got(bytes);
  for (int k = 0; k < count; ++k)
    for (int r = 0; r < m.size; ++r) {
      const uint8_t *slot = bufs[size_t(k)] + size_t(r) * bytes;
      for (size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(slot[i], pattern(m.world(r), i, salt * 131 + uint64_t(k)))
            << "buffer " << k << " slot of member " << r << " byte " << i;
      // and what this member wrote, read back from a peer's copy
      const int peer = m.world((my + 1) % m.size);
      get_from(got.data(), bufs[size_t(k)] + size_t(my) * bytes, bytes, peer);
      for (size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(got[i], pattern(me(), i, salt * 131 + uint64_t(k))) << "read back from PE " << peer;
    }
  ASSERT_EQ(tdist_team_barrier(team), TDIST_SUCCESS) << last_msg();  // nobody reads while we free
  for (uint8_t *b : bufs) ASSERT_EQ(tdist_team_free(team, b), TDIST_SUCCESS) << last_msg();
}

}  // namespace

TEST(TeamHeaps, EvenAndOddTeamsAllocateSymmetricallyAndMoveData) {
  const uint64_t heap = 1 << 20;
  const tdist_team_config_t cfg{heap};
  const size_t world_before = tdist_heap_free_bytes();
  tdist_team_t even = TDIST_TEAM_INVALID, odd = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 2, (npes() + 1) / 2, &cfg, &even), TDIST_SUCCESS)
      << last_msg();
  if (npes() >= 2) {
    ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 1, 2, npes() / 2, &cfg, &odd), TDIST_SUCCESS)
        << last_msg();
  }
  // both heaps come from the world heap on every PE, members or not
  EXPECT_LE(tdist_heap_free_bytes(), world_before - (npes() >= 2 ? 2 : 1) * heap);
  const tdist_team_t mine = me() % 2 ? odd : even, other = me() % 2 ? even : odd;
  ASSERT_NE(mine, TDIST_TEAM_INVALID);
  EXPECT_EQ(other, TDIST_TEAM_INVALID);
  const Members m = members(mine);
  EXPECT_EQ(m.start, me() % 2);
  EXPECT_EQ(m.stride, 2);
  EXPECT_EQ(m.size, me() % 2 ? npes() / 2 : (npes() + 1) / 2);
  EXPECT_EQ(tdist_team_my_pe(mine), me() / 2);
  EXPECT_EQ(tdist_team_heap_free_bytes(mine), heap - TDIST_TEAM_SYNC_BYTES);
  // the first allocation follows the team's sync words, zeroed by the split
  auto *first = static_cast<uint8_t *>(tdist_team_malloc(mine, 4096));
  ASSERT_NE(first, nullptr) << last_msg();
  for (unsigned i = 0; i < TDIST_TEAM_SYNC_BYTES; ++i)
    ASSERT_EQ(first[int(i) - int(TDIST_TEAM_SYNC_BYTES)], 0);
  ASSERT_EQ(tdist_team_free(mine, first), TDIST_SUCCESS) << last_msg();
  // the block is the team's until finalize: the world's free refuses it on every PE
  EXPECT_EQ(tdist_free(first - TDIST_TEAM_SYNC_BYTES), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "is a team heap's block")) << last_msg();
  team_heap_round_trip(mine, 3, 1 << 12, 1);
  EXPECT_EQ(tdist_team_heap_free_bytes(mine), heap - TDIST_TEAM_SYNC_BYTES);
  expect_world_heap_symmetric();
  ASSERT_EQ(tdist_team_destroy(mine), TDIST_SUCCESS) << last_msg();
}

// Teams that share no PE make different numbers of team calls at the same time, with skew; neither
// waits for the other, and the world heap stays symmetric.
TEST(TeamHeaps, DisjointTeamsWorkConcurrently) {
  if (npes() < 2) GTEST_SKIP() << "needs two teams";
  const tdist_team_config_t cfg{256 << 10};
  tdist_team_t even = TDIST_TEAM_INVALID, odd = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 2, (npes() + 1) / 2, &cfg, &even),
            TDIST_SUCCESS);
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 1, 2, npes() / 2, &cfg, &odd), TDIST_SUCCESS);
  const tdist_team_t mine = me() % 2 ? odd : even;
  std::mt19937 rng{unsigned(me())};
  const int rounds = me() % 2 ? 9 : 4;  // the odd team does more, in smaller steps
  for (int round = 0; round < rounds; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    team_heap_round_trip(mine, me() % 2 ? 1 : 3, 512 + 64 * size_t(round), uint64_t(round));
    for (int b = 0; b < (me() % 2 ? 3 : 1); ++b)
      ASSERT_EQ(tdist_team_barrier(mine), TDIST_SUCCESS) << last_msg();
    auto ids = team_gather(mine, me());
    for (size_t r = 0; r < ids.size(); ++r) ASSERT_EQ(ids[r], me() % 2 + 2 * int(r));
  }
  expect_world_heap_symmetric();
  ASSERT_EQ(tdist_team_destroy(mine), TDIST_SUCCESS);
}

// The x-teams of one split_2d share a team heap block, as do the y-teams: every x-team's first
// allocation is at the same offset on every PE. x-teams (disjoint, at one team index) run different
// work at once, then the y-teams do.
TEST(TeamHeaps, Split2dTeamsShareTheirBlockAndWorkConcurrently) {
  const int xr = npes() % 2 == 0 ? 2 : 1;
  const tdist_team_config_t xc{128 << 10}, yc{192 << 10};
  tdist_team_t x = TDIST_TEAM_INVALID, y = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, xr, &xc, &x, &yc, &y), TDIST_SUCCESS) << last_msg();
  ASSERT_NE(x, TDIST_TEAM_INVALID);
  ASSERT_NE(y, TDIST_TEAM_INVALID);
  EXPECT_EQ(tdist_team_heap_free_bytes(x), xc.heap_bytes - TDIST_TEAM_SYNC_BYTES);
  EXPECT_EQ(tdist_team_heap_free_bytes(y), yc.heap_bytes - TDIST_TEAM_SYNC_BYTES);
  for (tdist_team_t t : {x, y}) {
    void *p = tdist_team_malloc(t, 1000);
    ASSERT_NE(p, nullptr) << last_msg();
    auto offs = gather(tdist_heap_offset(p));  // every PE, across teams
    for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(offs[pe], offs[0]) << "team " << t << " PE " << pe;
    ASSERT_EQ(tdist_team_free(t, p), TDIST_SUCCESS) << last_msg();
  }
  const int xid = me() / xr;  // which x-team: each does a different number of rounds
  for (int round = 0; round <= xid % 3; ++round)
    team_heap_round_trip(x, 1 + xid % 2, 256, uint64_t(10 + round));
  for (int round = 0; round <= me() % xr; ++round) team_heap_round_trip(y, 2, 384, uint64_t(20 + round));
  expect_world_heap_symmetric();
  ASSERT_EQ(tdist_team_destroy(x), TDIST_SUCCESS);
  ASSERT_EQ(tdist_team_destroy(y), TDIST_SUCCESS);
}

TEST(Teams, Split2dMembership) {
  const int n = npes();
  for (int xr = 1; xr <= n; ++xr) {
    if (n % xr) continue;
    tdist_team_t x = TDIST_TEAM_INVALID, y = TDIST_TEAM_INVALID;
    ASSERT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, xr, nullptr, &x, nullptr, &y), TDIST_SUCCESS)
        << last_msg();
    const Members mx = members(x), my = members(y);
    EXPECT_EQ(mx.start, me() / xr * xr) << "xrange " << xr;
    EXPECT_EQ(mx.stride, 1);
    EXPECT_EQ(mx.size, xr);
    EXPECT_EQ(tdist_team_my_pe(x), me() % xr);
    EXPECT_EQ(my.start, me() % xr);
    EXPECT_EQ(my.stride, xr);
    EXPECT_EQ(my.size, n / xr);
    EXPECT_EQ(tdist_team_my_pe(y), me() / xr);
    EXPECT_EQ(tdist_team_n_pes(y), n / xr);
    for (int r = 0; r < xr; ++r)
      EXPECT_EQ(tdist_team_translate_pe(x, r, TDIST_TEAM_WORLD), me() / xr * xr + r);
    for (int r = 0; r < n / xr; ++r)
      EXPECT_EQ(tdist_team_translate_pe(y, r, TDIST_TEAM_WORLD), me() % xr + r * xr);
    EXPECT_EQ(tdist_team_translate_pe(TDIST_TEAM_WORLD, me(), x), me() % xr);
    // both teams work (their own rounds), and a team without a heap refuses team allocations
    auto xs = team_gather(x, me()), ys = team_gather(y, me());
    for (int r = 0; r < xr; ++r) EXPECT_EQ(xs[size_t(r)], mx.world(r));
    for (int r = 0; r < n / xr; ++r) EXPECT_EQ(ys[size_t(r)], my.world(r));
    ASSERT_EQ(tdist_team_barrier(x), TDIST_SUCCESS) << last_msg();
    ASSERT_EQ(tdist_team_barrier(y), TDIST_SUCCESS) << last_msg();
    EXPECT_EQ(tdist_team_malloc(x, 64), nullptr);
    EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
    EXPECT_TRUE(has(last_msg(), "has no team heap")) << last_msg();
    EXPECT_EQ(tdist_team_destroy(x), TDIST_SUCCESS);
    EXPECT_EQ(tdist_team_destroy(y), TDIST_SUCCESS);
  }
  // an xrange that does not divide the parent fails on every PE and makes nothing
  tdist_team_t x = 7, y = 7;
  EXPECT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, n + 1, nullptr, &x, nullptr, &y), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "does not divide")) << last_msg();
  EXPECT_EQ(x, TDIST_TEAM_INVALID);
  EXPECT_EQ(y, TDIST_TEAM_INVALID);
  EXPECT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, 0, nullptr, &x, nullptr, &y), TDIST_ERR_INVALID_PARAM);
  // a NULL output on one PE fails the split on every PE
  EXPECT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, 1, nullptr, &x, nullptr, me() == npes() - 1 ? nullptr : &y),
            TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "yteam is NULL")) << last_msg();
  EXPECT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 1, 1, me() == 0 ? nullptr : &x),
            TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "failed on PE 0: new_team is NULL")) << last_msg();
}

// A split's parent may be a split team: world start and stride compose. PEs outside the parent take
// part passing TDIST_TEAM_INVALID (the handle their split of the parent gave them).
TEST(Teams, SplitsOfSplitTeamsCompose) {
  const int n = npes();
  tdist_team_t even = TDIST_TEAM_INVALID, sub = 5;
  const int half = (n + 1) / 2;
  ASSERT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 2, half, &even), TDIST_SUCCESS) << last_msg();
  // every second member of the even team, from its member 1 (world PEs 2, 6, ...)
  if (half >= 2) {
    ASSERT_EQ(tdist_team_split_strided(even, 1, 2, half / 2, &sub), TDIST_SUCCESS) << last_msg();
    if (me() % 4 == 2 && me() / 4 < half / 2) {
      ASSERT_NE(sub, TDIST_TEAM_INVALID);
      const Members m = members(sub);
      EXPECT_EQ(m.start, 2);
      EXPECT_EQ(m.stride, 4);
      EXPECT_EQ(m.size, half / 2);
      EXPECT_EQ(tdist_team_my_pe(sub), me() / 4);
      EXPECT_EQ(tdist_team_translate_pe(sub, 0, even), 1);
      ASSERT_EQ(tdist_team_barrier(sub), TDIST_SUCCESS) << last_msg();
      EXPECT_EQ(tdist_team_destroy(sub), TDIST_SUCCESS);
    } else {
      EXPECT_EQ(sub, TDIST_TEAM_INVALID);
    }
  }
  // a 2-D split of the even team: x-teams of 2 even PEs, y-teams of stride 4
  if (half % 2 == 0) {
    tdist_team_t x = TDIST_TEAM_INVALID, y = TDIST_TEAM_INVALID;
    ASSERT_EQ(tdist_team_split_2d(even, 2, nullptr, &x, nullptr, &y), TDIST_SUCCESS) << last_msg();
    if (me() % 2 == 0) {
      const Members mx = members(x), my = members(y);
      EXPECT_EQ(mx.start, me() / 4 * 4);
      EXPECT_EQ(mx.stride, 2);
      EXPECT_EQ(mx.size, 2);
      EXPECT_EQ(my.start, me() % 4);
      EXPECT_EQ(my.stride, 4);
      EXPECT_EQ(my.size, half / 2);
      // and a split of an x-team, which every PE of the even team names by its own x-team
      tdist_team_t second = TDIST_TEAM_INVALID;
      ASSERT_EQ(tdist_team_split_strided(x, 1, 1, 1, &second), TDIST_SUCCESS) << last_msg();
      if (me() % 4 == 2) {
        EXPECT_EQ(members(second).start, me());
        EXPECT_EQ(tdist_team_destroy(second), TDIST_SUCCESS);
      } else {
        EXPECT_EQ(second, TDIST_TEAM_INVALID);
      }
      EXPECT_EQ(tdist_team_destroy(x), TDIST_SUCCESS);
      EXPECT_EQ(tdist_team_destroy(y), TDIST_SUCCESS);
    } else {
      EXPECT_EQ(x, TDIST_TEAM_INVALID);
      EXPECT_EQ(y, TDIST_TEAM_INVALID);
      tdist_team_t second = 5;
      ASSERT_EQ(tdist_team_split_strided(TDIST_TEAM_INVALID, 1, 1, 1, &second), TDIST_SUCCESS) << last_msg();
      EXPECT_EQ(second, TDIST_TEAM_INVALID);
    }
  }
  // a member of the parent that passes TDIST_TEAM_INVALID fails the split on every PE
  if (half >= 2) {
    tdist_team_t t = 5;
    EXPECT_EQ(tdist_team_split_strided(me() == 0 || me() % 2 ? TDIST_TEAM_INVALID : even, 0, 1, 1, &t),
              TDIST_ERR_COLLECTIVE_MISMATCH);
    EXPECT_TRUE(has(last_msg(), "but PE 0 passed TDIST_TEAM_INVALID")) << last_msg();
    EXPECT_EQ(t, TDIST_TEAM_INVALID);
  }
  // nobody names a parent
  tdist_team_t t = 5;
  EXPECT_EQ(tdist_team_split_strided(TDIST_TEAM_INVALID, 0, 1, 1, &t), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "every PE passed TDIST_TEAM_INVALID")) << last_msg();
  if (me() % 2 == 0) {
    EXPECT_EQ(tdist_team_destroy(even), TDIST_SUCCESS);
  }
}

TEST(TeamHeaps, CallMismatchFailsOnEveryMember) {
  if (npes() < 2) GTEST_SKIP() << "needs two members to disagree";
  const tdist_team_config_t cfg{256 << 10};
  tdist_team_t all = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &cfg, &all), TDIST_SUCCESS)
      << last_msg();
  const size_t before = tdist_team_heap_free_bytes(all);
  EXPECT_EQ(tdist_team_malloc(all, me() == 1 ? 8192 : 4096), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH);
  std::string msg = last_msg();
  EXPECT_TRUE(has(msg, "member 1 (PE 1) called team_malloc(8192)")) << msg;
  EXPECT_TRUE(has(msg, "member 0 (PE 0) called team_malloc(4096)")) << msg;
  EXPECT_TRUE(has(msg, "collective mismatch in team ")) << msg;
  EXPECT_EQ(tdist_team_heap_free_bytes(all), before);
  // an operation mismatch, and an alignment mismatch
  EXPECT_EQ(me() == 0 ? tdist_team_align(all, 4096, 4096) : tdist_team_malloc(all, 4096), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH);
  EXPECT_TRUE(has(last_msg(), "team_align(4096, 4096)")) << last_msg();
  EXPECT_EQ(tdist_team_align(all, me() == npes() - 1 ? 1024 : 512, 100), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH);
  EXPECT_EQ(tdist_team_heap_free_bytes(all), before);
  // the team heap still works and is symmetric; a free of different blocks fails everywhere
  void *a = tdist_team_malloc(all, 4096), *b = tdist_team_align(all, 1 << 16, 100);
  ASSERT_TRUE(a && b) << last_msg();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % (1 << 16), 0u);
  auto offs = team_gather(all, tdist_heap_offset(b));
  for (int r = 0; r < npes(); ++r) EXPECT_EQ(offs[size_t(r)], offs[0]);
  EXPECT_EQ(tdist_team_free(all, me() == 1 ? b : a), TDIST_ERR_COLLECTIVE_MISMATCH);
  EXPECT_TRUE(has(last_msg(), "team_free(heap offset")) << last_msg();
  // a free that is wrong on one member (not a team allocation) fails on every member
  int local = 0;
  EXPECT_EQ(tdist_team_free(all, me() == 0 ? static_cast<void *>(&local) : a), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "failed on member 0 (PE 0)")) << last_msg();
  EXPECT_TRUE(has(last_msg(), "is not in team")) << last_msg();
  EXPECT_EQ(tdist_team_free(all, a), TDIST_SUCCESS) << last_msg();
  EXPECT_EQ(tdist_team_free(all, a), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "double free")) << last_msg();
  EXPECT_EQ(tdist_team_free(all, b), TDIST_SUCCESS) << last_msg();
  EXPECT_EQ(tdist_team_free(all, nullptr), TDIST_SUCCESS) << last_msg();
  EXPECT_EQ(tdist_team_heap_free_bytes(all), before);
  // control all-gathers whose sizes or buffers differ
  std::vector<int64_t> out(size_t(npes()) * 2);
  int64_t v = me();
  EXPECT_EQ(tdist_team_ctrl_allgather(all, &v, out.data(), me() == 1 ? 4 : 8), TDIST_ERR_COLLECTIVE_MISMATCH);
  EXPECT_EQ(tdist_team_ctrl_allgather(all, me() == 0 ? nullptr : &v, out.data(), 8), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "failed on member 0 (PE 0): in/out is NULL")) << last_msg();
  EXPECT_EQ(tdist_team_destroy(all), TDIST_SUCCESS) << last_msg();
}

TEST(TeamHeaps, ExhaustionAndBadSizes) {
  const uint64_t heap = 64 << 10;
  const tdist_team_config_t cfg{heap - 100};  // rounded up to 256
  tdist_team_t all = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &cfg, &all), TDIST_SUCCESS)
      << last_msg();
  const size_t usable = heap - TDIST_TEAM_SYNC_BYTES;
  EXPECT_EQ(tdist_team_heap_free_bytes(all), usable);
  EXPECT_EQ(tdist_team_malloc(all, heap), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  const std::string msg = last_msg();
  EXPECT_TRUE(has(msg,
                  "heap exhausted: 65536 bytes requested; it holds 65280 bytes after its 256 sync bytes, "
                  "65280 free"))
      << msg;
  void *p = tdist_team_malloc(all, usable);
  ASSERT_NE(p, nullptr) << last_msg();
  EXPECT_EQ(tdist_team_heap_free_bytes(all), 0u);
  EXPECT_EQ(tdist_team_malloc(all, 1), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  EXPECT_TRUE(has(last_msg(), "0 free")) << last_msg();
  EXPECT_EQ(tdist_team_free(all, p), TDIST_SUCCESS);
  EXPECT_EQ(tdist_team_heap_free_bytes(all), usable);
  EXPECT_EQ(tdist_team_malloc(all, 0), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_team_align(all, 3000, 64), nullptr);
  EXPECT_TRUE(has(last_msg(), "power of two")) << last_msg();
  EXPECT_EQ(tdist_team_align(all, 4 << 20, 64), nullptr);
  EXPECT_TRUE(has(last_msg(), "exceeds the largest supported")) << last_msg();
  EXPECT_EQ(tdist_team_heap_free_bytes(all), usable);
  EXPECT_EQ(tdist_team_destroy(all), TDIST_SUCCESS);
}

TEST(TeamHeaps, NonMembersAndTeamsWithoutHeapsAreRefusedAtOnce) {
  const tdist_team_config_t cfg{64 << 10};
  tdist_team_t even = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 2, (npes() + 1) / 2, &cfg, &even),
            TDIST_SUCCESS);
  const tdist_team_t index = gather(even)[0];  // PE 0 is a member: the team's index everywhere
  if (me() % 2 == 1) {
    EXPECT_EQ(even, TDIST_TEAM_INVALID);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(tdist_team_malloc(index, 64), nullptr);
    EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
    EXPECT_TRUE(has(last_msg(), "is not a member of team")) << last_msg();
    EXPECT_EQ(tdist_team_barrier(index), TDIST_ERR_INVALID_PARAM);
    int64_t v = 1, out[16];
    EXPECT_EQ(tdist_team_ctrl_allgather(index, &v, out, sizeof v), TDIST_ERR_INVALID_PARAM);
    EXPECT_EQ(tdist_team_free(index, nullptr), TDIST_ERR_INVALID_PARAM);
    EXPECT_EQ(tdist_team_heap_free_bytes(index), 0u);
    EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
    // a rejection pending on a non-member goes with the call it could not take part in
    ASSERT_EQ(tdist_collective_reject("tdist.team_malloc: size 'x' is not an int"), TDIST_SUCCESS);
    EXPECT_EQ(tdist_team_malloc(index, 64), nullptr);
    EXPECT_TRUE(has(last_msg(), "binding rejected an argument: tdist.team_malloc: size 'x'")) << last_msg();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  } else {
    ASSERT_EQ(even, index);
    team_heap_round_trip(even, 1, 256, 3);  // the members go on alone
  }
  // unknown teams, the world team (no team heap)
  EXPECT_EQ(tdist_team_malloc(TDIST_TEAM_INVALID, 64), nullptr);
  EXPECT_TRUE(has(last_msg(), "team -1 does not exist")) << last_msg();
  EXPECT_EQ(tdist_team_barrier(9999), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_team_malloc(TDIST_TEAM_WORLD, 64), nullptr);
  EXPECT_TRUE(has(last_msg(), "has no team heap")) << last_msg();
  EXPECT_EQ(tdist_team_world_pes(9999, nullptr, nullptr, nullptr), TDIST_ERR_INVALID_PARAM);
  // the world team's collectives work, over every PE
  ASSERT_EQ(tdist_team_barrier(TDIST_TEAM_WORLD), TDIST_SUCCESS) << last_msg();
  auto ids = team_gather(TDIST_TEAM_WORLD, me());
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(ids[size_t(pe)], pe);
  const Members w = members(TDIST_TEAM_WORLD);
  EXPECT_EQ(w.start, 0);
  EXPECT_EQ(w.stride, 1);
  EXPECT_EQ(w.size, npes());
  ASSERT_EQ(tdist_ctrl_barrier(), TDIST_SUCCESS);
  if (me() % 2 == 0) {
    EXPECT_EQ(tdist_team_destroy(even), TDIST_SUCCESS);
  }
}

TEST(TeamHeaps, DestroyRefusesLiveAllocations) {
  const tdist_team_config_t cfg{64 << 10};
  tdist_team_t all = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &cfg, &all), TDIST_SUCCESS);
  void *p = tdist_team_malloc(all, 1000);
  ASSERT_NE(p, nullptr) << last_msg();
  EXPECT_EQ(tdist_team_destroy(all), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "still holds 1 live allocation")) << last_msg();
  EXPECT_NE(tdist_team_my_pe(all), -1);  // still there
  ASSERT_EQ(tdist_team_free(all, p), TDIST_SUCCESS) << last_msg();
  EXPECT_EQ(tdist_team_destroy(all), TDIST_SUCCESS) << last_msg();
  EXPECT_EQ(tdist_team_malloc(all, 64), nullptr);
  EXPECT_TRUE(has(last_msg(), "was destroyed")) << last_msg();
  EXPECT_EQ(tdist_team_destroy(all), TDIST_ERR_INVALID_PARAM);
}

TEST(TeamHeaps, SplitArgumentsThatDifferFailEverywhereAndMakeNothing) {
  const tdist_team_config_t small{4096}, large{8192};
  tdist_team_t first = TDIST_TEAM_INVALID, t = 5;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &small, &first), TDIST_SUCCESS);
  const size_t world = tdist_heap_free_bytes();
  if (npes() >= 2) {
    EXPECT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), me() == 1 ? &large : &small, &t),
              TDIST_ERR_COLLECTIVE_MISMATCH);
    EXPECT_TRUE(has(last_msg(), "PE 1 called team_split_strided(parent 0, start 0, stride 1, size " +
                                    std::to_string(npes()) + ", 8192-byte heap)"))
        << last_msg();
    EXPECT_TRUE(has(last_msg(), "4096-byte heap")) << last_msg();
    EXPECT_EQ(t, TDIST_TEAM_INVALID);
    // one PE asks for no heap (NULL config), split_2d's y-heap differs
    EXPECT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), me() == 0 ? nullptr : &small, &t),
              TDIST_ERR_COLLECTIVE_MISMATCH);
    EXPECT_TRUE(has(last_msg(), "no heap")) << last_msg();
    tdist_team_t x, y;
    EXPECT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, 1, &small, &x, me() == npes() - 1 ? &large : &small, &y),
              TDIST_ERR_COLLECTIVE_MISMATCH);
    EXPECT_TRUE(has(last_msg(), "y-teams: 8192-byte heap")) << last_msg();
    // other arguments that differ
    EXPECT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 1, me() == 1 ? 1 : npes(), &t),
              TDIST_ERR_COLLECTIVE_MISMATCH);
    EXPECT_EQ(me() == 0 ? tdist_team_split_2d(TDIST_TEAM_WORLD, 1, nullptr, &x, nullptr, &y)
                        : tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 1, 1, &t),
              TDIST_ERR_COLLECTIVE_MISMATCH);
  }
  // a team heap larger than the world heap: MALLOC_FAILED on every PE
  const tdist_team_config_t huge{uint64_t(1) << 40};
  EXPECT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &huge, &t), TDIST_ERR_MALLOC_FAILED);
  EXPECT_TRUE(has(last_msg(), "a team heap of 1099511627776 bytes")) << last_msg();
  // none of them reserved anything or made a team: the next split gets the next index
  EXPECT_EQ(tdist_heap_free_bytes(), world);
  tdist_team_t next = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &small, &next), TDIST_SUCCESS);
  EXPECT_EQ(next, first + 1);
  EXPECT_EQ(tdist_team_destroy(first), TDIST_SUCCESS);
  EXPECT_EQ(tdist_team_destroy(next), TDIST_SUCCESS);
}

// A binding that cannot convert one member's argument still takes part: every member fails, none
// waits, nothing changes.
TEST(TeamHeaps, RejectedArgumentFailsTheTeamCallOnEveryMember) {
  if (npes() < 2) GTEST_SKIP() << "needs two members";
  const tdist_team_config_t cfg{64 << 10};
  tdist_team_t all = TDIST_TEAM_INVALID;
  ASSERT_EQ(tdist_team_split_strided_ex(TDIST_TEAM_WORLD, 0, 1, npes(), &cfg, &all), TDIST_SUCCESS);
  const size_t before = tdist_team_heap_free_bytes(all);
  auto t0 = std::chrono::steady_clock::now();
  if (me() == 1) {
    ASSERT_EQ(tdist_collective_reject("tdist.team_malloc: size -1 is negative"), TDIST_SUCCESS);
  }
  EXPECT_EQ(tdist_team_malloc(all, 4096), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "failed on member 1 (PE 1): tdist.team_malloc: size -1 is negative"))
      << last_msg();
  EXPECT_EQ(tdist_team_heap_free_bytes(all), before);
  if (me() == 0) {
    ASSERT_EQ(tdist_collective_reject("tdist.team_ctrl_allgather: data must be bytes"), TDIST_SUCCESS);
  }
  int64_t v = 1;
  std::vector<int64_t> out(static_cast<size_t>(npes()));
  EXPECT_EQ(tdist_team_ctrl_allgather(all, &v, out.data(), sizeof v), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(has(last_msg(), "failed on member 0 (PE 0): tdist.team_ctrl_allgather")) << last_msg();
  if (me() == npes() - 1) {
    ASSERT_EQ(tdist_collective_reject("tdist.team_split_2d: xrange"), TDIST_SUCCESS);
  }
  tdist_team_t x = 5, y = 5;
  EXPECT_EQ(tdist_team_split_2d(TDIST_TEAM_WORLD, 1, &cfg, &x, nullptr, &y), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(x, TDIST_TEAM_INVALID);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  void *p = tdist_team_malloc(all, 4096);  // nothing lingers
  ASSERT_NE(p, nullptr) << last_msg();
  EXPECT_EQ(tdist_team_free(all, p), TDIST_SUCCESS);
  EXPECT_EQ(tdist_team_destroy(all), TDIST_SUCCESS);
}

// ---------------------------------------------------------------- bad input

TEST(BadInput, MallocMismatchFailsEverywhereAndChangesNothing) {
  if (npes() == 1) GTEST_SKIP() << "needs two PEs to disagree";
  size_t before = tdist_heap_free_bytes();
  void *p = tdist_malloc(me() == 1 ? 8192 : 4096);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH);
  std::string msg = tdist_last_error_message();
  EXPECT_NE(msg.find("PE 1 called malloc(8192)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malloc(4096)"), std::string::npos) << msg;
  EXPECT_EQ(tdist_heap_free_bytes(), before);
  // the heap is still usable and symmetric
  void *q = tdist_malloc(4096);
  ASSERT_NE(q, nullptr) << tdist_last_error_message();
  auto offs = gather(tdist_heap_offset(q));
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(offs[pe], offs[0]);
  EXPECT_EQ(tdist_free(q), TDIST_SUCCESS);
  // op mismatch: calloc on one PE, malloc on the others
  void *r = me() == 0 ? tdist_calloc(1, 4096) : tdist_malloc(4096);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH);
}

TEST(BadInput, ExhaustionFailsEverywhere) {
  void *p = tdist_malloc(size_t(1) << 39);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  size_t big = tdist_heap_free_bytes();
  void *a = tdist_malloc(big);
  ASSERT_NE(a, nullptr) << tdist_last_error_message();
  void *b = tdist_malloc(1024);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  EXPECT_NE(std::string(tdist_last_error_message()).find("heap exhausted"), std::string::npos);
  EXPECT_EQ(tdist_free(a), TDIST_SUCCESS);
  EXPECT_EQ(tdist_heap_free_bytes(), big);
}

TEST(BadInput, ZeroSizeOverflowAndAlignment) {
  EXPECT_EQ(tdist_malloc(0), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_calloc(SIZE_MAX / 2, 4), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  EXPECT_EQ(tdist_align(3000, 64), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("power of two"), std::string::npos);
}

TEST(BadInput, FreeOfForeignPointerAndDoubleFree) {
  int local = 0;
  EXPECT_EQ(tdist_free(&local), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("not in the symmetric heap"), std::string::npos);
  void *p = tdist_malloc(512);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(tdist_free(p), TDIST_SUCCESS);
  EXPECT_EQ(tdist_free(p), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("double free"), std::string::npos);
  EXPECT_EQ(tdist_free(nullptr), TDIST_SUCCESS);
}

// Control-plane collectives whose PEs disagree fail on every PE, the root included, and leave the
// job usable (a root mismatch used to be silent, a size mismatch returned SUCCESS on the root).
TEST(BadInput, BroadcastMismatchFailsEverywhere) {
  if (npes() < 2) GTEST_SKIP() << "needs two PEs";
  int64_t v = 100 + me();
  // PE 1 names itself the root, the others PE 0.
  EXPECT_EQ(tdist_ctrl_broadcast(&v, sizeof v, me() == 1 ? 1 : 0), TDIST_ERR_COLLECTIVE_MISMATCH);
  EXPECT_NE(std::string(tdist_last_error_message()).find("root"), std::string::npos)
      << tdist_last_error_message();
  EXPECT_EQ(v, 100 + me());
  // The last PE expects half the bytes.
  EXPECT_EQ(tdist_ctrl_broadcast(&v, me() == npes() - 1 ? 4 : 8, 0), TDIST_ERR_COLLECTIVE_MISMATCH);
  std::string m = tdist_last_error_message();
  EXPECT_NE(m.find("8 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("expects 4"), std::string::npos) << m;
  EXPECT_EQ(v, 100 + me());
  // A root out of range on one PE only.
  EXPECT_EQ(tdist_ctrl_broadcast(&v, sizeof v, me() == 0 ? npes() : 0), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("failed on PE 0"), std::string::npos)
      << tdist_last_error_message();
  // All-gather sizes that differ.
  std::vector<int64_t> out(size_t(npes()) * 2);
  EXPECT_EQ(tdist_ctrl_allgather(&v, out.data(), me() == 1 ? 4 : 8), TDIST_ERR_COLLECTIVE_MISMATCH);
  // And then it works.
  EXPECT_EQ(tdist_ctrl_broadcast(&v, sizeof v, npes() - 1), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(v, 100 + npes() - 1);
  ASSERT_EQ(tdist_ctrl_barrier(), TDIST_SUCCESS);
}

// A binding that cannot convert one PE's argument still takes part: every PE fails, none waits.
TEST(BadInput, RejectedArgumentFailsTheCollectiveEverywhere) {
  if (npes() < 2) GTEST_SKIP() << "needs two PEs";
  size_t before = tdist_heap_free_bytes();
  if (me() == 1) ASSERT_EQ(tdist_collective_reject("tdist.malloc: size -1 is negative"), TDIST_SUCCESS);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(tdist_malloc(4096), nullptr);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  std::string m = tdist_last_error_message();
  EXPECT_NE(m.find("failed on PE 1: tdist.malloc: size -1 is negative"), std::string::npos) << m;
  EXPECT_EQ(tdist_heap_free_bytes(), before);
  if (me() == 0) ASSERT_EQ(tdist_collective_reject("bad root"), TDIST_SUCCESS);
  int64_t v = 7;
  EXPECT_EQ(tdist_ctrl_broadcast(&v, sizeof v, 0), TDIST_ERR_INVALID_PARAM);
  void *p = tdist_malloc(4096);  // nothing lingers
  ASSERT_NE(p, nullptr) << tdist_last_error_message();
  EXPECT_EQ(tdist_free(p), TDIST_SUCCESS);
}

TEST(BadInput, PtrTranslation) {
  void *p = tdist_malloc(64);
  int local = 0;
  EXPECT_EQ(tdist_ptr(&local, 0), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("not a symmetric address"), std::string::npos);
  EXPECT_EQ(tdist_ptr(p, npes()), nullptr);
  EXPECT_NE(std::string(tdist_last_error_message()).find("out of range"), std::string::npos);
  EXPECT_EQ(tdist_ptr(p, -1), nullptr);
  EXPECT_EQ(tdist_ptr(p, me()), p);
  tdist_free(p);
}

TEST(BadInput, DoubleInitAndBadLaunch) {
  tdist_init_attr_t a = default_attr();
  EXPECT_EQ(tdist_init_from_env(&a), TDIST_ERR_INVALID_VALUE);
  EXPECT_NE(std::string(tdist_last_error_message()).find("already initialised"), std::string::npos);
  EXPECT_EQ(tdist_cpu_launch(0, [](void *) {}, nullptr), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cpu_launch(1, nullptr, nullptr), TDIST_ERR_INVALID_PARAM);
}

TEST(BadInput, WaitTimesOutWithDiagnostic) {
  auto *slot = static_cast<int64_t *>(tdist_calloc(8, sizeof(int64_t)));
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  // Shorten the bound for this test only: nobody ever sets the slot.
  auto *s = const_cast<tdist_device_state_t *>(tdist_host_device_state());
  uint64_t saved = s->wait_timeout_ns;
  s->wait_timeout_ns = 200'000'000;
  auto t0 = std::chrono::steady_clock::now();
  int rc =
      tdist_cpu_launch(2, [](void *p) { tdistx_wait_int64(static_cast<int64_t *>(p) + 8 * 0, 1, 42); }, slot);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s->wait_timeout_ns = saved;
  EXPECT_EQ(rc, TDIST_ERR_TIMEOUT);
  std::string msg = tdist_last_error_message();
  EXPECT_NE(msg.find("expected 42"), std::string::npos) << msg;
  EXPECT_NE(msg.find("saw 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(tdist_heap_offset(slot))), std::string::npos) << msg;
  EXPECT_LT(secs, 5.0);
  // the fault was reported and cleared: the next launch works
  EXPECT_EQ(tdist_cpu_launch(1, [](void *) {}, nullptr), TDIST_SUCCESS);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(slot);
}

// ---------------------------------------------------------------- engines (re-initialises)

class Engines : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Engines, ReinitAndAllToAll) {
  ASSERT_EQ(tdist_finalize(), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(tdist_malloc(16), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
  tdist_init_attr_t a = default_attr(GetParam());
  ASSERT_EQ(tdist_init_from_env(&a), TDIST_SUCCESS) << tdist_last_error_message();
  const size_t n = 100003;  // odd size on purpose
  auto *dst = static_cast<uint8_t *>(tdist_malloc(n * npes()));
  std::vector<uint8_t> src(n * npes());
  for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(me(), i, GetParam());
  std::memset(dst, 0xCC, n * npes());
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  for (int k = 0; k < npes(); ++k) {
    int pe = (me() + k) % npes();
    tdist_putmem_nbi(dst + me() * n, src.data() + pe * n, n, pe);
  }
  tdist_quiet();
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  for (int pe = 0; pe < npes(); ++pe)
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(dst[pe * n + i], pattern(pe, me() * n + i, GetParam())) << "from PE " << pe;
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(dst);
}

INSTANTIATE_TEST_SUITE_P(AllEngines, Engines,
                         ::testing::Values(uint32_t(TDIST_ENGINE_SDMA), uint32_t(TDIST_ENGINE_UDMA),
                                           uint32_t(TDIST_ENGINE_MTE)));

TDIST_TEST_MAIN()
