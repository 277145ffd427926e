// The process-wide runtime state behind the C API. One per process (a PE is a process).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "bootstrap/control.hpp"
#include "core/transport.hpp"
#include "heap/allocator.hpp"
#include "tdist/tdist.h"

namespace tdist {

// A team (docs/CONTRACT.md section 8). Every PE holds an entry for every split it took part in, at
// the same index on every PE (a PE outside a team holds it too, with my_pe -1), so a team is named by
// its index and its members. Members are world PEs start + i * stride, i < size.
struct Team {
  bool valid = false;                   // false once destroyed
  bool known = true;                    // false: this PE split it from outside the parent (members unknown)
  int start = 0, stride = 1, size = 0;  // world numbering
  int my_pe = -1;                       // this PE's index in the team, -1 if not a member
  // The team heap: block [heap_off, heap_off + heap_bytes) of the world heap (heap_bytes 0: none),
  // reserved on every PE by the split; its first TDIST_TEAM_SYNC_BYTES are the team's sync words,
  // team allocations come after (members only). Returned to the world heap at finalize.
  size_t heap_off = 0, heap_bytes = 0;
  std::optional<HeapAllocator> heap;
  uint64_t alloc_seq = 0;  // team allocation calls made (their records' sequence number)
  uint64_t round = 0;      // the team's control-plane rounds (its keys' sequence number)
  bool member() const { return valid && my_pe >= 0; }
};

// What a team's device barrier needs (tdist_cuda_team_barrier_on_stream): the epoch word's heap
// offset and the member set. Throws (INVALID_PARAM naming the team) unless this PE is a member of a
// team with a heap.
struct TeamSync {
  uint64_t epoch_off;
  int start, stride, size, my_index;
};
TeamSync team_sync(int32_t team, const char *api);

struct Context {
  tdist_init_attr_t attr{};
  std::unique_ptr<ControlPlane> cp;
  std::unique_ptr<HeapTransport> transport;
  std::unique_ptr<HeapAllocator> alloc;
  tdist_device_state_t state{};  // host copy; the CPU device ABI reads this one (publish())
  std::vector<void *> p2p, rdma, sdma;
  uint64_t collective_seq = 0;
  std::vector<Team> teams;
  std::set<size_t> team_blocks;  // world heap offsets of the team heaps' blocks (not for tdist_free)
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
