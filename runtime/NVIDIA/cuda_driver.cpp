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
  // dlsym the exact symbol each cuda.h declaration names (cuMemAlloc -> cuMemAlloc_v2, ...), so
  // the pointer's type matches the symbol. (cuGetProcAddress with an unversioned name returns the
  // newest ABI for the requested CUDA version, e.g. cuCtxSynchronize_v2(CUcontext) under 13.0,
  // which does not match the header's cuCtxSynchronize(void).)
  Driver d;
#define TDIST_CU_STR2(x) #x
#define TDIST_CU_STR(x) TDIST_CU_STR2(x)
#define TDIST_CU_LOAD(name)                                  \
  {                                                          \
    void *fn = ::dlsym(h, TDIST_CU_STR(name));               \
    if (!fn) {                                               \
      g_why = "the NVIDIA driver lacks " TDIST_CU_STR(name); \
      return;                                                \
    }                                                        \
    d.name = reinterpret_cast<decltype(d.name)>(fn);         \
  }
  TDIST_CU_FUNCTIONS(TDIST_CU_LOAD)
#undef TDIST_CU_LOAD
#define TDIST_CU_LOAD_OPTIONAL(name) \
  d.name = reinterpret_cast<decltype(d.name)>(::dlsym(h, TDIST_CU_STR(name)));
  TDIST_CU_OPTIONAL_FUNCTIONS(TDIST_CU_LOAD_OPTIONAL)
#undef TDIST_CU_LOAD_OPTIONAL
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
