// The process-wide runtime state behind the C API. One per process (a PE is a process).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/control.hpp"
#include "core/transport.hpp"
#include "heap/allocator.hpp"
#include "tdist/tdist.h"

namespace tdist {

struct Team {
  bool valid = false;
  int start = 0, stride = 1, size = 0;  // members are world PEs start + i * stride
  int my_pe = -1;                        // this PE's index in the team, -1 if not a member
};

struct Context {
  tdist_init_attr_t attr{};
  std::unique_ptr<ControlPlane> cp;
  std::unique_ptr<HeapTransport> transport;
  std::unique_ptr<HeapAllocator> alloc;
  tdist_device_state_t state{};  // host copy; the CPU device ABI reads this one
  std::vector<void *> p2p, rdma, sdma;
  uint64_t collective_seq = 0;
  std::vector<Team> teams;
  bool cpu_backend = true;
  std::mutex mu;  // serialises host API calls of this process
};

// nullptr when tdist is not initialised.
Context *context();
// Throws TDIST_ERR_NOT_INITED naming `api` when tdist is not initialised.
Context &require_context(const char *api);

// Host-side bounded wait helpers shared with the CPU device ABI.
uint64_t now_ns();

}  // namespace tdist

extern "C" {
// The device state CPU device code reads (nullptr before init / after finalize).
extern tdist_device_state_t *tdisti_cpu_device_state;
// Internal: drain outstanding nbi operations of this process (the CPU copy engine).
void tdisti_cpu_quiet_all(void);
// Internal: wait, with the device-side timeout/fault rules, until the local uint64 at `addr`
// satisfies `cmp` against `value` (or value+1 when `plus_one` is set, barrier tolerance).
// `pe` is the PE that owns `addr` (for the diagnostic). Returns the seen value.
uint64_t tdisti_cpu_wait_u64(const volatile uint64_t *addr, int cmp, uint64_t value, int pe,
                             int barrier_tolerance);
// Centralised pull barrier over all PEs using the epoch slot at heap offset `slot_off`.
void tdisti_cpu_pull_barrier(uint64_t slot_off);
}
