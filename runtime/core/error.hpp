// The C++ side of tdist's one error model (docs/CONTRACT.md section 2).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "tdist/tdist.h"

namespace tdist {

class Error : public std::runtime_error {
 public:
  Error(int code, std::string msg) : std::runtime_error(std::move(msg)), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// printf-style formatting into std::string.
std::string strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Records the error for tdist_last_error*() on this thread; returns `code`.
int set_last_error(int code, const std::string &msg);

// Runs `fn` at a C boundary: converts tdist::Error / std::exception into a status and a
// thread-local message. Nothing throws across extern "C".
template <class Fn>
int c_boundary(const char *api, Fn &&fn) noexcept {
  try {
    fn();
    return TDIST_SUCCESS;
  } catch (const Error &e) {
    return set_last_error(e.code(), std::string(api) + ": " + e.what());
  } catch (const std::exception &e) {
    return set_last_error(TDIST_ERR_INNER, std::string(api) + ": internal error: " + e.what());
  } catch (...) {
    return set_last_error(TDIST_ERR_INNER, std::string(api) + ": unknown internal error");
  }
}

}  // namespace tdist

// Throws tdist::Error(code, "<message> [file:line]").
#define TDIST_THROW(code, ...) \
  throw ::tdist::Error((code), \
                       ::tdist::strfmt(__VA_ARGS__) + " [" __FILE__ ":" + std::to_string(__LINE__) + "]")

#define TDIST_CHECK(cond, code, ...)             \
  do {                                           \
    if (!(cond)) TDIST_THROW(code, __VA_ARGS__); \
  } while (0)
