// The aclshmem link-time symbols on CPU ranks (runtime/CPU/aclshmem.h): what a kernel compiled by
// triton-ascend + tdist calls. C++ "kernels" call the _mlir_ciface_ names directly, launched on a
// 2-D grid with tdist_cpu_launch_grid, under tdist-run at 2 and 4 ranks; fresh random inputs every
// run (TDIST_TEST_SEED to repeat one), every rank checks what it received. The AclshmemFaults
// suite runs on one rank with a short wait bound (--wait-timeout-ms, through the init attribute).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CPU/aclshmem.h"
#include "common/mp_env.hpp"
#include "tdist/CPU/launch.h"
#include "tdist/abi.h"

namespace {

int me() { return tdist_my_pe(); }
int npes() { return tdist_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }

int64_t I(const void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }
template <class T>
T *P(int64_t a) {
  return reinterpret_cast<T *>(static_cast<intptr_t>(a));
}

// Failures seen by kernel programs (threads): counted, the first one kept for the report.
struct KernelErrors {
  std::atomic<int> count{0};
  std::mutex mu;
  std::string first;
  void add(const std::string &m) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> g(mu);
      first = m;
    }
  }
  ::testing::AssertionResult ok() {
    if (count.load() == 0) return ::testing::AssertionSuccess();
    std::lock_guard<std::mutex> g(mu);
    return ::testing::AssertionFailure()
           << count.load() << " kernel check(s) failed on PE " << me() << ", first: " << first;
  }
};

std::string fmt(const char *f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

#define KCHECK(errs, cond, ...)                                                                \
  do {                                                                                         \
    if (!(cond)) (errs).add(fmt("%s:%d: %s: ", __FILE__, __LINE__, #cond) + fmt(__VA_ARGS__)); \
  } while (0)

// Grid coordinates of the calling program, decomposed as include/tdist/CPU/launch.h documents.
struct Coord {
  int32_t pid, x, y, z, gx, gy, gz, n;
};

// Every kernel of this file gets args[0] = its context; the context starts with this header, so
// the coordinate bookkeeping (each (x, y, z) exactly once) is shared.
struct KernelBase {
  KernelErrors errs;
  std::vector<std::atomic<int>> visits;
  explicit KernelBase(int n) : visits(n) {}
};

Coord coord(void *p, KernelBase *k) {
  auto *pack = static_cast<tdist_kernel_pack_t *>(p);
  Coord c;
  c.pid = tdistx_program_id(0);
  c.gx = pack->grid[0];
  c.gy = pack->grid[1];
  c.gz = pack->grid[2];
  c.n = c.gx * c.gy * c.gz;
  c.x = c.pid % c.gx;
  c.y = (c.pid / c.gx) % c.gy;
  c.z = c.pid / (c.gx * c.gy);
  KCHECK(k->errs, tdistx_num_programs(0) == c.n, "num_programs %d, grid %d x %d x %d", tdistx_num_programs(0),
         c.gx, c.gy, c.gz);
  KCHECK(k->errs, c.z < c.gz, "pid %d: z %d", c.pid, c.z);
  if (c.pid >= 0 && c.pid < int(k->visits.size())) k->visits[c.pid].fetch_add(1);
  return c;
}

template <class K>
K *ctx_of(void *p) {
  return static_cast<K *>(static_cast<tdist_kernel_pack_t *>(p)->args[0]);
}

::testing::AssertionResult launched_once(KernelBase &k) {
  for (size_t i = 0; i < k.visits.size(); ++i)
    if (k.visits[i].load() != 1)
      return ::testing::AssertionFailure() << "program " << i << " ran " << k.visits[i].load() << " times";
  return ::testing::AssertionSuccess();
}

template <class K>
int launch(const int32_t (&grid)[3], K &ctx, tdist_cpu_kernel_fn fn) {
  for (auto &v : ctx.visits) v.store(0);
  void *args[1] = {&ctx};
  return tdist_cpu_launch_grid(grid, fn, args);
}

std::mt19937_64 &rng() {
  static std::mt19937_64 g(tdist_test::run_seed() ^ 0xac15e33ull);  // same stream on every PE
  return g;
}

// ------------------------------------------------------------------ ring put through ptr + stores

struct RingCtx : KernelBase {
  using KernelBase::KernelBase;
  float *data;     // symmetric: [programs][n] floats, written by the left PE
  int32_t *sig32;  // symmetric: one int32 slot per program (64 B apart), then an ADD counter
  int64_t n;       // floats per program
  int32_t epoch;   // this repetition's SET value
  int32_t count;   // the counter's value once every program of the left PE added 1
  uint64_t salt;
};

float ring_value(int pe, int64_t i, uint64_t salt) {
  return float(int(tdist_test::pattern(pe, size_t(i), salt)) - 128) * 0.375f + float(salt % 7);
}

void ring_kernel(void *p) {
  auto *k = ctx_of<RingCtx>(p);
  Coord c = coord(p, k);
  KCHECK(k->errs, _mlir_ciface_aclshmem_my_pe() == me(), "my_pe %d", _mlir_ciface_aclshmem_my_pe());
  KCHECK(k->errs, _mlir_ciface_aclshmem_n_pes() == npes(), "n_pes %d", _mlir_ciface_aclshmem_n_pes());
  float *chunk = k->data + c.pid * k->n;
  auto *remote = P<float>(_mlir_ciface_aclshmem_ptr_float(I(chunk), right()));
  KCHECK(k->errs, remote && remote == tdist_ptr(chunk, right()), "ptr_float to PE %d: %p", right(),
         static_cast<void *>(remote));
  // Later programs write later, so a wait that looked at fewer slots than asked would read
  // chunks that are not there yet.
  std::this_thread::sleep_for(std::chrono::microseconds(300 * c.pid));
  if (remote)
    for (int64_t i = 0; i < k->n; ++i) remote[i] = ring_value(me(), c.pid * k->n + i, k->salt);
  _mlir_ciface_aclshmem_fence();
  _mlir_ciface_aclshmemx_signal_op(I(k->sig32 + c.pid * 16), k->epoch, TDIST_SIGNAL_SET, right());
  // Every program waits for all programs of the left PE (n slots, 64 bytes apart), then reads the
  // chunk another program received: only the multi-slot wait orders that read.
  int32_t tok = _mlir_ciface_aclshmem_wait_int32(I(k->sig32), c.n, k->epoch);
  KCHECK(k->errs, tok == 0, "token %d", tok);
  auto *d = P<float>(_mlir_ciface_aclshmem_consume_token_float_ptr(I(k->data), tok));
  KCHECK(k->errs, d == k->data, "consume_token_float_ptr returned %p", static_cast<void *>(d));
  const int32_t q = (c.pid + 1) % c.n;
  for (int64_t i = 0; i < k->n; ++i) {
    float want = ring_value(left(), q * k->n + i, k->salt);
    if (d[q * k->n + i] != want) {
      k->errs.add(fmt("program (%d, %d): chunk %d element %lld = %g, expected %g from PE %d", c.x, c.y, q,
                      (long long)i, double(d[q * k->n + i]), double(want), left()));
      break;
    }
  }
  // ADD: the counter reaches one per program of the left PE and repetition.
  _mlir_ciface_aclshmemx_signal_op(I(k->sig32 + c.n * 16), 1, TDIST_SIGNAL_ADD, right());
  _mlir_ciface_aclshmem_wait_int32(I(k->sig32 + c.n * 16), 1, k->count);
  KCHECK(k->errs, k->sig32[c.n * 16] == k->count, "ADD counter %d, expected %d", k->sig32[c.n * 16],
         k->count);
}

TEST(Aclshmem, RingPutThroughPtrAndI32Signals) {
  const int32_t grid[3] = {3, 2, 1};
  const int P_ = 6;
  RingCtx k(P_);
  k.n = 17 + int64_t(rng()() % 200);
  k.data = static_cast<float *>(tdist_malloc(size_t(P_ * k.n) * sizeof(float)));
  k.sig32 = static_cast<int32_t *>(tdist_calloc(size_t(P_ + 1) * 16, sizeof(int32_t)));
  ASSERT_TRUE(k.data && k.sig32) << tdist_last_error_message();
  const int32_t base = 1 + int32_t(rng()() % 1000000);
  for (int rep = 0; rep < 3; ++rep) {
    std::memset(k.data, 0xFF, size_t(P_ * k.n) * sizeof(float));  // NaN until the left PE writes
    k.epoch = base + rep;
    k.count = P_ * (rep + 1);
    k.salt = rng()();
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);  // everyone poisoned before anyone writes
    ASSERT_EQ(launch(grid, k, ring_kernel), TDIST_SUCCESS) << tdist_last_error_message();
    EXPECT_TRUE(k.errs.ok()) << "rep " << rep;
    EXPECT_TRUE(launched_once(k));
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);  // the right PE has checked this rep
  }
  tdist_free(k.sig32);
  tdist_free(k.data);
}

// ------------------------------------------- 64-bit signals: p, putmem_signal[_nbi], typed waits

struct Sig64Ctx : KernelBase {
  using KernelBase::KernelBase;
  int64_t *s64;    // symmetric, one slot per program
  uint64_t *u64;   // symmetric, one slot per program
  uint64_t *psig;  // symmetric, putmem_signal's slot per program
  uint8_t *inbox;  // symmetric, [programs][m] bytes from the left PE
  uint8_t *src;    // local, [programs][m] bytes this PE sends
  int64_t m;
  int64_t v;       // int64_p value (negative)
  uint64_t u;      // uint64_p value (high bit set)
  uint64_t sig_k;  // putmem_signal's slots reach (rep + 1) * sig_k: SET writes it, ADD adds sig_k
  int rep;
  uint64_t salt;
};

void sig64_kernel(void *p) {
  auto *k = ctx_of<Sig64Ctx>(p);
  Coord c = coord(p, k);
  _mlir_ciface_aclshmem_int64_p(I(k->s64 + c.pid * 8), k->v, right());
  _mlir_ciface_aclshmem_uint64_p(I(k->u64 + c.pid * 8), int64_t(k->u), right());
  const uint64_t target = uint64_t(k->rep + 1) * k->sig_k;
  const int64_t off = c.pid * k->m;
  if (c.y == 0)  // blocking form, SET
    _mlir_ciface_aclshmem_putmem_signal(I(k->inbox + off), I(k->src + off), k->m, I(k->psig + c.pid * 8),
                                        int64_t(target), TDIST_SIGNAL_SET, right());
  else  // non-blocking form, ADD
    _mlir_ciface_aclshmem_putmem_signal_nbi(I(k->inbox + off), I(k->src + off), k->m, I(k->psig + c.pid * 8),
                                            int64_t(k->sig_k), TDIST_SIGNAL_ADD, right());
  _mlir_ciface_aclshmem_quiet();
  int32_t tok = _mlir_ciface_aclshmem_wait_int64(I(k->s64), c.n, k->v);
  tok |= _mlir_ciface_aclshmem_wait_uint64(I(k->u64), c.n, k->u);
  tok |= _mlir_ciface_aclshmem_wait_uint64(I(k->psig), c.n, target);
  KCHECK(k->errs, tok == 0, "token %d", tok);
  // signal_wait_until compares as int64: v is negative, so LE v holds only for v itself.
  int64_t seen = _mlir_ciface_aclshmem_signal_wait_until(I(k->s64 + c.pid * 8), TDIST_CMP_LE, k->v);
  KCHECK(k->errs, seen == k->v, "signal_wait_until(LE) saw %lld, expected %lld", (long long)seen,
         (long long)k->v);
  seen = _mlir_ciface_aclshmem_signal_wait_until(I(k->psig + c.pid * 8), TDIST_CMP_GE, int64_t(target));
  KCHECK(k->errs, seen == int64_t(target), "signal_wait_until(GE) saw %lld", (long long)seen);
  // After the waits every slot holds exactly what the left PE sent.
  for (int32_t q = 0; q < c.n; ++q) {
    KCHECK(k->errs, k->s64[q * 8] == k->v, "s64 slot %d = %lld", q, (long long)k->s64[q * 8]);
    KCHECK(k->errs, k->u64[q * 8] == k->u, "u64 slot %d = %llu", q, (unsigned long long)k->u64[q * 8]);
    KCHECK(k->errs, k->psig[q * 8] == target, "putmem_signal slot %d = %llu, expected %llu", q,
           (unsigned long long)k->psig[q * 8], (unsigned long long)target);
  }
  const int64_t x64 = int64_t(k->salt ^ uint64_t(c.pid));
  const int32_t x32 = int32_t(k->salt >> 17) - c.pid;
  KCHECK(k->errs, _mlir_ciface_aclshmem_consume_token_int64(x64, tok) == x64, "consume_token_int64");
  KCHECK(k->errs, _mlir_ciface_aclshmem_consume_token_int32(x32, tok) == x32, "consume_token_int32");
  auto *in = P<uint8_t>(_mlir_ciface_aclshmem_consume_token_uint8_ptr(I(k->inbox), tok));
  const int32_t q = (c.pid + c.gx) % c.n;  // a chunk sent by the other row, the other form
  for (int64_t i = 0; i < k->m; ++i) {
    uint8_t want = tdist_test::pattern(left(), size_t(q * k->m + i), k->salt);
    if (in[q * k->m + i] != want) {
      k->errs.add(fmt("program (%d, %d): byte %lld of chunk %d = %d, expected %d from PE %d", c.x, c.y,
                      (long long)i, q, in[q * k->m + i], want, left()));
      break;
    }
  }
}

TEST(Aclshmem, SixtyFourBitSignalsAndPutmemSignal) {
  const int32_t grid[3] = {2, 2, 1};
  const int P_ = 4;
  Sig64Ctx k(P_);
  k.m = 1000 + int64_t(rng()() % 3000);  // odd sizes too
  k.s64 = static_cast<int64_t *>(tdist_calloc(P_ * 8, sizeof(int64_t)));
  k.u64 = static_cast<uint64_t *>(tdist_calloc(P_ * 8, sizeof(uint64_t)));
  k.psig = static_cast<uint64_t *>(tdist_calloc(P_ * 8, sizeof(uint64_t)));
  k.inbox = static_cast<uint8_t *>(tdist_malloc(size_t(P_ * k.m)));
  ASSERT_TRUE(k.s64 && k.u64 && k.psig && k.inbox) << tdist_last_error_message();
  std::vector<uint8_t> src(size_t(P_ * k.m));
  k.src = src.data();
  k.sig_k = 1 + rng()() % 100000;
  for (int rep = 0; rep < 3; ++rep) {
    k.rep = rep;
    k.salt = rng()();
    k.v = -int64_t(1 + (rng()() >> 2));
    k.u = rng()() | (1ull << 63);
    for (size_t i = 0; i < src.size(); ++i) src[i] = tdist_test::pattern(me(), i, k.salt);
    std::memset(k.inbox, 0xA5, size_t(P_ * k.m));
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
    ASSERT_EQ(launch(grid, k, sig64_kernel), TDIST_SUCCESS) << tdist_last_error_message();
    EXPECT_TRUE(k.errs.ok()) << "rep " << rep;
    EXPECT_TRUE(launched_once(k));
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  }
  tdist_free(k.inbox);
  tdist_free(k.psig);
  tdist_free(k.u64);
  tdist_free(k.s64);
}

// ------------------------------------------------- putmem / getmem [_nbi], quiet and the barriers

struct RmaCtx : KernelBase {
  using KernelBase::KernelBase;
  uint8_t *inbox;   // symmetric, written by the left PE
  uint8_t *outbox;  // symmetric, this PE's data (phase 1: salt1, phase 2: salt2)
  int64_t m;
  uint64_t salt1, salt2;
};

bool bytes_match(KernelErrors &errs, const char *what, const uint8_t *got, int pe, size_t base, int64_t m,
                 uint64_t salt) {
  for (int64_t i = 0; i < m; ++i)
    if (got[i] != tdist_test::pattern(pe, base + size_t(i), salt)) {
      errs.add(fmt("%s: byte %lld = %d, expected %d (PE %d's data)", what, (long long)i, got[i],
                   tdist_test::pattern(pe, base + size_t(i), salt), pe));
      return false;
    }
  return true;
}

void rma_kernel(void *p) {
  auto *k = ctx_of<RmaCtx>(p);
  Coord c = coord(p, k);
  const int64_t off = c.pid * k->m;
  const int32_t q = (c.pid + 1) % c.n;
  // phase 1: push my chunk to the right PE, barrier, check what the left PE pushed
  if (c.pid % 2 == 0)
    _mlir_ciface_aclshmem_putmem(I(k->inbox + off), I(k->outbox + off), k->m, right());
  else
    _mlir_ciface_aclshmem_putmem_nbi(I(k->inbox + off), I(k->outbox + off), k->m, right());
  _mlir_ciface_aclshmem_quiet();
  _mlir_ciface_aclshmem_barrier_all();
  bytes_match(k->errs, "putmem then barrier_all", k->inbox + q * k->m, left(), size_t(q * k->m), k->m,
              k->salt1);
  // pull the left PE's chunk back out of its outbox
  std::vector<uint8_t> got(size_t(k->m));
  if (c.pid % 2 == 0)
    _mlir_ciface_aclshmem_getmem(I(got.data()), I(k->outbox + q * k->m), k->m, left());
  else
    _mlir_ciface_aclshmem_getmem_nbi(I(got.data()), I(k->outbox + q * k->m), k->m, left());
  _mlir_ciface_aclshmem_quiet();
  bytes_match(k->errs, "getmem", got.data(), left(), size_t(q * k->m), k->m, k->salt1);
  _mlir_ciface_aclshmem_barrier_all();  // every PE has read phase 1 before anyone overwrites it
  // phase 2: every program rewrites its outbox chunk and pushes it; barrier_all_vec orders the read
  for (int64_t i = 0; i < k->m; ++i)
    k->outbox[off + i] = tdist_test::pattern(me(), size_t(off + i), k->salt2);
  _mlir_ciface_aclshmem_putmem(I(k->inbox + off), I(k->outbox + off), k->m, right());
  _mlir_ciface_aclshmem_fence();
  _mlir_ciface_aclshmemx_barrier_all_vec();
  bytes_match(k->errs, "putmem then barrier_all_vec", k->inbox + q * k->m, left(), size_t(q * k->m), k->m,
              k->salt2);
}

TEST(Aclshmem, PutGetQuietAndBarriers) {
  const int32_t grid[3] = {2, 3, 1};
  const int P_ = 6;
  RmaCtx k(P_);
  k.m = 500 + int64_t(rng()() % 5000);
  k.inbox = static_cast<uint8_t *>(tdist_malloc(size_t(P_ * k.m)));
  k.outbox = static_cast<uint8_t *>(tdist_malloc(size_t(P_ * k.m)));
  ASSERT_TRUE(k.inbox && k.outbox) << tdist_last_error_message();
  for (int rep = 0; rep < 2; ++rep) {
    k.salt1 = rng()();
    k.salt2 = rng()();
    for (int64_t i = 0; i < P_ * k.m; ++i) k.outbox[i] = tdist_test::pattern(me(), size_t(i), k.salt1);
    std::memset(k.inbox, 0x5A, size_t(P_ * k.m));
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
    ASSERT_EQ(launch(grid, k, rma_kernel), TDIST_SUCCESS) << tdist_last_error_message();
    EXPECT_TRUE(k.errs.ok()) << "rep " << rep;
    EXPECT_TRUE(launched_once(k));
    ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  }
  tdist_free(k.outbox);
  tdist_free(k.inbox);
}

// ------------------------------------------------------- every ptr / consume_token pointer variant

struct VariantsCtx : KernelBase {
  using KernelBase::KernelBase;
  char *sym;
};

void variants_kernel(void *p) {
  auto *k = ctx_of<VariantsCtx>(p);
  Coord c = coord(p, k);
  char *a = k->sym + 64 * c.pid;
  const int32_t tok = int32_t(c.pid);
  for (int pe = 0; pe < npes(); ++pe) {
#define TDIST_ASCEND_PTR_TYPE(tname)                                                              \
  KCHECK(k->errs, _mlir_ciface_aclshmem_ptr_##tname(I(a), pe) == I(tdist_ptr(a, pe)),             \
         "aclshmem_ptr_" #tname " to PE %d", pe);                                                 \
  KCHECK(k->errs, _mlir_ciface_aclshmem_consume_token_##tname##_ptr(I(a) + pe, tok) == I(a) + pe, \
         "aclshmem_consume_token_" #tname "_ptr");
#include "Ascend/symbols.def"
  }
  KCHECK(k->errs, _mlir_ciface_aclshmem_consume_token_ptr(I(a), tok) == I(a), "consume_token_ptr");
}

TEST(Aclshmem, EveryPtrAndConsumeTokenVariant) {
  const int32_t grid[3] = {2, 2, 1};
  VariantsCtx k(4);
  k.sym = static_cast<char *>(tdist_malloc(4 * 64));
  ASSERT_TRUE(k.sym);
  ASSERT_EQ(launch(grid, k, variants_kernel), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_TRUE(k.errs.ok());
  EXPECT_TRUE(launched_once(k));
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  tdist_free(k.sym);
}

// ------------------------------------------------------ block events among programs of one launch

struct EventsCtx : KernelBase {
  using KernelBase::KernelBase;
  int rounds;
  int32_t ev_base;             // producer column x uses event (ev_base + x) % 16
  int32_t ev_barrier;          // sync_block_all's event
  std::vector<int64_t> box;    // [gx][rounds], producer (x, 0) -> consumer (x, 1)
  std::vector<int64_t> board;  // [programs], sync_block_all phases
  uint64_t salt;
};

int64_t ev_value(int x, int r, uint64_t salt) { return int64_t(salt % 1000003) * 131 + x * 1009 + r + 1; }

void events_kernel(void *p) {
  auto *k = ctx_of<EventsCtx>(p);
  Coord c = coord(p, k);
  const int32_t ev = (k->ev_base + c.x) % 16;
  if (c.y == 0) {  // producer: round r's value, then one set; late on purpose after the first round
    for (int r = 0; r < k->rounds; ++r) {
      if (r) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      k->box[c.x * k->rounds + r] = ev_value(c.x, r, k->salt);
      tdist_cpu_sync_block_set(ev);
    }
  } else {  // consumer: each wait consumes one set, so round r's value is there (and only r's)
    for (int r = 0; r < k->rounds; ++r) {
      tdist_cpu_sync_block_wait(ev);
      int64_t got = k->box[c.x * k->rounds + r];
      KCHECK(k->errs, got == ev_value(c.x, r, k->salt),
             "consumer %d round %d (event %d): %lld, expected %lld", c.x, r, ev, (long long)got,
             (long long)ev_value(c.x, r, k->salt));
    }
  }
  // sync_block_all: a reusable barrier over all programs; each phase reads a neighbour's write
  for (int phase = 0; phase < 3; ++phase) {
    std::this_thread::sleep_for(std::chrono::microseconds(200 * ((c.pid + phase) % 3)));
    k->board[c.pid] = ev_value(c.pid, 100 + phase, k->salt);
    tdist_cpu_sync_block_all(k->ev_barrier);
    const int32_t q = (c.pid + 1 + phase) % c.n;
    int64_t got = k->board[q];
    KCHECK(k->errs, got == ev_value(q, 100 + phase, k->salt), "phase %d program %d read %lld from %d", phase,
           c.pid, (long long)got, q);
    tdist_cpu_sync_block_all(k->ev_barrier);
  }
}

// Launch 1 leaves one set of an event unconsumed; launch 2 must start with no sets.
struct ResetCtx : KernelBase {
  using KernelBase::KernelBase;
  int32_t ev;
  int launch_no;
  std::atomic<int64_t> value{0};
  int64_t want;
};

void reset_kernel(void *p) {
  auto *k = ctx_of<ResetCtx>(p);
  Coord c = coord(p, k);
  if (k->launch_no == 1) {
    if (c.x == 0) {
      tdist_cpu_sync_block_set(k->ev);
      tdist_cpu_sync_block_set(k->ev);
    } else {
      tdist_cpu_sync_block_wait(k->ev);
    }
    return;
  }
  if (c.x == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    k->value.store(k->want, std::memory_order_relaxed);
    tdist_cpu_sync_block_set(k->ev);
  } else {
    tdist_cpu_sync_block_wait(k->ev);
    int64_t got = k->value.load(std::memory_order_relaxed);
    KCHECK(k->errs, got == k->want, "second launch saw %lld: a set left over from the first launch",
           (long long)got);
  }
}

TEST(Aclshmem, BlockEventsWithinALaunch) {
  const int32_t grid[3] = {4, 2, 1};
  EventsCtx k(8);
  k.rounds = 3;
  k.box.assign(size_t(4 * k.rounds), 0);
  k.board.assign(8, 0);
  k.ev_base = int32_t(rng()() % 16);
  k.ev_barrier = int32_t(rng()() % 16);
  k.salt = rng()();
  ASSERT_EQ(launch(grid, k, events_kernel), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_TRUE(k.errs.ok());
  EXPECT_TRUE(launched_once(k));

  const int32_t pair[3] = {2, 1, 1};
  ResetCtx r(2);
  r.ev = int32_t(rng()() % 16);
  r.want = int64_t(rng()() >> 1) + 1;
  for (r.launch_no = 1; r.launch_no <= 2; ++r.launch_no)
    ASSERT_EQ(launch(pair, r, reset_kernel), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_TRUE(r.errs.ok());
  EXPECT_TRUE(launched_once(r));
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
}

// ------------------------------------------------------------------ faults (one rank, short bound)

bool contains(const std::string &s, const std::string &what) { return s.find(what) != std::string::npos; }

struct WaitCtx : KernelBase {
  using KernelBase::KernelBase;
  int32_t *slots;
  int32_t n;
  int32_t value;
};

TEST(AclshmemFaults, WaitThatNeverCompletesNamesTheSlot) {
  WaitCtx k(2);
  k.n = 3 + int32_t(rng()() % 4);
  k.value = 1 + int32_t(rng()() % 100000);
  k.slots = static_cast<int32_t *>(tdist_calloc(size_t(k.n) * 16, sizeof(int32_t)));
  ASSERT_TRUE(k.slots);
  const int32_t missing = int32_t(rng()() % uint64_t(k.n));
  for (int32_t i = 0; i < k.n; ++i)
    if (i != missing) k.slots[i * 16] = k.value;
  const int32_t grid[3] = {2, 1, 1};
  auto t0 = std::chrono::steady_clock::now();
  int rc = launch(grid, k, [](void *p) {
    auto *c = ctx_of<WaitCtx>(p);
    coord(p, c);
    _mlir_ciface_aclshmem_wait_int32(I(c->slots), c->n, c->value);
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, TDIST_ERR_TIMEOUT);
  std::string msg = tdist_last_error_message();
  const int64_t slot_off = tdist_heap_offset(k.slots) + 64 * missing;
  EXPECT_TRUE(contains(msg, "heap offset " + std::to_string(slot_off) + ":"))
      << msg << " (slot " << missing << ")";
  EXPECT_TRUE(contains(msg, "expected " + std::to_string(k.value))) << msg;
  EXPECT_TRUE(contains(msg, "saw 0")) << msg;
  EXPECT_LT(secs, 10.0) << "the wait bound (--wait-timeout-ms) was not applied";
  // reported and cleared: the next launch runs, and completes once the slot is set
  k.slots[missing * 16] = k.value;
  EXPECT_EQ(launch(grid, k,
                   [](void *p) {
                     auto *c = ctx_of<WaitCtx>(p);
                     coord(p, c);
                     _mlir_ciface_aclshmem_wait_int32(I(c->slots), c->n, c->value);
                   }),
            TDIST_SUCCESS)
      << tdist_last_error_message();
  tdist_free(k.slots);
}

struct EvCtx : KernelBase {
  using KernelBase::KernelBase;
  int32_t ev;
};

TEST(AclshmemFaults, BlockEventWaitThatNeverCompletesNamesTheEvent) {
  EvCtx k(2);
  k.ev = int32_t(rng()() % 16);
  const int32_t grid[3] = {1, 2, 1};
  int rc = launch(grid, k, [](void *p) {
    auto *c = ctx_of<EvCtx>(p);
    if (coord(p, c).y == 1) tdist_cpu_sync_block_wait(c->ev);  // nobody sets it
  });
  EXPECT_EQ(rc, TDIST_ERR_TIMEOUT);
  std::string msg = tdist_last_error_message();
  EXPECT_TRUE(contains(msg, "block event " + std::to_string(k.ev) + " ")) << msg;
  EXPECT_TRUE(contains(msg, "sync_block_wait")) << msg;
  // the barrier form too
  rc = launch(grid, k, [](void *p) {
    auto *c = ctx_of<EvCtx>(p);
    if (coord(p, c).y == 1) tdist_cpu_sync_block_all(c->ev);  // program 0 never arrives
  });
  EXPECT_EQ(rc, TDIST_ERR_TIMEOUT);
  msg = tdist_last_error_message();
  EXPECT_TRUE(contains(msg, "block event " + std::to_string(k.ev) + " barrier")) << msg;
  EXPECT_TRUE(contains(msg, "1 of 2 programs arrived")) << msg;
}

TEST(AclshmemFaults, BadEventIdAndOutsideALaunch) {
  EvCtx k(1);
  const int32_t one[3] = {1, 1, 1};
  for (int32_t bad : {16, -1}) {
    k.ev = bad;
    int rc = launch(one, k, [](void *p) {
      auto *c = ctx_of<EvCtx>(p);
      coord(p, c);
      tdist_cpu_sync_block_set(c->ev);
    });
    EXPECT_EQ(rc, TDIST_ERR_INVALID_PARAM);
    EXPECT_TRUE(contains(tdist_last_error_message(), "event id " + std::to_string(bad) + " out of range"))
        << tdist_last_error_message();
  }
  tdist_cpu_sync_block_wait(3);  // not in a kernel: an error, not a hang
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(contains(tdist_last_error_message(), "outside a tdist_cpu_launch kernel"))
      << tdist_last_error_message();
}

TEST(AclshmemFaults, BadAddressGetsTheAbiError) {
  EvCtx k(1);
  const int32_t one[3] = {1, 1, 1};
  int rc = launch(one, k, [](void *p) {
    auto *c = ctx_of<EvCtx>(p);
    coord(p, c);
    int local = 0;
    KCHECK(c->errs, _mlir_ciface_aclshmem_ptr_float(I(&local), 0) == 0, "non-heap address translated");
  });
  EXPECT_EQ(rc, TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(contains(tdist_last_error_message(), "not a symmetric address")) << tdist_last_error_message();
  EXPECT_TRUE(k.errs.ok());
}

TEST(AclshmemFaults, GridOverTheLimitIsRefused) {
  EvCtx k(1);
  auto noop = [](void *) {};
  const int32_t big[3] = {64, 32, 1};  // 2048 programs
  EXPECT_EQ(launch(big, k, noop), TDIST_ERR_INVALID_PARAM);
  std::string msg = tdist_last_error_message();
  EXPECT_TRUE(contains(msg, "grid 64 x 32 x 1 = 2048 programs")) << msg;
  EXPECT_TRUE(contains(msg, std::to_string(TDIST_CPU_MAX_GRID))) << msg;
  const int32_t huge[3] = {65536, 65536, 2};  // the product does not fit 32 bits
  EXPECT_EQ(launch(huge, k, noop), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(contains(tdist_last_error_message(), "8589934592 programs")) << tdist_last_error_message();
  const int32_t zero[3] = {4, 0, 1};
  EXPECT_EQ(launch(zero, k, noop), TDIST_ERR_INVALID_PARAM);
  EXPECT_TRUE(contains(tdist_last_error_message(), "grid 4 x 0 x 1")) << tdist_last_error_message();
  const int32_t edge[3] = {TDIST_CPU_MAX_GRID + 1, 1, 1};
  EXPECT_EQ(launch(edge, k, noop), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cpu_launch_grid(nullptr, noop, nullptr), TDIST_ERR_INVALID_PARAM);
  const int32_t ok[3] = {1, 1, 1};
  EXPECT_EQ(launch(ok, k, noop), TDIST_SUCCESS) << tdist_last_error_message();
}

// The default set-up, except that TDIST_WAIT_TIMEOUT_MS (tdist-run --wait-timeout-ms) bounds waits.
class Environment : public tdist_test::MpEnvironment {
 public:
  void SetUp() override {
    tdist_init_attr_t a = tdist_test::default_attr();
    if (const char *e = std::getenv("TDIST_WAIT_TIMEOUT_MS"))
      a.option_attr.wait_timeout_ms = std::strtoull(e, nullptr, 10);
    int rc = tdist_init_from_env(&a);
    ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
  }
};

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(fail_fast, true);  // a failing rank leaves at once, so peers never wait on it
  ::testing::AddGlobalTestEnvironment(new Environment);
  return RUN_ALL_TESTS();
}
