// NVSHMEM's own put bandwidth, the baseline of benchmarks/gpu_kernels/engine_put_bw.py (the same
// kernel shape as NVSHMEM's shmem_put_bw perftest): PE 0 puts `size` bytes into PE 1's symmetric
// buffer with `blocks` CTAs of 128 threads, each CTA putting its share with nvshmemx_putmem_nbi_block,
// then nvshmem_quiet, `iters` times in one launch, timed with CUDA events (started behind a GPU
// spin). One process per PE, RANK and WORLD_SIZE=2 from the environment (tools/tdist-run sets
// them); PE 0 hands NVSHMEM's unique id to PE 1 through the file named by argv[1] (written whole,
// then renamed; PE 1 waits at most 60 s for it).
//
//   nvcc -O3 -arch=sm_90 -rdc=true -I$NVSHMEM/include nvshmem_put_bw.cu $NVSHMEM/lib/libnvshmem_device.a \
//        -Xlinker $NVSHMEM/lib/libnvshmem_host.so.3 -lcuda -Xlinker -rpath,$NVSHMEM/lib -o nvshmem_put_bw
//   (benchmarks/gpu_kernels/engine_bw.sh builds it and runs both sides)
//   tools/tdist-run -n 2 -- ./nvshmem_put_bw /tmp/uid.bin 64K,1M,16M,64M 32 50
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

// fence_first: a system-scope fence before each quiet, as tdist's quiet did in its engine build
// before 2026-12-03 (the second row of each size: what that fence cost).
__global__ void put_bw(char *dst, const char *src, size_t n, int peer, int reps, int fence_first) {
  const size_t per = (n + gridDim.x - 1) / gridDim.x, start = blockIdx.x * per;
  for (int r = 0; r < reps; ++r) {
    if (start < n)
      nvshmemx_putmem_nbi_block(dst + start, src + start, per < n - start ? per : n - start, peer);
    if (threadIdx.x == 0) {
      if (fence_first) __threadfence_system();
      nvshmem_quiet();
    }
    __syncthreads();
  }
}

// Keeps the GPU busy while the host launches the timed kernel (the tdist side does the same).
__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

static size_t parse_size(const std::string &s) {
  size_t v = std::strtoull(s.c_str(), nullptr, 10);
  switch (s.back()) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s UID_FILE [SIZES [BLOCKS [ITERS]]]\n", argv[0]);
    return 2;
  }
  const std::string uid_file = argv[1];
  std::vector<size_t> sizes;
  std::string list = argc > 2 ? argv[2] : "64K,1M,16M,64M";
  for (size_t p = 0; p < list.size();) {
    size_t q = list.find(',', p);
    sizes.push_back(parse_size(list.substr(p, q == std::string::npos ? std::string::npos : q - p)));
    p = q == std::string::npos ? list.size() : q + 1;
  }
  const int blocks = argc > 3 ? std::atoi(argv[3]) : 32, iters = argc > 4 ? std::atoi(argv[4]) : 50;
  const int rank = std::atoi(std::getenv("RANK")), world = std::atoi(std::getenv("WORLD_SIZE"));
  CK(cudaSetDevice(0));
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) {
    nvshmemx_get_uniqueid(&id);
    const std::string tmp = uid_file + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), uid_file.c_str()))
      return std::fprintf(stderr, "cannot write %s\n", uid_file.c_str()), 1;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    FILE *f = nullptr;
    while (!(f = std::fopen(uid_file.c_str(), "rb"))) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60))
        return std::fprintf(stderr, "PE %d: no unique id in %s after 60 s\n", rank, uid_file.c_str()), 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const bool ok = std::fread(&id, sizeof id, 1, f) == 1;
    std::fclose(f);
    if (!ok) return std::fprintf(stderr, "PE %d: short unique id in %s\n", rank, uid_file.c_str()), 1;
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, world, &id, &attr);
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  size_t max = 0;
  for (size_t s : sizes) max = s > max ? s : max;
  char *src = static_cast<char *>(nvshmem_malloc(max)), *dst = static_cast<char *>(nvshmem_malloc(max));
  if (!src || !dst) return std::fprintf(stderr, "nvshmem_malloc(%zu) failed\n", max), 1;
  CK(cudaMemset(src, rank + 1, max));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const int peer = 1 - rank;
  for (size_t n : sizes) {
    nvshmem_barrier_all();
    for (int fence_first = 0; rank == 0 && fence_first < 2; ++fence_first) {
      put_bw<<<blocks, 128, 0, st>>>(dst, src, n, peer, 5, fence_first);
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a));
      CK(cudaEventCreate(&b));
      spin<<<1, 1, 0, st>>>(4000000);
      CK(cudaEventRecord(a, st));
      put_bw<<<blocks, 128, 0, st>>>(dst, src, n, peer, iters, fence_first);
      CK(cudaEventRecord(b, st));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      const double us = ms * 1e3 / iters;
      std::printf("{\"impl\": \"%s\", \"bytes\": %zu, \"blocks\": %d, \"us\": %.2f, \"GBps\": %.2f}\n",
                  fence_first ? "nvshmem+fence" : "nvshmem", n, blocks, us, n / us / 1e3);
      std::fflush(stdout);
    }
    CK(cudaDeviceSynchronize());
  }
  nvshmem_barrier_all();
  nvshmem_free(dst);
  nvshmem_free(src);
  nvshmem_finalize();
  if (rank == 0) ::unlink(uid_file.c_str());
  return 0;
}
