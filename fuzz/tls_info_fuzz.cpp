// libFuzzer target for the store's TLS configuration parser (parse_store_tls_info in
// runtime/bootstrap/tls.cpp): the `tls_info` string of tdist_set_conf_store_tls and
// TDIST_STORE_TLS_INFO, which comes from users and environments.
//
// Invariants checked (a violation aborts, which libFuzzer reports):
//   - the parser either returns or throws tdist::Error with TDIST_ERR_INVALID_PARAM (nothing else);
//   - with enable = 0 it returns the empty configuration whatever the string (once it parses);
//   - what it accepts round-trips: the configuration written back as key=value pairs parses to the
//     same configuration.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/tls.hpp"
#include "core/error.hpp"

using namespace tdist;

namespace {
void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "TLS info parser invariant violated: %s\n", what);
    std::abort();
  }
}

bool same(const StoreTlsConfig &a, const StoreTlsConfig &b) {
  return a.enable == b.enable && a.ca_file == b.ca_file && a.cert_file == b.cert_file &&
         a.key_file == b.key_file && a.verify_client == b.verify_client && a.verify_host == b.verify_host;
}

bool parse(bool enable, const std::string &s, StoreTlsConfig *out) {
  try {
    *out = parse_store_tls_info(enable, s);
    return true;
  } catch (const Error &e) {
    check(e.code() == TDIST_ERR_INVALID_PARAM, "an error other than INVALID_PARAM");
    check(std::string(e.what()).find("store TLS info") != std::string::npos,
          "an error that does not say what");
    return false;
  } catch (...) {
    check(false, "an exception that is not tdist::Error");
    return false;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const bool enable = data[0] & 1;
  std::string s(reinterpret_cast<const char *>(data + 1), size - 1);
  StoreTlsConfig c;
  if (!parse(enable, s, &c)) return 0;
  if (!enable) {
    check(same(c, StoreTlsConfig{}), "enable = 0 gave a configuration");
    return 0;
  }
  check(c.enable, "enable lost");
  for (const std::string *v : {&c.ca_file, &c.cert_file, &c.key_file})
    check(v->find_first_of(";,") == std::string::npos, "a separator inside a value");
  std::string back = "ca=" + c.ca_file + ";cert=" + c.cert_file + ";key=" + c.key_file +
                     ";verify_client=" + (c.verify_client ? "1" : "0") +
                     ";verify_host=" + (c.verify_host ? "1" : "0");
  StoreTlsConfig again;
  // Values end where the parser trims them: a value with trailing spaces (not accepted back) is
  // the one form that cannot round-trip, and the parser never produces it.
  check(parse(true, back, &again), "the written-back configuration does not parse");
  check(same(c, again), "round trip changed the configuration");
  return 0;
}
