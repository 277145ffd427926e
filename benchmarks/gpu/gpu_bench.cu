// NVIDIA backend benchmarks. Run under tdist-run (several ranks on one GPU run under MPS):
//   tdist-run -n 2 -- tdist_gpu_bench pingpong   signal round trip: tdist API vs raw PTX floor
//                                                (tdist_gpu_bench_noprintf: the same,
//                                                TDIST_NV_NO_DEVICE_PRINTF)
//   tdist-run -n 1 -- tdist_gpu_bench put        block putmem vs cudaMemcpy D2D, same bytes (the
//                                                CTAs on one contiguous chunk each, then on 256 KiB
//                                                tiles taken grid-stride; the best form is the ratio)
//   tdist-run -n N -- tdist_gpu_bench barrier    device tdist_barrier_all latency
// Each prints a ratio against a baseline measured in the same run (medians of repeated runs).
#include "tdist/NVIDIA/device.cuh"
#include "tdist/tdist.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define TD(call)                                                                                      \
  do {                                                                                                \
    if ((call) != TDIST_SUCCESS) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, tdist_last_error_message()); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

namespace {

int me() { return tdist_host_device_state()->my_pe; }
int npes() { return tdist_host_device_state()->n_pes; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- ping-pong between PE 0 and PE 1: time per round trip measured on PE 0 (globaltimer) ----
// One kernel, four forms: the signal through tdist_signal_op or a bare st.release.sys on the
// precomputed peer address, the wait through tdist_signal_wait_until or a bare ld.acquire.sys
// poll. <true, true> is the API, <false, false> the floor (no tdist at all); the mixed forms
// say which half of the API costs what. kDiagPath adds a never-taken printf to the floor: any call
// in a kernel makes ptxas put MEMBAR.ALL.CTA before every system-scope release, and the API's
// fault path has one (its diagnostic), so this form prices that fence alone.
template <bool kApiSignal, bool kApiWait, bool kDiagPath = false>
__global__ void pingpong(uint64_t *mine, uint64_t *theirs, int me, int iters, uint64_t base,
                         unsigned long long *ns) {
  if (kApiSignal || kApiWait) me = tdist_my_pe();
  const int peer = 1 - me;
  uint64_t t0 = 0;
  auto signal = [&](uint64_t v) {
    if (kApiSignal)
      tdist_signal_op(mine, v, TDIST_SIGNAL_SET, peer);
    else
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(theirs), "l"(v) : "memory");
  };
  auto wait = [&](uint64_t v) {
    if (kApiWait) {
      tdist_signal_wait_until(mine, TDIST_CMP_EQ, v);
    } else {
      uint64_t x;
      do asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(x) : "l"(mine) : "memory");
      while (x != v);
    }
  };
  if (kDiagPath && iters < 0) printf("pingpong: iters %d < 0\n", iters);
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + i;
    if (i == 2) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (me == 0) {
      signal(v);
      wait(v);
    } else {
      wait(v);
      signal(v);
    }
  }
  uint64_t t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  *ns = t1 - t0;
}

void bench_pingpong() {
  if (npes() < 2) {
    std::printf("pingpong: needs 2 PEs\n");
    return;
  }
  auto *flags = static_cast<uint64_t *>(tdist_calloc(1, 64));
  unsigned long long *ns;
  CK(cudaMalloc(&ns, sizeof *ns));
  const tdist_device_state_t *s = tdist_host_device_state();
  const bool active = me() < 2;
  uint64_t *mine = flags, *theirs = nullptr;
  if (active)
    theirs = reinterpret_cast<uint64_t *>(static_cast<char *>(s->p2p_heap_base[1 - me()]) +
                                          tdist_heap_offset(mine));
  using Kernel = void (*)(uint64_t *, uint64_t *, int, int, uint64_t, unsigned long long *);
  constexpr int kForms = 5;
  const Kernel kernels[kForms] = {pingpong<true, true>, pingpong<false, false>, pingpong<true, false>,
                                  pingpong<false, true>, pingpong<false, false, true>};
  const char *names[kForms] = {"tdist signal_op + signal_wait_until", "raw PTX floor",
                               "tdist signal_op + raw wait", "raw signal + tdist signal_wait_until",
                               "raw PTX with a never-taken printf"};
  const int iters = 20000, reps = 7;
  std::vector<double> t[kForms];
  uint64_t base = 0;
  for (int r = 0; r < reps + 1; ++r) {  // first rep of each is warm-up; the forms alternate
    for (int kind = 0; kind < kForms; ++kind) {
      TD(tdist_host_barrier_all());
      if (active) {
        kernels[kind]<<<1, 1>>>(mine, theirs, me(), iters, base, ns);
        CK(cudaDeviceSynchronize());
        TD(tdist_cuda_check_fault(nullptr));
        unsigned long long h;
        CK(cudaMemcpy(&h, ns, sizeof h, cudaMemcpyDeviceToHost));
        if (r > 0) t[kind].push_back(double(h) / (iters - 1) / 1000.0);
      }
      base += iters;
    }
  }
  if (me() == 0) {
    const double floor = median(t[1]);
    for (int kind = 2; kind < kForms; ++kind)
      std::printf("pingpong detail: %s %.3f us/round trip (%.3fx the floor)\n", names[kind], median(t[kind]),
                  median(t[kind]) / floor);
#ifdef TDIST_NV_NO_DEVICE_PRINTF
    const char *build = " [built with TDIST_NV_NO_DEVICE_PRINTF]";
#else
    const char *build = "";
#endif
    std::printf(
        "pingpong n_pes=%d iters=%d: %s %.3f us/round trip, raw PTX %.3f us, ratio %.3f (goal <= 1.05)%s\n",
        npes(), iters, names[0], median(t[0]), floor, median(t[0]) / floor, build);
  }
  TD(tdist_host_barrier_all());
  cudaFree(ns);
  TD(tdist_free(flags));
}

// ---- block putmem bandwidth vs cudaMemcpy D2D of the same bytes into the same peer mapping ----
// Each CTA puts one contiguous chunk of total / grid bytes.
__global__ void put_blocks(char *dst, const char *src, size_t chunk, size_t total, int pe) {
  size_t off = size_t(blockIdx.x) * chunk;
  if (off >= total) return;
  size_t n = chunk < total - off ? chunk : total - off;
  tdistx_putmem_nbi_block(dst + off, src + off, n, pe);
}
// Each CTA puts tiles of `tile` bytes, blockIdx.x, blockIdx.x + grid, ... (neighbouring CTAs on
// neighbouring addresses, as a copy kernel spreads its grid).
__global__ void put_tiles(char *dst, const char *src, size_t tile, size_t total, int pe) {
  for (size_t off = size_t(blockIdx.x) * tile; off < total; off += size_t(gridDim.x) * tile) {
    size_t n = tile < total - off ? tile : total - off;
    tdistx_putmem_nbi_block(dst + off, src + off, n, pe);
  }
}

void bench_put() {
  const size_t total = size_t(1) << 30;
  char *dst = static_cast<char *>(tdist_malloc(total));
  char *src = static_cast<char *>(tdist_malloc(total));
  if (!dst || !src) TD(-1);
  const int pe = (me() + 1) % npes();
  char *peer_dst = static_cast<char *>(tdist_host_device_state()->p2p_heap_base[pe]) + tdist_heap_offset(dst);
  CK(cudaMemset(src, 0x3C, total));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, tdist_cuda_device()));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const bool active = me() == 0;
  std::printf("put: PE %d, %d SMs visible to this process\n", me(), sms);
  struct Cfg {
    bool tiles;
    int blocks, threads;
  };
  std::vector<Cfg> cfgs;
  for (bool tiles : {false, true})
    for (int threads : {512, 1024})
      for (int blocks : {sms, 2 * sms, 4 * sms})
        if (threads == 512 || blocks <= 2 * sms) cfgs.push_back({tiles, blocks, threads});
  const size_t tile = size_t(256) << 10;
  double best_put = 0;
  Cfg best{};
  for (int cfg = 0; cfg <= int(cfgs.size()); ++cfg) {
    std::vector<double> t;
    for (int r = 0; r < 12; ++r) {
      TD(tdist_host_barrier_all());
      if (!active) continue;
      CK(cudaEventRecord(e0));
      if (cfg < int(cfgs.size())) {
        const Cfg &c = cfgs[cfg];
        if (c.tiles) {
          put_tiles<<<c.blocks, c.threads>>>(dst, src, tile, total, pe);
        } else {
          size_t chunk = (total / c.blocks + 15) / 16 * 16;
          put_blocks<<<c.blocks, c.threads>>>(dst, src, chunk, total, pe);
        }
      } else {
        CK(cudaMemcpyAsync(peer_dst, src, total, cudaMemcpyDeviceToDevice));
      }
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 2) t.push_back(ms);
    }
    if (!active) continue;
    TD(tdist_cuda_check_fault(nullptr));
    double gbs = total / (median(t) * 1e-3) / 1e9;  // bytes moved (one direction)
    if (cfg < int(cfgs.size())) {
      const Cfg &c = cfgs[cfg];
      std::printf("put: tdistx_putmem_nbi_block, %s, %d CTAs x %d threads: %.1f GB/s (%.3f ms)\n",
                  c.tiles ? "256 KiB tiles grid-stride" : "one chunk per CTA", c.blocks, c.threads, gbs,
                  median(t));
      if (gbs > best_put) best_put = gbs, best = c;
    } else {
      std::printf("put: cudaMemcpyAsync D2D into the peer mapping: %.1f GB/s (%.3f ms)\n", gbs, median(t));
      std::printf(
          "put n_pes=%d bytes=%zu: block putmem %.1f GB/s (%s, %d CTAs x %d threads) vs cudaMemcpy %.1f "
          "GB/s, "
          "ratio %.3f (goal >= 0.9)\n",
          npes(), total, best_put, best.tiles ? "tiles" : "chunks", best.blocks, best.threads, gbs,
          best_put / gbs);
    }
  }
  TD(tdist_host_barrier_all());
  TD(tdist_free(src));
  TD(tdist_free(dst));
}

// ---- device barrier latency ----
__global__ void barrier_loop(int iters) {
  for (int i = 0; i < iters; ++i) tdist_barrier_all();
}

void bench_barrier() {
  const int iters = 5000;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    TD(tdist_host_barrier_all());
    CK(cudaEventRecord(e0));
    barrier_loop<<<1, 32>>>(iters);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    TD(tdist_cuda_check_fault(nullptr));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) t.push_back(ms * 1000.0 / iters);
  }
  // Report the slowest PE's median (every PE leaves a barrier only when all arrived).
  double mine = median(t);
  std::vector<double> all(npes());
  TD(tdist_ctrl_allgather(&mine, all.data(), sizeof mine));
  if (me() == 0)
    std::printf(
        "barrier n_pes=%d: tdist_barrier_all (1 CTA per PE) %.3f us per barrier (PE medians %.3f..%.3f)\n",
        npes(), *std::max_element(all.begin(), all.end()), *std::min_element(all.begin(), all.end()),
        *std::max_element(all.begin(), all.end()));
}

}  // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("tdist_gpu_bench: no GPU visible; nothing to measure\n");
    return 0;
  }
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = mode == "put" || mode == "all" ? (size_t(2) << 30) + (64 << 20) : (64 << 20);
  a.option_attr.backend = TDIST_BACKEND_CUDA;
  if (a.option_attr.wait_timeout_ms == 0) a.option_attr.wait_timeout_ms = 30000;
  TD(tdist_init_from_env(&a));
  TD(tdist_cuda_bind_state());
  if (mode == "pingpong" || mode == "all") bench_pingpong();
  if (mode == "put" || mode == "all") bench_put();
  if (mode == "barrier" || mode == "all") bench_barrier();
  TD(tdist_finalize());
  return 0;
}
