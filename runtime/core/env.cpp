#include "core/env.hpp"

#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "tdist/tdist.h"

namespace tdist {

uint64_t env_uint(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi) {
  const char *v = std::getenv(name);
  if (!v || !*v) return dflt;
  bool ok = std::strlen(v) <= 20;
  uint64_t x = 0;
  for (const char *p = v; ok && *p; ++p) {
    ok = *p >= '0' && *p <= '9' && !__builtin_mul_overflow(x, 10u, &x) &&
         !__builtin_add_overflow(x, uint64_t(*p - '0'), &x);
  }
  TDIST_CHECK(ok && x >= lo && x <= hi, TDIST_ERR_INVALID_PARAM,
              "environment variable %s='%.64s' is not a decimal number in [%llu, %llu]", name, v,
              (unsigned long long)lo, (unsigned long long)hi);
  return x;
}

bool env_flag(const char *name, bool dflt) {
  const char *v = std::getenv(name);
  if (!v || !*v) return dflt;
  TDIST_CHECK(std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0, TDIST_ERR_INVALID_PARAM,
              "environment variable %s='%.64s' must be 0 or 1", name, v);
  return v[0] == '1';
}

RocePeers env_roce_peers() {
  const char *v = std::getenv("TDIST_ROCE_PEERS");
  if (!v || !*v || std::strcmp(v, "remote") == 0) return RocePeers::kRemote;
  if (std::strcmp(v, "all") == 0) return RocePeers::kAll;
  if (std::strcmp(v, "none") == 0) return RocePeers::kNone;
  TDIST_THROW(TDIST_ERR_INVALID_PARAM,
              "environment variable TDIST_ROCE_PEERS='%.64s' must be 'remote', 'all' or 'none'", v);
}

uint64_t env_wait_timeout_ms() {
  return env_uint("TDIST_WAIT_TIMEOUT_MS", TDIST_DEFAULT_WAIT_TIMEOUT_MS, 0, kMaxTimeoutMs);
}

uint64_t env_heartbeat_timeout_ms() {
  return env_uint("TDIST_HEARTBEAT_TIMEOUT_MS", kDefaultHeartbeatTimeoutMs, 0, kMaxTimeoutMs);
}

void check_environment() {
  env_wait_timeout_ms();
  env_heartbeat_timeout_ms();
  env_uint("TDIST_STORE_PORT", 0, 1, 65535);
  env_flag("TDIST_DEBUG", false);
}

}  // namespace tdist
