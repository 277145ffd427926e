// Per-PE watchdog: a background thread holding a watch-only connection to the bootstrap store.
// The store tells it at once when any rank is lost (connection closed before finalize, or never
// joined) or the store itself goes away (rank 0 lost). It then records a sticky
// TDIST_ERR_BOOTSTRAP fault naming the lost rank in this PE's device state, so every device or
// host wait in progress returns within one back-off step (<= 1 ms) instead of hanging until its
// timeout, and keeps the store's message for the error the launch / barrier reports.
//
// Contract: a lost-peer fault is never cleared (the job cannot recover); every later launch and
// wait fails at once with it. Only the CPU backend's waits read the host device state; the CUDA
// backend gets the message on the host side (device waits there are bounded by their timeout).
#pragma once

#include <functional>

#include <string>

#include "tdist/device_state.h"

namespace tdist {

class ControlPlane;

// Starts the watchdog of this process (one per process, like the context). Throws BOOTSTRAP if
// the watch connection cannot be made. `state` must outlive stop_watchdog().
// `after_fault` runs on the watchdog thread once the fault is in `state` (e.g. to copy it to the GPU).
void start_watchdog(const ControlPlane &cp, tdist_device_state_t *state,
                    std::function<void()> after_fault = {});
// Stops and joins it; idempotent. Call before the state or the store goes away.
void stop_watchdog();
// The first peer loss this process learned of: the store's message ("" if none) and the rank
// (-1 if none or unknown). Thread-safe; survives stop_watchdog() until the next start.
std::string peer_lost_message();
int peer_lost_rank();

// Implemented by the device ABI (runtime/CPU/abi.cpp), which owns the fault record:
// records a lost peer in `s` (overriding an earlier fault: the loss is the cause) ...
void record_peer_lost(tdist_device_state_t &s, int lost_pe);
// ... and takes the sticky fault for reporting: returns 0 if none, else its code with *what
// describing it (for a lost peer, the watchdog's message). Clears it unless it is a lost peer.
int take_device_fault(tdist_device_state_t &s, std::string *what);

}  // namespace tdist
