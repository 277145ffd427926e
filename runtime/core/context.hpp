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
  int my_pe = -1;                       // this PE's index in the team, -1 if not a member
};

struct Context {
  tdist_init_attr_t attr{};
  std::unique_ptr<ControlPlane> cp;
  std::unique_ptr<HeapTransport> transport;
  std::unique_ptr<HeapAllocator> alloc;
  tdist_device_state_t state{};  // host copy; the CPU device ABI reads this one (publish())
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

// Monotonic clock in nanoseconds (waits and their timeouts).
uint64_t now_ns();

}  // namespace tdist
