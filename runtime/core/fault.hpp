// The fault record of this PE (docs/CONTRACT.md section 2): the one writer of the fault fields of
// tdist_device_state_t (code, PE, heap offset, cmp, expected, seen) on the host. Its writers are the
// CPU backend's device ABI (a wait that timed out, a bad call inside a launch) and the watchdog (a
// lost peer); after writing, the record is published by the backend's transport
// (HeapTransport::publish_fault): the heap's fault flag (TDIST_SYNC_FAULT_OFF), the waiters it
// wakes, and, for the NVIDIA backend, the GPU's copy of the record. GPU code records its own faults
// in that copy (include/tdist/NVIDIA/device.cuh), the same record; tdist_cuda_check_fault reports it.
//
// One record per process, like the context: bind_fault_record() attaches it to the state and the
// transport at init, unbind_fault_record() detaches it at finalize (after the watchdog stopped,
// before the heap is unmapped). Every function here is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "tdist/device_state.h"

namespace tdist {

class HeapTransport;

// What a fault is about, as the state's fault fields hold it.
struct Fault {
  int32_t code = 0;       // a tdist_status_t
  int32_t pe = -1;        // the PE whose memory was waited on / targeted
  uint64_t offset = 0;    // heap offset of the slot (0 when none)
  int32_t cmp = -1;       // the wait's tdist_cmp_t; -1 for what is not a wait
  uint64_t expected = 0;  // what the wait waited for
  uint64_t seen = 0;      // what it saw last (a bad call: the address)
};

void bind_fault_record(tdist_device_state_t *state, HeapTransport *transport);
void unbind_fault_record();

// The recorded fault's code (0: none). Acquire: a reader that sees the code sees the record.
inline int32_t fault_code(const tdist_device_state_t &s) {
  return std::atomic_ref<int32_t>(const_cast<int32_t &>(s.fault_code)).load(std::memory_order_acquire);
}

// Records `f` as the sticky fault of this PE unless one is recorded already (the first fault is
// the cause), then publishes it. `note` says in words what the fault was about when the numbers
// cannot (a bad call's reason, a block event's wait). With TDIST_DEBUG set, prints the diagnostic
// and aborts. Does nothing when no record is bound (before init, after finalize).
void record_fault(const Fault &f, const std::string &note = {});

// Records that PE `lost_pe` was lost (TDIST_ERR_BOOTSTRAP): overrides an earlier fault (the loss is
// the cause) and is never cleared. Called by the watchdog thread.
void record_peer_lost(int lost_pe);

// Takes the fault for reporting: returns 0 if none, else its code with *what describing it (for a
// lost peer, the watchdog's message). Clears it, and its heap flag, unless it is a lost peer.
int take_fault(std::string *what);

}  // namespace tdist
