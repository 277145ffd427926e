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
#define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) \
  case TDIST_##name: return "TDIST_" #name;
#include "tdist/status.def"
#undef TDIST_STATUS
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
