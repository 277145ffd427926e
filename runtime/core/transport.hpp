// Backend interface: the symmetric heap and the hooks the runtime core calls. One implementation
// per platform: runtime/CPU (memfd shared memory; the whole CPU backend) and runtime/NVIDIA
// (cuMemCreate + POSIX fd export).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tdist/device_state.h"

namespace tdist {

class ControlPlane;

struct TransportOptions {
  unsigned engine_mask = 1;  // tdist_engine_t bits
  int device_id = -1;        // CUDA only
};

// A backend of the runtime. The core (runtime/core) calls into a backend only through this
// interface; each backend folder (runtime/CPU, runtime/NVIDIA) implements it and keeps its
// internals to itself.
class HeapTransport {
 public:
  virtual ~HeapTransport() = default;
  virtual const char *name() const = 0;
  // Collective over the control plane: create this PE's heap of `bytes` (same on every PE),
  // share it with the local peers, and map theirs. After this, local_base() and peer_bases()
  // are valid. peer_bases()[pe] is NULL for PEs not reachable by load/store.
  virtual void map(ControlPlane &cp, size_t bytes) = 0;
  // Before map(), on every PE: "" when this host can back `bytes` of heap for each of its
  // `local_pes` PEs, else why not (init then fails on every PE with TDIST_ERR_SMEM). Default: no
  // check (the NVIDIA backend's cuMemCreate reports what it cannot allocate at map()).
  virtual std::string check_capacity(size_t bytes, int local_pes) const {
    (void)bytes;
    (void)local_pes;
    return {};
  }
  // Whether this backend reaches PEs on other hosts (an engine beyond load/store): the CPU backend
  // when built with UCX (its ROCE engine, runtime/CPU/ucx_engine.hpp). Without one, a job whose
  // ranks span hosts fails at init on every PE, naming the ranks and hosts.
  virtual bool reaches_other_hosts() const { return false; }
  virtual void *local_base() const = 0;
  virtual const std::vector<void *> &peer_bases() const = 0;
  // Each PE's heap base as its ROCE engine addresses it (NULL for PEs reached by load/store, and
  // for every PE of a backend without the engine): the state's rdma_heap_base table.
  virtual std::vector<void *> rdma_bases() const { return std::vector<void *>(peer_bases().size(), nullptr); }
  // Zero `n` bytes at heap offset `off` of the local heap (calloc, internal region).
  virtual void zero(size_t off, size_t n) = 0;
  // Publish the device state where device code finds it (CPU: the device ABI reads this host
  // copy, which must outlive unmap(); CUDA: a device copy + module patching). Called after map()
  // and whenever the state changes.
  virtual void publish(const tdist_device_state_t &state) = 0;
  // The fault record of `state` changed (core/fault.hpp, which calls this with its lock held, from
  // any thread: a program that faulted, the watchdog that saw a peer lost, the thread reporting
  // and clearing it): make it visible to device code that may be running now. Sets the heap's
  // fault flag (TDIST_SYNC_FAULT_OFF) to whether a fault is recorded. CPU: device code reads the
  // host copy; wake every waiter asleep on a PE's memory. CUDA: copy the record to the GPU's state.
  virtual void publish_fault(const tdist_device_state_t &state) = 0;
  // Complete this process's outstanding non-blocking operations (before a host barrier and at
  // finalize). CPU: drain the copy-engine thread. CUDA: nothing (stream copies are the streams').
  virtual void quiet() {}
  // tdist_host_barrier_all after quiet(). Default: the control plane's barrier. CPU: the pull
  // barrier through the heap, bounded like a device wait, then the fault it may have recorded.
  virtual void host_barrier(ControlPlane &cp);
  // Undo map() (and publish(): device code finds no state afterwards). Safe to call twice.
  virtual void unmap() = 0;
};

// The GPU a PE uses: `requested` when >= 0, else its local rank modulo the visible devices. With
// as many local PEs as GPUs that is one PE per GPU (peers reached over NVLink P2P); with more PEs
// than GPUs, PEs share a GPU (tdist-run starts MPS for that).
inline int select_device(int requested, int local_rank, int visible) {
  TDIST_CHECK(visible > 0, TDIST_ERR_NOT_SUPPORTED, "no CUDA device is visible to this process");
  int dev = requested >= 0 ? requested : local_rank % visible;
  TDIST_CHECK(dev < visible, TDIST_ERR_INVALID_PARAM,
              "device_id %d is out of range: %d CUDA device(s) visible", dev, visible);
  return dev;
}

std::unique_ptr<HeapTransport> make_cpu_transport(const TransportOptions &opts);
// Defined in runtime/NVIDIA when built with CUDA; otherwise throws TDIST_ERR_NOT_SUPPORTED.
std::unique_ptr<HeapTransport> make_cuda_transport(const TransportOptions &opts);
bool cuda_transport_available();

// Exchange one file descriptor with every local peer over Unix sockets (abstract namespace,
// name from the job id). Returns fds indexed by world PE (-1 for non-local PEs; own fd dup'ed).
// Caller owns the returned descriptors.
std::vector<int> exchange_fds_with_local_peers(ControlPlane &cp, int my_fd, const char *tag);

}  // namespace tdist
