// The runtime's environment variables, parsed strictly (docs/CONTRACT.md section 2): a numeric
// value is decimal digits only (no sign, spaces, suffix or exponent) within the variable's range;
// anything else is TDIST_ERR_INVALID_PARAM naming the variable and the value. Never a silent
// fallback: `5s`, `abc`, `-1` and a value that overflows its unit are refused.
#pragma once

#include <cstdint>

namespace tdist {

// Upper bound of a millisecond value that still fits uint64 nanoseconds.
constexpr uint64_t kMaxTimeoutMs = UINT64_MAX / 1000000u;

// The value of `name`, or `dflt` when unset or empty; throws INVALID_PARAM unless it is a decimal
// number in [lo, hi].
uint64_t env_uint(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi);
// A flag: unset/empty -> dflt, "0" -> false, "1" -> true; anything else throws INVALID_PARAM.
bool env_flag(const char *name, bool dflt);
// Parses every numeric TDIST_* variable the runtime reads (TDIST_WAIT_TIMEOUT_MS,
// TDIST_HEARTBEAT_TIMEOUT_MS, TDIST_STORE_PORT, TDIST_DEBUG): tdist_init calls it first, so a bad
// value fails init even where the value itself would not be used.
void check_environment();

// TDIST_ROCE_PEERS, which peers a backend's ROCE engine reaches (UCX on the CPU backend, NVSHMEM on
// the NVIDIA one): "remote" (the default, also unset or empty: the PEs of other hosts), "all" (every
// other PE: the engine tested on one host) or "none" (the engine off). Anything else throws
// INVALID_PARAM naming the value.
enum class RocePeers { kNone, kRemote, kAll };
RocePeers env_roce_peers();

// The wait budget from TDIST_WAIT_TIMEOUT_MS (default TDIST_DEFAULT_WAIT_TIMEOUT_MS).
uint64_t env_wait_timeout_ms();
// The watchdog heartbeat bound from TDIST_HEARTBEAT_TIMEOUT_MS (rank 0's value serves the job;
// default kDefaultHeartbeatTimeoutMs; 0 = no heartbeat).
constexpr uint64_t kDefaultHeartbeatTimeoutMs = 10000;
uint64_t env_heartbeat_timeout_ms();

}  // namespace tdist
