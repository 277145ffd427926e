// The ROCE engine of the CPU backend: PEs whose heaps this process cannot map (ranks on other
// hosts) are reached through UCX (UCP RMA and 64-bit atomics; TCP here, RDMA where the machine has
// it). docs/CONTRACT.md section 7 has the contract; runtime/CPU/abi.cpp routes every put, get,
// signal, atomic and barrier read of such a PE here.
//
// The local heap is registered once (ucp_mem_map) and its remote key, this worker's address and
// the heap's base are exchanged through the bootstrap store (one all-gather at init, the store's
// authentication and bounds); every remote PE gets an endpoint and its unpacked key. A progress
// thread serves the peers' operations on this heap (UCX's TCP transport emulates RMA in software,
// so a target must progress) and wakes this PE's sleeping waiters. Every operation is bounded by
// the wait timeout and records a fault naming the PE and the operation when it expires or fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tdist {
class ControlPlane;
}

namespace tdist::cpu {

class UcxEngine {
 public:
  virtual ~UcxEngine() = default;
  // Whether PE `pe` is reached through this engine.
  virtual bool remote(int pe) const = 0;
  // PE pe's heap base in its own address space (what its remote key covers).
  virtual uint64_t base(int pe) const = 0;
  // Blocking forms: return when the local buffer may be reused (put) or holds the data (get).
  virtual bool put(int pe, uint64_t off, const void *src, size_t n) = 0;
  virtual bool get(int pe, uint64_t off, void *dst, size_t n) = 0;
  // Posted put: returns at once; `src` must stay unchanged until the next quiet, which completes
  // it (a failure is recorded as a fault naming the PE).
  virtual bool put_nbi(int pe, uint64_t off, const void *src, size_t n) = 0;
  // 64-bit atomics on PE pe's heap word at `off`: add or set (swap); `fetched` gets the old value
  // when not null (a fetching operation then).
  virtual bool atomic_add(int pe, uint64_t off, uint64_t v, uint64_t *fetched = nullptr) = 0;
  virtual bool atomic_set(int pe, uint64_t off, uint64_t v) = 0;
  // Orders this process's earlier operations before later ones to every PE (tdist_fence).
  virtual void fence() = 0;
  // Completes every outstanding operation of this process (tdist_quiet).
  virtual bool quiet() = 0;
  virtual const char *transports() const = 0;
};

// Whether the engine can run: this build has it (UCX's headers found at configure time) and UCX
// loads (libucp.so.0, opened on the first call; a job on one host never calls this).
bool ucx_available();
// Why not, in words, when ucx_available() is false.
std::string ucx_unavailable_reason();
// Collective over every PE (also those without remote peers: the exchange is an all-gather):
// `remote[pe]` says which PEs this one reaches through the engine. Throws naming what failed.
std::unique_ptr<UcxEngine> make_ucx_engine(ControlPlane &cp, void *heap, size_t bytes,
                                           const std::vector<bool> &remote);

// The engine of the current job (nullptr when every peer is mapped), set by the transport.
extern UcxEngine *g_ucx;

}  // namespace tdist::cpu
