// Runs the compiler-lowered ring_exchange_gpu kernel (PTX from tdist-opt --tdist-pipeline=gpu,
// linked with the NVIDIA device bitcode) on every PE through the CUDA backend:
//   tdist-run -n N -- compiler_e2e_ring_gpu ring_exchange_gpu.ptx
// The module is loaded with the driver API and registered with tdist, which patches its device
// state (the seed's GPU "patching"); every round checks each program's value from the previous
// PE exactly, with poisoned outputs. Without a GPU it says so and exits 0 (CI).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tdist/NVIDIA/host.h"
#include "tdist/tdist.h"

namespace {

// The few driver entry points needed, loaded at run time (the binary starts without libcuda).
typedef int (*ModuleLoadData)(void **, const void *);
typedef int (*ModuleGetFunction)(void **, void *, const char *);
typedef int (*LaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            void *, void **, void **);
typedef int (*ModuleUnload)(void *);

int fail(const char *what, const char *detail) {
  std::fprintf(stderr, "compiler_e2e_ring_gpu: %s: %s\n", what, detail);
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) return fail("usage", "compiler_e2e_ring_gpu <ring_exchange_gpu.ptx>");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("compiler_e2e_ring_gpu: no GPU visible; skipped (the PTX was built and checked)\n");
    return 0;
  }
  std::ifstream f(argv[1]);
  if (!f) return fail("cannot read", argv[1]);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string ptx = ss.str();

  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 64ull << 20;
  a.option_attr.backend = TDIST_BACKEND_CUDA;
  a.option_attr.wait_timeout_ms = 20000;
  if (tdist_init_from_env(&a) != TDIST_SUCCESS)
    return fail("tdist_init_from_env", tdist_last_error_message());
  const int me = tdist_team_my_pe(TDIST_TEAM_WORLD), n = tdist_team_n_pes(TDIST_TEAM_WORLD);
  if (cudaSetDevice(tdist_cuda_device()) != cudaSuccess || cudaFree(nullptr) != cudaSuccess)
    return fail("cudaSetDevice", "no context");

  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail("dlopen libcuda.so.1", dlerror());
  auto load = reinterpret_cast<ModuleLoadData>(dlsym(lib, "cuModuleLoadData"));
  auto getfn = reinterpret_cast<ModuleGetFunction>(dlsym(lib, "cuModuleGetFunction"));
  auto launch = reinterpret_cast<LaunchKernel>(dlsym(lib, "cuLaunchKernel"));
  auto unload = reinterpret_cast<ModuleUnload>(dlsym(lib, "cuModuleUnload"));
  if (!load || !getfn || !launch || !unload) return fail("libcuda", "missing entry points");
  void *mod = nullptr, *fn = nullptr;
  if (load(&mod, ptx.c_str()) != 0) return fail("cuModuleLoadData", argv[1]);
  if (tdist_cuda_register_module(mod) != TDIST_SUCCESS) return fail("register", tdist_last_error_message());
  if (getfn(&fn, mod, "ring_exchange_gpu") != 0) return fail("cuModuleGetFunction", "ring_exchange_gpu");

  const int P = 8;
  auto *buf = static_cast<float *>(tdist_malloc(P * sizeof(float)));
  // two 64-byte signal slots per program (set, count); zeroed once: the count adds up over rounds
  auto *sig = static_cast<int32_t *>(tdist_calloc(2 * P, 64));
  float *out = nullptr;
  if (!buf || !sig) return fail("tdist_malloc", tdist_last_error_message());
  if (cudaMalloc(&out, P * sizeof(float)) != cudaSuccess) return fail("cudaMalloc", "out");
  const int prev = (me + n - 1) % n;
  int bad = 0;
  for (int round = 1; round <= 3; ++round) {
    std::vector<float> nan(P, NAN), poison(P, -1.0f);
    cudaMemcpy(out, nan.data(), P * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(buf, poison.data(), P * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    if (tdist_host_barrier_all() != TDIST_SUCCESS) return fail("barrier", tdist_last_error_message());
    float salt = 0.5f * round;
    int32_t r = round;
    void *args[] = {&buf, &sig, &out, &salt, &r};
    if (launch(fn, P, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) != 0) return fail("cuLaunchKernel", "ring");
    if (cudaDeviceSynchronize() != cudaSuccess) return fail("kernel", cudaGetErrorString(cudaGetLastError()));
    if (tdist_cuda_check_fault(nullptr) != TDIST_SUCCESS)
      return fail("device fault", tdist_last_error_message());
    std::vector<float> got(P);
    cudaMemcpy(got.data(), out, P * sizeof(float), cudaMemcpyDeviceToHost);
    for (int p = 0; p < P; ++p) {
      const float want = salt + float(prev) * 1000.0f + float(p);
      if (!(got[p] == want)) {
        std::fprintf(stderr, "PE %d round %d program %d: got %g, want %g (from PE %d)\n", me, round, p,
                     got[p], want, prev);
        ++bad;
      }
    }
    // nobody writes a peer's buffer for the next round before that peer has read this one
    if (tdist_host_barrier_all() != TDIST_SUCCESS) return fail("barrier", tdist_last_error_message());
  }
  tdist_cuda_unregister_module(mod);
  unload(mod);
  cudaFree(out);
  tdist_free(sig);
  tdist_free(buf);
  tdist_finalize();
  if (bad) return fail("wrong data", (std::to_string(bad) + " value(s)").c_str());
  std::printf("compiler_e2e_ring_gpu: PE %d of %d: 3 rounds x %d programs correct\n", me, n, P);
  return 0;
}
