// The NVSHMEM engine of the NVIDIA backend: see nvshmem_engine.hpp.
#include "nvshmem_engine.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "bootstrap/control.hpp"
#include "core/collective.hpp"
#include "core/error.hpp"
#include "cuda_driver.hpp"

#if defined(TDIST_HAVE_NVSHMEM)
// NVSHMEM's host header for its types and constants (its ABI structs are versioned and size-checked
// there); every function is looked up in the library at run time, none is linked.
#include <cuda_runtime.h>

#include "host/nvshmemx_api.h"
// The device library passes NVSHMEM's signal operators as numbers (device.cuh); they must agree.
static_assert(NVSHMEM_SIGNAL_SET == 9 && NVSHMEM_SIGNAL_ADD == 10,
              "device.cuh's TDISTI_NV_NVSHMEM_SIGNAL_SET / _ADD differ from this NVSHMEM's");
#endif

namespace tdist::nv {

namespace {

#if defined(TDIST_HAVE_NVSHMEM)
struct Api {
  int (*get_uniqueid)(nvshmemx_uniqueid_t *);
  int (*set_attr_uniqueid_args)(int, int, const nvshmemx_uniqueid_t *, nvshmemx_init_attr_t *);
  int (*hostlib_init_attr)(unsigned int, nvshmemx_init_attr_t *);
  void (*hostlib_finalize)();
  int (*my_pe)();
  int (*n_pes)();
  void *(*align_)(size_t, size_t);
  void (*free_)(void *);
  void *(*ptr)(const void *, int);
  int (*cumodule_init)(CUmodule);
  int (*cumodule_finalize)(CUmodule);
  void (*barrier_all_on_stream)(CUstream);
  void (*putmem_on_stream)(void *, const void *, size_t, int, CUstream);
  void (*getmem_on_stream)(void *, const void *, size_t, int, CUstream);
  void (*quiet_on_stream)(CUstream);
  void (*signal_op_on_stream)(uint64_t *, uint64_t, int, int, CUstream);
};

std::once_flag g_once;
Api g_api{};
bool g_ok = false;
std::string g_why, g_libdir;

// $TDIST_NVSHMEM_LIB (a path), else the library CMake found at build time, else the loader's search.
void load() {
  std::string path;
  if (const char *e = std::getenv("TDIST_NVSHMEM_LIB"); e && *e) {
    path = e;
  } else {
#ifdef TDIST_NVSHMEM_LIBDIR
    path = std::string(TDIST_NVSHMEM_LIBDIR) + "/libnvshmem_host.so.3";
    if (::access(path.c_str(), R_OK) != 0) path = "libnvshmem_host.so.3";
#else
    path = "libnvshmem_host.so.3";
#endif
  }
  void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = ::dlerror();
    g_why = "NVSHMEM's host library " + path + " could not be loaded (" + (e ? e : "unknown") +
            "): install nvidia-nvshmem-cu13 or set TDIST_NVSHMEM_LIB";
    return;
  }
  Api a{};
  const char *missing = nullptr;
  auto sym = [&](const char *name) {
    void *f = ::dlsym(h, name);
    if (!f && !missing) missing = name;
    return f;
  };
#define TDIST_NVSHMEM_SYM(field, name) a.field = reinterpret_cast<decltype(a.field)>(sym(name))
  TDIST_NVSHMEM_SYM(get_uniqueid, "nvshmemx_get_uniqueid");
  TDIST_NVSHMEM_SYM(set_attr_uniqueid_args, "nvshmemx_set_attr_uniqueid_args");
  TDIST_NVSHMEM_SYM(hostlib_init_attr, "nvshmemx_hostlib_init_attr");
  TDIST_NVSHMEM_SYM(hostlib_finalize, "nvshmemx_hostlib_finalize");
  TDIST_NVSHMEM_SYM(my_pe, "nvshmem_my_pe");
  TDIST_NVSHMEM_SYM(n_pes, "nvshmem_n_pes");
  TDIST_NVSHMEM_SYM(align_, "nvshmem_align");
  TDIST_NVSHMEM_SYM(free_, "nvshmem_free");
  TDIST_NVSHMEM_SYM(ptr, "nvshmem_ptr");
  TDIST_NVSHMEM_SYM(cumodule_init, "nvshmemx_cumodule_init");
  TDIST_NVSHMEM_SYM(cumodule_finalize, "nvshmemx_cumodule_finalize");
  TDIST_NVSHMEM_SYM(barrier_all_on_stream, "nvshmemx_barrier_all_on_stream");
  TDIST_NVSHMEM_SYM(putmem_on_stream, "nvshmemx_putmem_on_stream");
  TDIST_NVSHMEM_SYM(getmem_on_stream, "nvshmemx_getmem_on_stream");
  TDIST_NVSHMEM_SYM(quiet_on_stream, "nvshmemx_quiet_on_stream");
  TDIST_NVSHMEM_SYM(signal_op_on_stream, "nvshmemx_signal_op_on_stream");
#undef TDIST_NVSHMEM_SYM
  if (missing) {
    g_why = std::string("NVSHMEM's host library ") + path + " lacks " + missing;
    return;
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(a.get_uniqueid), &info) && info.dli_fname) {
    std::string f = info.dli_fname;
    g_libdir = f.substr(0, f.rfind('/') == std::string::npos ? 0 : f.rfind('/'));
  }
  g_api = a;
  g_ok = true;
}

// NVSHMEM's start and its collective allocation wait for every PE with no bound tdist can set (its
// own bootstrap). Bounded here: when `f` has not returned after `timeout_s` (the control timeout),
// the process says what it waited for and exits, so that the launcher names a lost rank instead of
// the job hanging. NVSHMEM cannot be interrupted in the middle of its start, so exiting is the one
// bounded way out.
template <class F>
auto bounded(const char *what, int pe, double timeout_s, F &&f) -> decltype(f()) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread guard([&] {
    std::unique_lock<std::mutex> lk(mu);
    if (!cv.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return done; })) {
      std::fprintf(stderr,
                   "tdist[pe %d]: %s did not return within %.0f s (the control timeout): NVSHMEM waits for "
                   "every PE, and one of them is gone or cannot be reached; exiting\n",
                   pe, what, timeout_s);
      std::fflush(stderr);
      std::_Exit(3);
    }
  });
  auto finish = [&] {
    {
      std::lock_guard<std::mutex> lk(mu);
      done = true;
    }
    cv.notify_one();
    guard.join();
  };
  try {
    auto r = f();
    finish();
    return r;
  } catch (...) {
    finish();
    throw;
  }
}

const Api &api() {
  std::call_once(g_once, load);
  TDIST_CHECK(g_ok, TDIST_ERR_NOT_SUPPORTED, "the NVSHMEM engine: %s", g_why.c_str());
  return g_api;
}
#endif

}  // namespace

bool nvshmem_available(std::string *why) {
#if defined(TDIST_HAVE_NVSHMEM)
  std::call_once(g_once, load);
  if (!g_ok && why) *why = g_why;
  return g_ok;
#else
  if (why) *why = "libtdist was built without NVSHMEM's headers (configure with TDIST_NVSHMEM_ROOT)";
  return false;
#endif
}

std::string NvshmemEngine::device_bitcode() {
  if (const char *e = std::getenv("TDIST_NVSHMEM_DEVICE_BITCODE"); e && *e) return e;
#if defined(TDIST_HAVE_NVSHMEM)
  if (!nvshmem_available()) return {};
  std::string f = g_libdir + "/libnvshmem_device.bc";
  return ::access(f.c_str(), R_OK) == 0 ? f : std::string();
#else
  return {};
#endif
}

#if defined(TDIST_HAVE_NVSHMEM)
NvshmemEngine::NvshmemEngine(ControlPlane &cp, size_t bytes, CUcontext ctx) {
  (void)ctx;  // the caller made it current: NVSHMEM takes the current context
  const Api &a = api();
  // NVSHMEM reserves its own buffers in the symmetric heap: room for tdist's heap and that, unless
  // the user sized it (an undersized heap fails the allocation below, naming the variable).
  if (!std::getenv("NVSHMEM_SYMMETRIC_SIZE")) {
    const std::string sz = std::to_string(bytes + kHeapGranule + (size_t(512) << 20));
    ::setenv("NVSHMEM_SYMMETRIC_SIZE", sz.c_str(), 0);
  }
  // The unique id travels through tdist's store (authenticated, bounded); NVSHMEM's own bootstrap
  // then connects the PEs with it.
  nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
  std::string mine;
  if (cp.rank() == 0) {
    TDIST_CHECK(a.get_uniqueid(&uid) == 0, TDIST_ERR_INNER, "nvshmemx_get_uniqueid failed");
    mine.assign(reinterpret_cast<const char *>(&uid), sizeof uid);
  }
  const std::string got = cp.broadcast(mine, 0);
  TDIST_CHECK(got.size() == sizeof uid, TDIST_ERR_INNER,
              "NVSHMEM unique id of %zu bytes from PE 0, expected %zu", got.size(), sizeof uid);
  std::memcpy(&uid, got.data(), sizeof uid);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  TDIST_CHECK(a.set_attr_uniqueid_args(cp.rank(), cp.size(), &uid, &attr) == 0, TDIST_ERR_INNER,
              "nvshmemx_set_attr_uniqueid_args(%d, %d) failed", cp.rank(), cp.size());
  const double bound = cp.op_timeout_s();
  int rc = bounded("NVSHMEM's start (nvshmemx_hostlib_init_attr)", cp.rank(), bound,
                   [&] { return a.hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr); });
  TDIST_CHECK(rc == 0, TDIST_ERR_BOOTSTRAP,
              "NVSHMEM failed to start on PE %d of %d (nvshmemx_hostlib_init_attr: %d)", cp.rank(), cp.size(),
              rc);
  started_ = true;
  if (a.my_pe() != cp.rank() || a.n_pes() != cp.size()) {
    const int p = a.my_pe(), n = a.n_pes();
    a.hostlib_finalize();
    started_ = false;
    TDIST_THROW(TDIST_ERR_INNER, "NVSHMEM numbered this PE %d of %d, tdist %d of %d", p, n, cp.rank(),
                cp.size());
  }
  // aligned as tdist's own heaps are, so that an allocation's alignment (up to kHeapGranule) holds
  // for its address and not only for its heap offset
  heap_ = bounded("the collective nvshmem_align of the heap", cp.rank(), bound,
                  [&] { return a.align_(kHeapGranule, bytes); });
  if (!heap_) {
    a.hostlib_finalize();
    started_ = false;
    TDIST_THROW(
        TDIST_ERR_SMEM,
        "nvshmem_align(%zu, %zu bytes) for the symmetric heap failed on PE %d (NVSHMEM_SYMMETRIC_SIZE=%s)",
        kHeapGranule, bytes, cp.rank(), std::getenv("NVSHMEM_SYMMETRIC_SIZE"));
  }
}

NvshmemEngine::~NvshmemEngine() {
  if (!started_) return;
  const Api &a = g_api;
  if (heap_) a.free_(heap_);  // collective, as tdist_finalize is
  a.hostlib_finalize();
}

void *NvshmemEngine::ptr(void *addr, int pe) const { return g_api.ptr(addr, pe); }

bool NvshmemEngine::module_init(CUmodule m, const char *api_name) const {
  const cu::Driver *drv = cu::driver();
  CUdeviceptr sym = 0;
  size_t sz = 0;
  if (!drv || drv->cuModuleGetGlobal(&sym, &sz, m, "nvshmemi_device_state_d") != CUDA_SUCCESS) return false;
  const int rc = g_api.cumodule_init(m);
  TDIST_CHECK(rc == 0, TDIST_ERR_SMEM, "%s: nvshmemx_cumodule_init failed (%d)", api_name, rc);
  return true;
}

void NvshmemEngine::module_finalize(CUmodule m) const { g_api.cumodule_finalize(m); }

void NvshmemEngine::barrier_all_on_stream(CUstream stream) const { g_api.barrier_all_on_stream(stream); }

void NvshmemEngine::putmem_on_stream(void *sym_dst, const void *src, size_t n, int pe,
                                     CUstream stream) const {
  g_api.putmem_on_stream(sym_dst, src, n, pe, stream);
  g_api.quiet_on_stream(stream);  // delivered before the stream's next operation, as a copy would be
}

void NvshmemEngine::getmem_on_stream(void *dst, const void *sym_src, size_t n, int pe,
                                     CUstream stream) const {
  g_api.getmem_on_stream(dst, sym_src, n, pe, stream);
}

void NvshmemEngine::signal_set_on_stream(uint64_t *sym_sig, uint64_t value, int pe, CUstream stream) const {
  g_api.signal_op_on_stream(sym_sig, value, NVSHMEM_SIGNAL_SET, pe, stream);
}
#else
NvshmemEngine::NvshmemEngine(ControlPlane &, size_t, CUcontext) {
  std::string why;
  nvshmem_available(&why);
  TDIST_THROW(TDIST_ERR_NOT_SUPPORTED, "the NVSHMEM engine: %s", why.c_str());
}
NvshmemEngine::~NvshmemEngine() = default;
void *NvshmemEngine::ptr(void *, int) const { return nullptr; }
bool NvshmemEngine::module_init(CUmodule, const char *) const { return false; }
void NvshmemEngine::module_finalize(CUmodule) const {}
void NvshmemEngine::barrier_all_on_stream(CUstream) const {}
void NvshmemEngine::putmem_on_stream(void *, const void *, size_t, int, CUstream) const {}
void NvshmemEngine::getmem_on_stream(void *, const void *, size_t, int, CUstream) const {}
void NvshmemEngine::signal_set_on_stream(uint64_t *, uint64_t, int, CUstream) const {}
#endif

}  // namespace tdist::nv
