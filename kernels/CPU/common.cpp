#include "common.hpp"

#include <cstdio>

namespace tdist::kernels::cpu {
namespace {
thread_local std::string g_error;
}

const char *last_error_message() { return g_error.c_str(); }

namespace detail {

int fail(int code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_error = std::string("tdist kernels: ") + buf + " (" + tdist_status_name(code) + ")";
  return code;
}

int fail_runtime(const char *what, int status) {
  const char *msg = tdist_last_error_message();
  g_error = std::string("tdist kernels: ") + what + ": " + tdist_status_name(status) +
            (msg && *msg ? std::string(": ") + msg : std::string());
  return status;
}

void clear_error() { g_error.clear(); }

void *sym_alloc(size_t bytes, const char *what) {
  void *p = tdist_malloc(bytes ? bytes : 1);
  if (!p) {
    int st = tdist_last_error();
    fail_runtime(what, st ? st : TDIST_ERR_MALLOC_FAILED);
  }
  return p;
}

int64_t *sym_alloc_signals(int64_t n_slots, const char *what, size_t *bytes) {
  *bytes = slot_bytes(n_slots);
  auto *p = static_cast<int64_t *>(tdist_calloc(*bytes ? *bytes : 1, 1));
  if (!p) {
    int st = tdist_last_error();
    fail_runtime(what, st ? st : TDIST_ERR_MALLOC_FAILED);
  }
  return p;
}

void sym_free(void *p) {
  if (p) (void)tdist_free(p);
}

int launch_with_protocol(const char *kernel, int64_t *signals, size_t signal_bytes, int grid,
                         tdist_cpu_kernel_fn fn, void *args) {
  if (signals && signal_bytes) std::memset(signals, 0, signal_bytes);
  int st = tdist_host_barrier_all();
  if (st != TDIST_SUCCESS) return fail_runtime("host barrier before launch", st);
  int launch_st = tdist_cpu_launch(grid, fn, args);
  std::string launch_msg = launch_st ? tdist_last_error_message() : "";
  st = tdist_host_barrier_all();
  if (launch_st != TDIST_SUCCESS) return fail(launch_st, "%s: launch failed: %s", kernel, launch_msg.c_str());
  if (st != TDIST_SUCCESS) return fail_runtime("host barrier after launch", st);
  return TDIST_SUCCESS;
}

}  // namespace detail
}  // namespace tdist::kernels::cpu
