// Per-PE watchdog: a background thread holding a watch-only connection to the bootstrap store.
// The store tells it at once when any rank is lost (connection closed before finalize, or never
// joined) or the store itself goes away (rank 0 lost). It then records a sticky
// TDIST_ERR_BOOTSTRAP fault naming the lost rank in this PE's device state, so every device or
// host wait in progress returns within one back-off step (<= 1 ms) instead of hanging until its
// timeout, and keeps the store's message for the error the launch / barrier reports.
//
// Contract: a lost-peer fault is never cleared (the job cannot recover); every later launch and
// wait fails at once with it. The fault record publishes it through the backend's transport: the
// CPU backend's waits read the host state, the CUDA backend copies the record to the GPU.
#pragma once

#include <string>

namespace tdist {

class ControlPlane;

// Starts the watchdog of this process (one per process, like the context). Throws BOOTSTRAP if
// the watch connection cannot be made. A loss it learns of goes to the fault record
// (record_peer_lost, core/fault.hpp), which must stay bound until stop_watchdog().
void start_watchdog(const ControlPlane &cp);
// Stops and joins it; idempotent. Call before the state or the store goes away.
void stop_watchdog();
// The first peer loss this process learned of: the store's message ("" if none) and the rank
// (-1 if none or unknown). Thread-safe; survives stop_watchdog() until the next start.
std::string peer_lost_message();
int peer_lost_rank();

}  // namespace tdist
