// The host-side address translation (docs/CONTRACT.md section 3): where PE `pe`'s copy of a
// symmetric address lies in this process. The one implementation for the host API (tdist_ptr, and
// through it Python's tdist.ptr / shmem.peer_tensor / shmem.peer_stack), the CPU backend's device
// ABI (every put, get and signal of a CPU rank) and the NVIDIA copy engine's stream copies. GPU
// device code has its own, include/tdist/NVIDIA/device.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tdist/device_state.h"

namespace tdist {

// Why a translation failed.
enum class AddrError : uint8_t {
  kNone = 0,
  kPeRange,       // pe is not in [0, n_pes)
  kNotSymmetric,  // addr is not inside this PE's heap
  kPastEnd,       // addr is, but the n bytes from it run past the heap's end
};

struct PeerAddr {
  void *ptr = nullptr;  // PE pe's copy; NULL on error or when pe's heap is not mapped here
  AddrError error = AddrError::kNone;
  uint64_t offset = 0;  // heap offset of addr (0 when addr is not in the heap)
};

// Translates the `n` bytes from symmetric `addr` to PE `pe`'s copy, through `table` (a base per
// PE; by default the state's load/store table, p2p_heap_base). Checks only; records nothing.
inline PeerAddr peer_addr(const tdist_device_state_t &s, const void *addr, int pe, size_t n = 1,
                          void *const *table = nullptr) {
  PeerAddr r;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(s.heap_base);
  const bool in_heap = a >= b && a - b < s.heap_size;
  if (in_heap) r.offset = a - b;
  if (pe < 0 || pe >= s.n_pes) {
    r.error = AddrError::kPeRange;
  } else if (!in_heap) {
    r.error = AddrError::kNotSymmetric;
  } else if (n > s.heap_size - r.offset) {
    r.error = AddrError::kPastEnd;
  } else {
    if (!table) table = s.p2p_heap_base;
    void *base = table ? table[pe] : nullptr;
    if (base) r.ptr = static_cast<char *>(base) + r.offset;
  }
  return r;
}

// What went wrong with a failed translation of (addr, pe, n), in words, as tdist_ptr reports it.
std::string peer_addr_message(const tdist_device_state_t &s, const PeerAddr &r, const void *addr, int pe,
                              size_t n);

// tdist_ptr from host code of any backend: translates through this process's host state. On
// failure (or before init) returns NULL and sets this thread's last error; NULL without an error
// means pe's heap is not mapped into this process.
void *host_ptr(const void *addr, int pe);

}  // namespace tdist
