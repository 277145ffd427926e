#include "cuda_driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "core/error.hpp"

namespace tdist::cu {

namespace {
std::once_flag g_once;
Driver g_driver;
bool g_ok = false;
std::string g_why;

void load() {
  void *h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = ::dlerror();
    g_why = std::string("cannot load the NVIDIA driver (libcuda.so.1): ") + (e ? e : "unknown");
    return;
  }
  using GetProc = decltype(&::cuGetProcAddress);  // cuGetProcAddress_v2 in CUDA 12+ headers
  auto get = reinterpret_cast<GetProc>(::dlsym(h, "cuGetProcAddress_v2"));
  if (!get) {
    g_why = "the NVIDIA driver is too old (no cuGetProcAddress_v2; tdist needs a CUDA 12+ driver)";
    return;
  }
  Driver d;
#define TDIST_CU_LOAD(name)                                                                 \
  {                                                                                         \
    void *fn = nullptr;                                                                     \
    CUdriverProcAddressQueryResult q;                                                       \
    if (get(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||   \
        !fn) {                                                                              \
      g_why = "the NVIDIA driver lacks " #name;                                             \
      return;                                                                               \
    }                                                                                       \
    d.name = reinterpret_cast<decltype(d.name)>(fn);                                        \
  }
  TDIST_CU_FUNCTIONS(TDIST_CU_LOAD)
#undef TDIST_CU_LOAD
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_driver = d;  // for result_string
    g_why = "cuInit failed: " + result_string(r);
    return;
  }
  int n = 0;
  if (d.cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    g_why = "the NVIDIA driver sees no GPU";
    return;
  }
  g_driver = d;
  g_ok = true;
}
}  // namespace

const Driver *driver(std::string *why) {
  std::call_once(g_once, load);
  if (why) *why = g_why;
  return g_ok ? &g_driver : nullptr;
}

std::string result_string(CUresult r) {
  const char *name = nullptr, *msg = nullptr;
  if (g_driver.cuGetErrorName) g_driver.cuGetErrorName(r, &name);
  if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &msg);
  return strfmt("%s (%d%s%s)", name ? name : "CUDA error", int(r), msg ? ": " : "", msg ? msg : "");
}

}  // namespace tdist::cu
