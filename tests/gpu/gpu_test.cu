// GPU suite of the NVIDIA backend: every device primitive, every engine, collective-alloc errors,
// the device barrier under skew. Run under tdist-run with 1, 2, 4, 8 ranks (several ranks share a
// GPU under MPS). Every test skips, with the reason, when no GPU is visible (CI).
//
// Data is drawn fresh per run (seed agreed over the control plane; TDIST_TEST_SEED repeats one),
// destinations are poisoned first, moved data is compared exactly.
#include "tdist/NVIDIA/device.cuh"  // before tdist.h: declares the ABI as __device__ functions
#include "tdist/tdist.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

bool g_gpu = false;
std::string g_why;

#define CK(call)                                                           \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)
#define TD(call) ASSERT_EQ((call), TDIST_SUCCESS) << #call << ": " << tdist_last_error_message()

// Host side: this file declares the ABI names as __device__ functions, so ask the host state.
int me() { return tdist_host_device_state()->my_pe; }
int npes() { return tdist_host_device_state()->n_pes; }
// Whether PE pe is reached through the ROCE engine (NVSHMEM; tdist_gpu_tests_nvshmem under
// TDIST_ROCE_PEERS=all): no load/store mapping, an rdma base.
bool engine_peer(int pe) {
  const tdist_device_state_t *s = tdist_host_device_state();
  return s->p2p_heap_base[pe] == nullptr && s->rdma_heap_base && s->rdma_heap_base[pe] != nullptr;
}

uint64_t run_seed() {
  static uint64_t seed = [] {
    uint64_t s = std::random_device{}();
    if (const char *e = std::getenv("TDIST_TEST_SEED")) s = std::strtoull(e, nullptr, 10);
    tdist_ctrl_broadcast(&s, sizeof s, 0);
    return s;
  }();
  return seed;
}

// Byte i of PE pe's data in round `salt`: same function on host and device.
__host__ __device__ inline uint8_t gen(uint64_t seed, int pe, uint64_t i, uint64_t salt) {
  uint64_t x = seed ^ (uint64_t(pe + 1) * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull) ^
               (salt * 0xD6E8FEB86659FD93ull);
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return uint8_t(x);
}

std::vector<uint8_t> host_gen(int pe, size_t n, uint64_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = gen(run_seed(), pe, i, salt);
  return v;
}

// Device-state field write for tests that need another wait timeout (restored afterwards).
void set_wait_timeout_ns(uint64_t ns) {
  auto *st = static_cast<char *>(tdist_cuda_device_state());
  cudaMemcpy(st + offsetof(tdist_device_state_t, wait_timeout_ns), &ns, sizeof ns, cudaMemcpyHostToDevice);
}
uint64_t initial_timeout_ns() { return tdist_host_device_state()->wait_timeout_ns; }

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!g_gpu) GTEST_SKIP() << g_why;
  }
  void sync_and_check() {
    CK(cudaDeviceSynchronize());
    TD(tdist_cuda_check_fault(nullptr));
  }
};

// ---------------------------------------------------------------------------------------------
__global__ void identity_kernel(int *out, void *heap, void **ptrs) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = tdist_my_pe();
    out[1] = tdist_n_pes();
    out[2] = tdistx_program_id(0);
    out[3] = tdistx_num_programs(0);
    for (int pe = 0; pe < tdist_n_pes(); ++pe) ptrs[pe] = tdist_ptr(static_cast<char *>(heap) + 4096, pe);
  }
}

TEST_F(Gpu, IdentityAndPtr) {
  int *out;
  void **ptrs;
  CK(cudaMalloc(&out, 4 * sizeof(int)));
  CK(cudaMalloc(&ptrs, npes() * sizeof(void *)));
  const tdist_device_state_t *s = tdist_host_device_state();
  identity_kernel<<<3, 32>>>(out, s->heap_base, ptrs);
  sync_and_check();
  int h[4];
  std::vector<void *> hp(npes());
  CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hp.data(), ptrs, npes() * sizeof(void *), cudaMemcpyDeviceToHost));
  EXPECT_EQ(h[0], me());
  EXPECT_EQ(h[1], npes());
  EXPECT_EQ(h[2], 0);
  EXPECT_EQ(h[3], 3);
  for (int pe = 0; pe < npes(); ++pe) {
    if (pe != me() && engine_peer(pe)) {  // no load/store path: tdist_ptr is NULL, as nvshmem_ptr is
      EXPECT_EQ(hp[pe], nullptr) << "PE " << pe;
      continue;
    }
    ASSERT_NE(s->p2p_heap_base[pe], nullptr) << "PE " << pe;
    EXPECT_EQ(hp[pe], static_cast<char *>(s->p2p_heap_base[pe]) + 4096) << "PE " << pe;
  }
  EXPECT_EQ(s->p2p_heap_base[me()], s->heap_base);
  cudaFree(out);
  cudaFree(ptrs);
}

__global__ void bad_ptr_kernel(void *heap, int pe, void **out) { *out = tdist_ptr(heap, pe); }

TEST_F(Gpu, PtrOutOfRangeIsStickyInvalidParam) {
  if (tdist_host_device_state()->debug) GTEST_SKIP() << "TDIST_DEBUG traps on device faults";
  void **out;
  CK(cudaMalloc(&out, sizeof(void *)));
  void *poison = reinterpret_cast<void *>(0x1234);
  CK(cudaMemcpy(out, &poison, sizeof poison, cudaMemcpyHostToDevice));
  bad_ptr_kernel<<<1, 1>>>(tdist_host_device_state()->heap_base, npes(), out);
  CK(cudaDeviceSynchronize());
  void *got;
  CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(tdist_cuda_check_fault(nullptr), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("PE " + std::to_string(npes())), std::string::npos)
      << tdist_last_error_message();
  EXPECT_EQ(tdist_cuda_check_fault(nullptr), TDIST_SUCCESS) << "the fault record must be cleared";
  cudaFree(out);
}

// ---------------------------------------------------------------------------------------------
// putmem / getmem in every form.
enum Form { kThread, kThreadNbi, kWarp, kWarpNbi, kBlock, kBlockNbi, kI64 };
const char *form_name(int f) {
  static const char *n[] = {"thread", "thread_nbi", "warp", "warp_nbi", "block", "block_nbi", "i64(program)"};
  return n[f];
}

__global__ void put_kernel(int form, bool get, char *dst, const char *src, size_t n, int pe) {
  switch (form) {
    case kThread:
      if (threadIdx.x == 0) get ? tdist_getmem(dst, src, n, pe) : tdist_putmem(dst, src, n, pe);
      break;
    case kThreadNbi:
      if (threadIdx.x == 0) get ? tdist_getmem_nbi(dst, src, n, pe) : tdist_putmem_nbi(dst, src, n, pe);
      break;
    case kWarp:
      if (threadIdx.x < 32) get ? tdistx_getmem_warp(dst, src, n, pe) : tdistx_putmem_warp(dst, src, n, pe);
      break;
    case kWarpNbi:
      if (threadIdx.x < 32)
        get ? tdistx_getmem_nbi_warp(dst, src, n, pe) : tdistx_putmem_nbi_warp(dst, src, n, pe);
      break;
    case kBlock: get ? tdistx_getmem_block(dst, src, n, pe) : tdistx_putmem_block(dst, src, n, pe); break;
    case kBlockNbi:
      get ? tdistx_getmem_nbi_block(dst, src, n, pe) : tdistx_putmem_nbi_block(dst, src, n, pe);
      break;
    case kI64:
      get ? tdist_getmem_i64(int64_t(dst), int64_t(src), n, pe)
          : tdist_putmem_i64(int64_t(dst), int64_t(src), n, pe);
      break;
  }
  tdist_quiet();
}

TEST_F(Gpu, PutGetEveryFormSizeAlignment) {
  const size_t cap = (1 << 20) + 64;
  char *buf = static_cast<char *>(tdist_malloc(cap));  // symmetric destination (put) / source (get)
  char *loc = static_cast<char *>(tdist_malloc(cap));  // local source (put) / destination (get)
  ASSERT_TRUE(buf && loc) << tdist_last_error_message();
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  uint64_t salt = 0;
  for (int form = kThread; form <= kI64; ++form)
    for (size_t n : {size_t(1), size_t(15), size_t(16), size_t(100), size_t(4099), size_t(1) << 20})
      for (size_t off : {size_t(0), size_t(1), size_t(8), size_t(13)}) {
        if (form <= kThreadNbi && n > 65536) continue;  // one thread: keep the suite fast
        for (bool get : {false, true}) {
          ++salt;
          SCOPED_TRACE(std::string(form_name(form)) + (get ? " get" : " put") + " n=" + std::to_string(n) +
                       " off=" + std::to_string(off));
          // Put: my data -> buf+off on the right neighbour. Get: the right neighbour's buf+off
          // -> my loc+off (misaligned differently on the two sides when off != 0).
          auto mine = host_gen(me(), n, salt);
          CK(cudaMemset(buf, 0xA5, cap));
          CK(cudaMemset(loc, 0x5A, cap));
          CK(cudaMemcpy((get ? buf : loc) + off, mine.data(), n, cudaMemcpyHostToDevice));
          CK(cudaDeviceSynchronize());
          TD(tdist_host_barrier_all());
          size_t loff = get ? (off * 3) % 16 : off;  // local side alignment differs for gets
          if (get)
            put_kernel<<<1, 128>>>(form, true, loc + loff, buf + off, n, right);
          else
            put_kernel<<<1, 128>>>(form, false, buf + off, loc + loff, n, right);
          sync_and_check();
          TD(tdist_host_barrier_all());
          std::vector<uint8_t> got(n + 2);
          const char *where = get ? loc + loff : buf + off;
          // Read one guard byte before (when there is one) and one after the destination.
          size_t b = where > (get ? loc : buf) ? 1 : 0;
          CK(cudaMemcpy(got.data(), where - b, n + 1 + b, cudaMemcpyDeviceToHost));
          auto expect = host_gen(get ? right : left, n, salt);
          if (b) ASSERT_EQ(got[0], get ? 0x5A : 0xA5) << "byte before the destination was overwritten";
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(got[b + i], expect[i]) << "byte " << i << " (from PE " << (get ? right : left) << ")";
          ASSERT_EQ(got[b + n], get ? 0x5A : 0xA5) << "byte after the destination was overwritten";
        }
      }
  TD(tdist_free(loc));
  TD(tdist_free(buf));
}

// ---------------------------------------------------------------------------------------------
// Typed p / g for every RMA type (X-macro: one line per type).
template <class T>
__host__ __device__ T typed_value(int pe, int k) {
  return T(pe * 7 + k + 1);
}

#define DEFINE_PG_KERNEL(name, T)                                                 \
  __global__ void pg_kernel_##name(T *slot, T *got, int right, int left, int k) { \
    tdist_##name##_p(slot, typed_value<T>(tdist_my_pe(), k), right);              \
    tdist_quiet();                                                                \
    (void)left;                                                                   \
    (void)got;                                                                    \
  }                                                                               \
  __global__ void g_kernel_##name(T *slot, T *got, int left) { *got = tdist_##name##_g(slot, left); }
TDIST_FOR_EACH_RMA_TYPE(DEFINE_PG_KERNEL)
#undef DEFINE_PG_KERNEL

TEST_F(Gpu, TypedPutGetEveryType) {
  auto *slot = static_cast<char *>(tdist_calloc(1, 64));
  char *got;
  CK(cudaMalloc(&got, 64));
  ASSERT_TRUE(slot);
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  int k = 0;
#define RUN_PG(name, T)                                                                        \
  {                                                                                            \
    SCOPED_TRACE(#name);                                                                       \
    ++k;                                                                                       \
    CK(cudaMemset(slot, 0xEE, 64));                                                            \
    CK(cudaDeviceSynchronize());                                                               \
    TD(tdist_host_barrier_all());                                                              \
    pg_kernel_##name<<<1, 1>>>(reinterpret_cast<T *>(slot), nullptr, right, left, k);          \
    sync_and_check();                                                                          \
    TD(tdist_host_barrier_all());                                                              \
    T v;                                                                                       \
    CK(cudaMemcpy(&v, slot, sizeof v, cudaMemcpyDeviceToHost));                                \
    EXPECT_TRUE(v == typed_value<T>(left, k)) << "p from PE " << left;                         \
    g_kernel_##name<<<1, 1>>>(reinterpret_cast<T *>(slot), reinterpret_cast<T *>(got), right); \
    sync_and_check();                                                                          \
    CK(cudaMemcpy(&v, got, sizeof v, cudaMemcpyDeviceToHost));                                 \
    EXPECT_TRUE(v == typed_value<T>(me(), k)) << "g from PE " << right;                        \
    TD(tdist_host_barrier_all());                                                              \
  }
  TDIST_FOR_EACH_RMA_TYPE(RUN_PG)
#undef RUN_PG
  cudaFree(got);
  TD(tdist_free(slot));
}

// ---------------------------------------------------------------------------------------------
// putmem_signal: data then release signal; the receiver acquires and checks the data in-kernel,
// several rounds into distinct buffers. Any ordering bug shows as a mismatch.
__global__ void put_signal_ring(int form, uint64_t seed, char *bufs, char *src, size_t n, int rounds,
                                uint64_t *sig, int right, int left, unsigned long long *errors) {
  const int me = tdist_my_pe();
  for (int k = 1; k <= rounds; ++k) {
    char *s = src + (k - 1) * n, *d = bufs + (k - 1) * n;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) s[i] = char(gen(seed, me, i, 1000 + k));
    __syncthreads();
    switch (form) {
      case kThread:
        if (threadIdx.x == 0) tdist_putmem_signal(d, s, n, sig, 1, TDIST_SIGNAL_ADD, right);
        break;
      case kWarp:
        if (threadIdx.x < 32) tdistx_putmem_signal_warp(d, s, n, sig, 1, TDIST_SIGNAL_ADD, right);
        break;
      case kBlock: tdistx_putmem_signal_block(d, s, n, sig, 1, TDIST_SIGNAL_ADD, right); break;
      case kBlockNbi: tdistx_putmem_signal_nbi_block(d, s, n, sig, 1, TDIST_SIGNAL_ADD, right); break;
      case kI64:
        tdist_putmem_signal_i64(int64_t(d), int64_t(s), n, int64_t(sig), 1, TDIST_SIGNAL_ADD, right);
        break;
    }
    if (threadIdx.x == 0) tdist_signal_wait_until(sig, TDIST_CMP_GE, uint64_t(k));
    __syncthreads();
    unsigned long long bad = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) bad += uint8_t(d[i]) != gen(seed, left, i, 1000 + k);
    if (bad) atomicAdd(errors, bad);
  }
}

TEST_F(Gpu, PutmemSignalOrdering) {
  const size_t n = 256 * 1024 + 3;
  const int rounds = 4;
  char *bufs = static_cast<char *>(tdist_malloc(n * rounds));
  char *src = static_cast<char *>(tdist_malloc(n * rounds));
  auto *sig = static_cast<uint64_t *>(tdist_calloc(1, 64));
  unsigned long long *errors;
  CK(cudaMalloc(&errors, sizeof *errors));
  ASSERT_TRUE(bufs && src && sig);
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  for (int form : {kThread, kWarp, kBlock, kBlockNbi, kI64}) {
    SCOPED_TRACE(form_name(form));
    CK(cudaMemset(bufs, 0xA5, n * rounds));
    CK(cudaMemset(sig, 0, 8));
    CK(cudaMemset(errors, 0, sizeof *errors));
    CK(cudaDeviceSynchronize());
    TD(tdist_host_barrier_all());
    put_signal_ring<<<1, 256>>>(form, run_seed(), bufs, src, form == kThread ? 4099 : n, rounds, sig, right,
                                left, errors);
    sync_and_check();
    unsigned long long e;
    CK(cudaMemcpy(&e, errors, sizeof e, cudaMemcpyDeviceToHost));
    EXPECT_EQ(e, 0ull) << "bytes seen before the signal that released them";
    uint64_t s;
    CK(cudaMemcpy(&s, sig, sizeof s, cudaMemcpyDeviceToHost));
    EXPECT_EQ(s, uint64_t(rounds));
    TD(tdist_host_barrier_all());
  }
  cudaFree(errors);
  TD(tdist_free(sig));
  TD(tdist_free(src));
  TD(tdist_free(bufs));
}

// ---------------------------------------------------------------------------------------------
// signal ADD from every PE to every PE, SET, fetch.
__global__ void signal_all_kernel(uint64_t *sig, uint64_t *seen, int round) {
  const int n = tdist_n_pes();
  if (threadIdx.x == 0) {
    for (int pe = 0; pe < n; ++pe) tdist_signal_op(sig, uint64_t(round), TDIST_SIGNAL_ADD, pe);
    *seen = tdist_signal_wait_until(sig, TDIST_CMP_EQ, uint64_t(n) * round);
    // SET on the right neighbour's second slot: the value names the sender.
    tdist_signal_op(sig + 8, 1000 + tdist_my_pe(), TDIST_SIGNAL_SET, (tdist_my_pe() + 1) % n);
    tdist_signal_wait_until(sig + 8, TDIST_CMP_NE, 0);
    seen[1] = tdist_signal_fetch(sig + 8);
  }
}

TEST_F(Gpu, SignalAddSetFetch) {
  auto *sig = static_cast<uint64_t *>(tdist_calloc(2, 64));
  uint64_t *seen;
  CK(cudaMalloc(&seen, 16));
  for (int round = 1; round <= 3; ++round) {
    CK(cudaMemset(sig, 0, 128));
    CK(cudaDeviceSynchronize());
    TD(tdist_host_barrier_all());
    signal_all_kernel<<<1, 32>>>(sig, seen, round);
    sync_and_check();
    uint64_t h[2];
    CK(cudaMemcpy(h, seen, 16, cudaMemcpyDeviceToHost));
    EXPECT_EQ(h[0], uint64_t(npes()) * round);
    EXPECT_EQ(h[1], uint64_t(1000 + (me() + npes() - 1) % npes()));
    TD(tdist_host_barrier_all());
  }
  cudaFree(seen);
  TD(tdist_free(sig));
}

// ---------------------------------------------------------------------------------------------
// Six predicates, typed waits (signed compare), and the timeout diagnostic.
__global__ void wait_kernel(int which, void *slot, int cmp, int64_t v, uint64_t *out) {
  switch (which) {
    case 0: *out = tdist_signal_wait_until(static_cast<uint64_t *>(slot), cmp, uint64_t(v)); break;
    case 1: tdist_int32_wait_until(static_cast<int32_t *>(slot), cmp, int32_t(v)); break;
    case 2: tdist_int64_wait_until(static_cast<int64_t *>(slot), cmp, v); break;
    case 3: tdist_uint64_wait_until(static_cast<uint64_t *>(slot), cmp, uint64_t(v)); break;
  }
}

TEST_F(Gpu, WaitPredicatesAndTimeout) {
  if (tdist_host_device_state()->debug) GTEST_SKIP() << "TDIST_DEBUG traps on device faults";
  auto *slot = static_cast<char *>(tdist_calloc(1, 64));
  uint64_t *out;
  CK(cudaMalloc(&out, 8));
  const uint64_t t0 = initial_timeout_ns();
  set_wait_timeout_ns(100ull * 1000 * 1000);  // 100 ms: the failing cases below must time out
  struct Case {
    int which;
    int64_t stored;
    int cmp;
    int64_t v;
    bool holds;
  } cases[] = {
      {0, 7, TDIST_CMP_EQ, 7, true},   {0, 7, TDIST_CMP_NE, 8, true},   {0, 7, TDIST_CMP_GT, 6, true},
      {0, 7, TDIST_CMP_GE, 7, true},   {0, 7, TDIST_CMP_LT, 8, true},   {0, 7, TDIST_CMP_LE, 7, true},
      {0, 7, TDIST_CMP_EQ, 8, false},  {0, 7, TDIST_CMP_GT, 7, false},  {0, 7, TDIST_CMP_LT, 7, false},
      {1, -5, TDIST_CMP_LT, 3, true},  {1, -5, TDIST_CMP_GT, 3, false}, {2, -5, TDIST_CMP_LT, 3, true},
      {2, -9, TDIST_CMP_GE, -9, true}, {3, 5, TDIST_CMP_LE, 5, true},   {3, 5, TDIST_CMP_NE, 5, false},
  };
  const int64_t off = tdist_heap_offset(slot);
  for (const Case &c : cases) {
    SCOPED_TRACE("which=" + std::to_string(c.which) + " stored=" + std::to_string(c.stored) +
                 " cmp=" + std::to_string(c.cmp) + " v=" + std::to_string(c.v));
    CK(cudaMemset(slot, 0, 64));
    if (c.which == 1) {
      int32_t s = int32_t(c.stored);
      CK(cudaMemcpy(slot, &s, 4, cudaMemcpyHostToDevice));
    } else {
      CK(cudaMemcpy(slot, &c.stored, 8, cudaMemcpyHostToDevice));
    }
    auto start = std::chrono::steady_clock::now();
    wait_kernel<<<1, 1>>>(c.which, slot, c.cmp, c.v, out);
    CK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    int rc = tdist_cuda_check_fault(nullptr);
    if (c.holds) {
      EXPECT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
      if (c.which == 0) {
        uint64_t o;
        CK(cudaMemcpy(&o, out, 8, cudaMemcpyDeviceToHost));
        EXPECT_EQ(o, uint64_t(c.stored));
      }
    } else {
      EXPECT_EQ(rc, TDIST_ERR_TIMEOUT);
      std::string m = tdist_last_error_message();
      EXPECT_NE(m.find("heap offset " + std::to_string(off)), std::string::npos) << m;
      EXPECT_NE(m.find("PE " + std::to_string(me())), std::string::npos) << m;
      EXPECT_NE(m.find("cmp " + std::to_string(c.cmp)), std::string::npos) << m;
      EXPECT_GE(ms, 90.0) << "timed out too early";
    }
  }
  set_wait_timeout_ns(t0);
  cudaFree(out);
  TD(tdist_free(slot));
}

// After the first timeout the fault is sticky: the next waits of the launch return at once.
__global__ void two_waits_kernel(uint64_t *slot) {
  tdist_signal_wait_until(slot, TDIST_CMP_EQ, 12345);
  tdist_signal_wait_until(slot + 8, TDIST_CMP_EQ, 777);
}

TEST_F(Gpu, TimeoutIsStickyWithinALaunch) {
  if (tdist_host_device_state()->debug) GTEST_SKIP() << "TDIST_DEBUG traps on device faults";
  auto *slot = static_cast<uint64_t *>(tdist_calloc(2, 64));
  const uint64_t t0 = initial_timeout_ns();
  set_wait_timeout_ns(200ull * 1000 * 1000);
  auto start = std::chrono::steady_clock::now();
  two_waits_kernel<<<1, 1>>>(slot);
  CK(cudaDeviceSynchronize());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tdist_cuda_check_fault(nullptr), TDIST_ERR_TIMEOUT);
  std::string m = tdist_last_error_message();
  EXPECT_NE(m.find("expected 12345"), std::string::npos) << m;
  EXPECT_NE(m.find("seen 0"), std::string::npos) << m;
  EXPECT_LT(ms, 350.0) << "the second wait should have returned at once";
  set_wait_timeout_ns(t0);
  TD(tdist_free(slot));
}

// ---------------------------------------------------------------------------------------------
// dl.wait / dl.notify: every PE notifies slot[me] on every PE; every PE waits for all n slots.
__global__ void slots_kernel(int variant, int32_t *s32, int64_t *s64, int32_t k) {
  const int me = tdist_my_pe(), n = tdist_n_pes();
  if (variant == 0) {  // thread form
    if (threadIdx.x == 0) {
      for (int pe = 0; pe < n; ++pe) tdistx_notify_int32(s32 + me * 16, k, pe, TDIST_SIGNAL_SET);
      int32_t tok = tdistx_wait_int32(s32, n, k);
      tdistx_consume_token_ptr(s32, tok);
    }
  } else {  // Triton-facing twins: every thread calls, program-collective
    for (int pe = 0; pe < n; ++pe)
      tdistx_notify_int64_i64(int64_t(s64 + me * 8), int64_t(k), pe, TDIST_SIGNAL_SET);
    int32_t tok = tdistx_wait_int64_i64(int64_t(s64), n, int64_t(k), -1);  // -1: the runtime's wait budget
    (void)tdistx_consume_token_ptr_i64(int64_t(s64), tok);
  }
}

TEST_F(Gpu, SlotWaitNotify) {
  auto *s32 = static_cast<int32_t *>(tdist_calloc(npes(), 64));
  auto *s64 = static_cast<int64_t *>(tdist_calloc(npes(), 64));
  for (int variant = 0; variant < 2; ++variant)
    for (int32_t k = 1; k <= 3; ++k) {
      SCOPED_TRACE("variant " + std::to_string(variant) + " round " + std::to_string(k));
      slots_kernel<<<1, 128>>>(variant, s32, s64, k);
      sync_and_check();
      std::vector<int64_t> h(npes() * 8);
      CK(cudaMemcpy(h.data(), s64, npes() * 64, cudaMemcpyDeviceToHost));
      if (variant == 1)
        for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(h[pe * 8], k) << "slot of PE " << pe;
      TD(tdist_host_barrier_all());  // nobody starts round k+1 before everyone saw round k
    }
  TD(tdist_free(s64));
  TD(tdist_free(s32));
}

// ---------------------------------------------------------------------------------------------
// Device barrier under skew: G CTAs x R rounds; in each round every CTA sleeps a random time,
// adds 1 to counter[round] on every PE, then barriers; after it counter[round] must be n*G.
__global__ void barrier_skew_kernel(uint64_t seed, uint64_t *counters, int rounds,
                                    unsigned long long *errors) {
  const int me = tdist_my_pe(), n = tdist_n_pes();
  const uint64_t total = uint64_t(n) * gridDim.x;
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) {
      uint32_t ns = 1000u * (gen(seed, me, blockIdx.x, r) % 20);  // 0..19 us
      __nanosleep(ns);
      for (int pe = 0; pe < n; ++pe) tdist_signal_op(counters + r * 8, 1, TDIST_SIGNAL_ADD, pe);
    }
    tdist_barrier_all();
    if (threadIdx.x == 0) {
      uint64_t v = tdist_signal_fetch(counters + r * 8);
      if (v != total) atomicAdd(errors, 1ull);
    }
  }
}

TEST_F(Gpu, DeviceBarrierUnderSkew) {
  const int rounds = 50;
  auto *counters = static_cast<uint64_t *>(tdist_calloc(rounds, 64));
  unsigned long long *errors;
  CK(cudaMalloc(&errors, sizeof *errors));
  CK(cudaMemset(errors, 0, sizeof *errors));
  TD(tdist_host_barrier_all());
  barrier_skew_kernel<<<4, 64>>>(run_seed(), counters, rounds, errors);
  sync_and_check();
  unsigned long long e;
  CK(cudaMemcpy(&e, errors, sizeof e, cudaMemcpyDeviceToHost));
  EXPECT_EQ(e, 0ull) << "CTAs left a barrier before every PE's adds of that round landed";
  TD(tdist_host_barrier_all());
  TD(tdist_free(counters));
}

// ---------------------------------------------------------------------------------------------
// Stream barrier: PE's kernel A writes into its right neighbour (PE 0 late), barrier on the
// stream, kernel B checks what its left neighbour wrote. No host synchronisation in between.
__global__ void stream_a(uint64_t *slot, int right, uint64_t v, bool late) {
  if (late) __nanosleep(1000000);
  tdist_uint64_p(slot, v, right);
}
__global__ void stream_b(uint64_t *slot, uint64_t *out) { *out = tdist_signal_fetch(slot); }

TEST_F(Gpu, StreamBarrier) {
  auto *slot = static_cast<uint64_t *>(tdist_calloc(1, 64));
  uint64_t *out;
  CK(cudaMalloc(&out, 8));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  TD(tdist_host_barrier_all());
  for (int round = 1; round <= 5; ++round) {
    stream_a<<<1, 1, 0, s>>>(slot, right, 100 * round + me(), me() == 0);
    TD(tdist_cuda_barrier_all_on_stream(s));
    stream_b<<<1, 1, 0, s>>>(slot, out);
    TD(tdist_cuda_barrier_all_on_stream(s));  // nobody overwrites before everyone read
    CK(cudaStreamSynchronize(s));
    TD(tdist_cuda_check_fault(s));
    uint64_t h;
    CK(cudaMemcpy(&h, out, 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(h, uint64_t(100 * round + left)) << "round " << round;
  }
  CK(cudaStreamDestroy(s));
  cudaFree(out);
  TD(tdist_free(slot));
}

// ---------------------------------------------------------------------------------------------
// tdist_cuda_launch: the eager launch path of cached Triton launches (parameters as cells).
__global__ void launch_params_kernel(int64_t *out, int32_t a, int8_t b, uint64_t c) {
  out[blockIdx.x * 3 + 0] = a;
  out[blockIdx.x * 3 + 1] = b;
  out[blockIdx.x * 3 + 2] = int64_t(c);
}

TEST_F(Gpu, LaunchByFunctionHandle) {
  cudaFunction_t fn;
  CK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void *>(&launch_params_kernel)));
  int64_t *out;
  CK(cudaMalloc(&out, 4 * 3 * sizeof(int64_t)));
  CK(cudaMemset(out, 0x5a, 4 * 3 * sizeof(int64_t)));  // poisoned
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // every parameter in an 8-byte cell, its value in the low bytes (how tdist._C.CudaLaunch packs)
  const int32_t a = -7 - me();
  uint64_t cells[4] = {uint64_t(reinterpret_cast<uintptr_t>(out)), uint64_t(uint32_t(a)),
                       uint64_t(uint8_t(-3)), 0xF00D000000000000ull + uint64_t(me())};
  void *params[4] = {&cells[0], &cells[1], &cells[2], &cells[3]};
  TD(tdist_cuda_launch(reinterpret_cast<void *>(fn), 4, 1, 1, 32, 0, s, params));
  CK(cudaStreamSynchronize(s));
  int64_t h[12];
  CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(h[b * 3 + 0], a) << "block " << b;
    EXPECT_EQ(h[b * 3 + 1], -3) << "block " << b;
    EXPECT_EQ(uint64_t(h[b * 3 + 2]), 0xF00D000000000000ull + uint64_t(me())) << "block " << b;
  }
  // a launch the driver refuses names the call and the CUDA error; NULLs are refused before it
  EXPECT_EQ(tdist_cuda_launch(reinterpret_cast<void *>(fn), 1, 1, 1, 4096, 0, s, params), TDIST_ERR_SMEM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("cuLaunchKernel(grid 1x1x1, 4096 threads"),
            std::string::npos)
      << tdist_last_error_message();
  EXPECT_EQ(tdist_cuda_launch(nullptr, 1, 1, 1, 32, 0, s, params), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cuda_launch(reinterpret_cast<void *>(fn), 1, 1, 1, 32, 0, s, nullptr),
            TDIST_ERR_INVALID_PARAM);
  tdist_clear_error();
  CK(cudaStreamSynchronize(s));  // the refused launch left the stream usable
  CK(cudaStreamDestroy(s));
  cudaFree(out);
}

// ---------------------------------------------------------------------------------------------
// SDMA engine: host-initiated copy-engine put/get on a stream.
TEST_F(Gpu, CopyEnginePutGet) {
  const size_t n = (8 << 20) + 5;
  char *buf = static_cast<char *>(tdist_malloc(n));
  char *loc;
  CK(cudaMalloc(&loc, n));
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  auto mine = host_gen(me(), n, 77);
  CK(cudaMemcpy(loc, mine.data(), n, cudaMemcpyHostToDevice));
  CK(cudaMemset(buf, 0xA5, n));
  CK(cudaDeviceSynchronize());
  TD(tdist_host_barrier_all());
  TD(tdist_cuda_putmem_on_stream(buf, loc, n, right, nullptr));
  CK(cudaDeviceSynchronize());
  TD(tdist_host_barrier_all());
  std::vector<uint8_t> got(n);
  CK(cudaMemcpy(got.data(), buf, n, cudaMemcpyDeviceToHost));
  auto exp = host_gen(left, n, 77);
  ASSERT_TRUE(got == exp) << "copy-engine put from PE " << left;
  CK(cudaMemset(loc, 0x5A, n));
  TD(tdist_cuda_getmem_on_stream(loc, buf, n, right, nullptr));  // right's buf holds my data
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(got.data(), loc, n, cudaMemcpyDeviceToHost));
  ASSERT_TRUE(got == mine) << "copy-engine get from PE " << right;
  EXPECT_EQ(tdist_cuda_putmem_on_stream(buf, loc, n, npes(), nullptr), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cuda_putmem_on_stream(loc, loc, n, right, nullptr), TDIST_ERR_INVALID_PARAM)
      << "a non-heap destination must be rejected";
  TD(tdist_host_barrier_all());
  cudaFree(loc);
  TD(tdist_free(buf));
}

// ---------------------------------------------------------------------------------------------
// The constant-memory copy of the hot fields matches the host's view of the state.
TEST_F(Gpu, FastStateMatchesHostTable) {
  tdist_device_fast_t f;
  TD(tdist_cuda_fast_state(&f, sizeof f));
  const tdist_device_state_t *s = tdist_host_device_state();
  ASSERT_EQ(f.n_pes, npes());
  EXPECT_EQ(f.my_pe, me());
  EXPECT_EQ(f.heap_base, uint64_t(uintptr_t(s->heap_base)));
  EXPECT_EQ(f.heap_size, s->heap_size);
  for (int pe = 0; pe < npes(); ++pe)
    EXPECT_EQ(f.p2p_base[pe], uint64_t(uintptr_t(s->p2p_heap_base[pe]))) << pe;
  // One reservation for all heaps: the stride form of the translation must be in use and agree
  // with the table for every PE (a stride that disagreed would send signals to the wrong heap).
  // Through the engine (NVSHMEM's heap, peers unmapped) there is no stride.
  bool engine = false;
  for (int pe = 0; pe < npes(); ++pe) engine = engine || engine_peer(pe);
  if (engine) {
    EXPECT_EQ(f.p2p_stride, 0u) << "a stride over heaps that are not all mapped";
    return;
  }
  ASSERT_NE(f.p2p_stride, 0u) << "the heaps are not mapped at a uniform stride";
  EXPECT_GE(f.p2p_stride, f.heap_size);
  for (int pe = 0; pe < npes(); ++pe)
    EXPECT_EQ(f.p2p_base[0] + uint64_t(pe) * f.p2p_stride, f.p2p_base[pe]) << pe;
  EXPECT_EQ(tdist_cuda_fast_state(&f, sizeof f - 8), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cuda_fast_state(nullptr, sizeof f), TDIST_ERR_INVALID_PARAM);
}

// Stream signals: copy-engine put, stream signal at the target, bounded stream wait, then a kernel
// that reads the data; round after round on one stream, no host synchronisation in between.
__global__ void read_first(const uint64_t *data, uint64_t *out, int round) { out[round] = data[0]; }

TEST_F(Gpu, StreamSignalPutWait) {
  const int right = (me() + 1) % npes(), left = (me() + npes() - 1) % npes();
  auto *slot = static_cast<uint64_t *>(tdist_calloc(1, 64));
  auto *data = static_cast<uint64_t *>(tdist_malloc(1 << 20));
  uint64_t *src, *out;
  CK(cudaMalloc(&src, 1 << 20));
  CK(cudaMalloc(&out, 8 * 8));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  TD(tdist_host_barrier_all());
  for (int round = 1; round <= 5; ++round) {
    const uint64_t v = 1000 * round + me();
    CK(cudaMemcpyAsync(src, &v, 8, cudaMemcpyHostToDevice, s));
    TD(tdist_cuda_putmem_on_stream(data, src, 1 << 20, right, s));
    TD(tdist_cuda_signal_on_stream(slot, uint64_t(round), TDIST_SIGNAL_SET, right, s));
    TD(tdist_cuda_signal_wait_until_on_stream(slot, TDIST_CMP_GE, uint64_t(round), s));
    read_first<<<1, 1, 0, s>>>(data, out, round);
    TD(tdist_cuda_barrier_all_on_stream(s));  // nobody overwrites before everyone read
  }
  CK(cudaStreamSynchronize(s));
  TD(tdist_cuda_check_fault(s));
  uint64_t h[8];
  CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  for (int round = 1; round <= 5; ++round)
    EXPECT_EQ(h[round], uint64_t(1000 * round + left)) << "round " << round;
  EXPECT_EQ(tdist_cuda_signal_on_stream(slot, 1, TDIST_SIGNAL_ADD, right, s), TDIST_ERR_NOT_SUPPORTED);
  EXPECT_EQ(tdist_cuda_signal_on_stream(slot, 1, 7, right, s), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cuda_signal_on_stream(reinterpret_cast<char *>(slot) + 4, 1, TDIST_SIGNAL_SET, right, s),
            TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cuda_signal_on_stream(src, 1, TDIST_SIGNAL_SET, right, s), TDIST_ERR_INVALID_PARAM)
      << "a slot outside the heap must be rejected";
  EXPECT_EQ(tdist_cuda_signal_wait_until_on_stream(slot, 9, 1, s), TDIST_ERR_INVALID_PARAM);
  TD(tdist_host_barrier_all());
  CK(cudaStreamDestroy(s));
  cudaFree(src);
  cudaFree(out);
  TD(tdist_free(data));
  TD(tdist_free(slot));
}

// ---------------------------------------------------------------------------------------------
TEST_F(Gpu, CollectiveAllocMismatchFailsEverywhere) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  void *p = tdist_malloc(me() == 0 ? 4096 : 8192);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_COLLECTIVE_MISMATCH) << tdist_last_error_message();
  void *q = tdist_malloc(4096);  // heap state unchanged: equal calls work again
  ASSERT_NE(q, nullptr) << tdist_last_error_message();
  EXPECT_EQ(tdist_heap_offset(q) % 256, 0);
  TD(tdist_free(q));
  void *huge = tdist_malloc(size_t(1) << 40);
  EXPECT_EQ(huge, nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    g_why = std::string("no GPU visible (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
            "): the NVIDIA GPU suite needs one";
    return RUN_ALL_TESTS();
  }
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 256ull << 20;
  a.option_attr.backend = TDIST_BACKEND_CUDA;
  a.option_attr.data_op_engine_type = TDIST_ENGINE_MTE | TDIST_ENGINE_SDMA | TDIST_ENGINE_UDMA;
  if (a.option_attr.wait_timeout_ms == 0) a.option_attr.wait_timeout_ms = 20000;
  a.option_attr.control_timeout_s = 120;
  if (tdist_init_from_env(&a) != TDIST_SUCCESS) {
    std::fprintf(stderr, "tdist_init_from_env failed: %s\n", tdist_last_error_message());
    return 1;  // a GPU is there but tdist cannot use it: that is a failure, not a skip
  }
  if (tdist_cuda_bind_state() != TDIST_SUCCESS) {
    std::fprintf(stderr, "tdist_cuda_bind_state failed\n");
    return 1;
  }
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  // The suite built against the engine (tdist_gpu_tests_nvshmem: -rdc, NVSHMEM's static device
  // library): its device code is one module holding NVSHMEM's device state; registering it makes
  // the runtime initialise that state (nvshmemx_cumodule_init). Only a job that runs the engine.
  {
    if (!tdist_cuda_engine_bitcode()) {
      std::fprintf(stderr,
                   "tdist_gpu_tests_nvshmem: this job does not run the NVSHMEM engine (run it with "
                   "TDIST_ROCE_PEERS=all, or across hosts)\n");
      return 1;
    }
    cudaFunction_t fn = nullptr;
    CUmodule mod = nullptr;
    if (cudaGetFuncBySymbol(&fn, reinterpret_cast<const void *>(identity_kernel)) != cudaSuccess ||
        cuFuncGetModule(&mod, reinterpret_cast<CUfunction>(fn)) != CUDA_SUCCESS ||
        tdist_cuda_register_module(mod) != TDIST_SUCCESS) {
      std::fprintf(stderr, "registering the suite's module with the engine failed: %s\n",
                   tdist_last_error_message());
      return 1;
    }
  }
#endif
  g_gpu = true;
  run_seed();
  int rc = RUN_ALL_TESTS();
  // A rank whose tests failed must fail the job even if the others pass (tdist-run reports it).
  tdist_finalize();
  return rc;
}
