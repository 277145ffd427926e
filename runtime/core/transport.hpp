// Backend interface for the symmetric heap. One implementation per platform:
// runtime/CPU (memfd shared memory) and runtime/NVIDIA (cuMemCreate + POSIX fd export).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "tdist/device_state.h"

namespace tdist {

class ControlPlane;

struct TransportOptions {
  unsigned engine_mask = 1;  // tdist_engine_t bits
  int device_id = -1;        // CUDA only
};

class HeapTransport {
 public:
  virtual ~HeapTransport() = default;
  virtual const char *name() const = 0;
  // Collective over the control plane: create this PE's heap of `bytes` (same on every PE),
  // share it with the local peers, and map theirs. After this, local_base() and peer_bases()
  // are valid. peer_bases()[pe] is NULL for PEs not reachable by load/store.
  virtual void map(ControlPlane &cp, size_t bytes) = 0;
  virtual void *local_base() const = 0;
  virtual const std::vector<void *> &peer_bases() const = 0;
  // Zero `n` bytes at heap offset `off` of the local heap (calloc, internal region).
  virtual void zero(size_t off, size_t n) = 0;
  // Publish the device state where device code finds it (CPU: host memory; CUDA: device copy
  // + module patching). Called after map() and whenever the state changes.
  virtual void publish(const tdist_device_state_t &state) = 0;
  // Make a fault recorded in the host state (a lost peer, found by the watchdog thread) visible to
  // device code that may be running now. CPU: nothing to do (device code reads the host copy).
  virtual void publish_fault(const tdist_device_state_t &) {}
  // Undo map(). Safe to call twice.
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
