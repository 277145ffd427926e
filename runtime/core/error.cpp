#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace tdist {

namespace {
thread_local int t_last_code = TDIST_SUCCESS;
thread_local std::string t_last_msg;
}  // namespace

std::string strfmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, ap2);
  va_end(ap2);
  return out;
}

int set_last_error(int code, const std::string &msg) {
  t_last_code = code;
  t_last_msg = msg;
  return code;
}

}  // namespace tdist

extern "C" {

const char *tdist_status_name(int status) {
  switch (status) {
    case TDIST_SUCCESS: return "TDIST_SUCCESS";
    case TDIST_ERR_INVALID_PARAM: return "TDIST_ERR_INVALID_PARAM";
    case TDIST_ERR_INVALID_VALUE: return "TDIST_ERR_INVALID_VALUE";
    case TDIST_ERR_SMEM: return "TDIST_ERR_SMEM";
    case TDIST_ERR_INNER: return "TDIST_ERR_INNER";
    case TDIST_ERR_NOT_INITED: return "TDIST_ERR_NOT_INITED";
    case TDIST_ERR_BOOTSTRAP: return "TDIST_ERR_BOOTSTRAP";
    case TDIST_ERR_TIMEOUT: return "TDIST_ERR_TIMEOUT";
    case TDIST_ERR_MALLOC_FAILED: return "TDIST_ERR_MALLOC_FAILED";
    case TDIST_ERR_COLLECTIVE_MISMATCH: return "TDIST_ERR_COLLECTIVE_MISMATCH";
    case TDIST_ERR_NOT_SUPPORTED: return "TDIST_ERR_NOT_SUPPORTED";
    default: return "TDIST_ERR_UNKNOWN";
  }
}

int tdist_last_error(void) { return tdist::t_last_code; }
const char *tdist_last_error_message(void) { return tdist::t_last_msg.c_str(); }
void tdist_clear_error(void) {
  tdist::t_last_code = TDIST_SUCCESS;
  tdist::t_last_msg.clear();
}

}  // extern "C"
