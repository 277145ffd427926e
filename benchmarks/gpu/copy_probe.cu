// What an SM copy loop can reach against cudaMemcpy on one GPU (no tdist: plain cudaMalloc
// buffers), to pick the device library's copy loop (device.cuh, tdisti_nv_copy_elems):
//   copy_probe [MiB]     (default 1024)
// Forms: U independent 16-byte vectors per thread in flight before their stores (the library's
// TDISTI_NV_COPY_UNROLL), default or streaming cache hints, each CTA on one contiguous chunk (as
// tdist_gpu_bench put partitions) or on 64 KiB tiles taken grid-stride, at several grid sizes.
// Prints GB/s (bytes copied / time, one direction) and the ratio to cudaMemcpyAsync D2D measured in
// the same run; medians of 10 timed repetitions after 2 warm-ups.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct __align__(16) V16 {
  unsigned x, y, z, w;
};

template <int HINT>
__device__ __forceinline__ V16 ld(const V16 *p) {
  V16 v;
  if (HINT == 0)
    asm volatile("ld.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  else
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  return v;
}
template <int HINT>
__device__ __forceinline__ void st(V16 *p, V16 v) {
  if (HINT == 0)
    asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  else
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

// The library's loop shape: lanes idx, idx + stride, ...; U loads, then U stores.
template <int U, int HINT>
__device__ __forceinline__ void copy_range(V16 *d, const V16 *s, size_t n, size_t idx, size_t stride) {
  size_t i = idx;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    V16 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = ld<HINT>(s + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) st<HINT>(d + i + u * stride, r[u]);
  }
  for (; i < n; i += stride) st<HINT>(d + i, ld<HINT>(s + i));
}

// TILED = 0: CTA b copies the b-th contiguous chunk; 1: 64 KiB tiles b, b + grid, ...
template <int U, int HINT, int TILED>
__global__ void copy_kernel(V16 *d, const V16 *s, size_t n) {
  if (TILED) {
    const size_t tile = 4096;  // vectors
    for (size_t t = blockIdx.x; t * tile < n; t += gridDim.x) {
      const size_t m = tile < n - t * tile ? tile : n - t * tile;
      copy_range<U, HINT>(d + t * tile, s + t * tile, m, threadIdx.x, blockDim.x);
    }
  } else {
    const size_t chunk = (n + gridDim.x - 1) / gridDim.x;
    const size_t off = blockIdx.x * chunk;
    if (off >= n) return;
    copy_range<U, HINT>(d + off, s + off, chunk < n - off ? chunk : n - off, threadIdx.x, blockDim.x);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_ms(F f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < 12; ++r) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 2) t.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(t);
}

using Kernel = void (*)(V16 *, const V16 *, size_t);
struct Form {
  const char *name;
  Kernel k;
};

int main(int argc, char **argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const size_t bytes = mib << 20, n = bytes / 16;
  V16 *s, *d;
  CK(cudaMalloc(&s, bytes));
  CK(cudaMalloc(&d, bytes));
  CK(cudaMemset(s, 0x3C, bytes));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double t_mc = time_ms([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); });
  const double gbs_mc = bytes / (t_mc * 1e-3) / 1e9;
  std::printf("probe %zu MiB: cudaMemcpyAsync D2D %.1f GB/s (%.3f ms), %d SMs\n", mib, gbs_mc, t_mc, sms);
  const Form forms[] = {
      {"U8 default chunk", copy_kernel<8, 0, 0>},   {"U8 default tiles", copy_kernel<8, 0, 1>},
      {"U4 default chunk", copy_kernel<4, 0, 0>},   {"U4 default tiles", copy_kernel<4, 0, 1>},
      {"U16 default chunk", copy_kernel<16, 0, 0>}, {"U2 default tiles", copy_kernel<2, 0, 1>},
      {"U8 stream chunk", copy_kernel<8, 1, 0>},    {"U8 stream tiles", copy_kernel<8, 1, 1>},
      {"U4 stream tiles", copy_kernel<4, 1, 1>},
  };
  const int grids[] = {sms, 2 * sms, 4 * sms, 8 * sms};
  const int threads[] = {256, 512, 1024};
  double best = 0;
  const char *best_name = "";
  int best_g = 0, best_t = 0;
  for (const Form &f : forms)
    for (int g : grids)
      for (int th : threads) {
        if (g * th > 2048 * sms * 2) continue;  // more than two waves of full occupancy
        f.k<<<g, th>>>(d, s, n);
        if (cudaGetLastError() != cudaSuccess) {  // e.g. more registers than th threads have
          std::printf("probe %zu MiB: %-18s grid %4d x %4d threads: does not launch\n", mib, f.name, g, th);
          continue;
        }
        const double t = time_ms([&] { f.k<<<g, th>>>(d, s, n); });
        const double gbs = bytes / (t * 1e-3) / 1e9;
        std::printf("probe %zu MiB: %-18s grid %4d x %4d threads: %7.1f GB/s (%.3fx cudaMemcpy)\n", mib,
                    f.name, g, th, gbs, gbs / gbs_mc);
        if (gbs > best) best = gbs, best_name = f.name, best_g = g, best_t = th;
      }
  std::printf("probe %zu MiB: best %s grid %d x %d: %.1f GB/s, %.3fx cudaMemcpy %.1f GB/s\n", mib, best_name,
              best_g, best_t, best, best / gbs_mc, gbs_mc);
  return 0;
}
