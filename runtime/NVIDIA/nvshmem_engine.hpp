// The ROCE engine of the NVIDIA backend on NVSHMEM (docs/CONTRACT.md section 7): GPU PEs that cannot
// reach each other by load/store are reached through NVSHMEM's device API, linked into kernels from
// its bitcode (libtdist_device_nvshmem.bc + libnvshmem_device.bc). libtdist does not link NVSHMEM:
// the first job that needs the engine opens libnvshmem_host.so.3 with dlopen and looks up each entry
// point it calls by name. When the engine runs, the job's symmetric heap is NVSHMEM's (nvshmem_align,
// collective), so NVSHMEM addresses every tdist object by its local address; PEs NVSHMEM maps by P2P
// keep the load/store path (their nvshmem_ptr is the p2p base), unless TDIST_ROCE_PEERS=all sends
// every peer through the engine.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tdist {

class ControlPlane;

namespace nv {

// Whether the engine can be used in this process: built with NVSHMEM's headers and its host library
// loadable. `why` says why not.
bool nvshmem_available(std::string *why = nullptr);

class NvshmemEngine {
 public:
  // Collective over the control plane, with `ctx` current: NVSHMEM started with a unique id made by PE
  // 0 and handed out through tdist's authenticated store, then `bytes` of symmetric heap allocated.
  NvshmemEngine(ControlPlane &cp, size_t bytes, CUcontext ctx);
  ~NvshmemEngine();
  NvshmemEngine(const NvshmemEngine &) = delete;
  NvshmemEngine &operator=(const NvshmemEngine &) = delete;

  void *heap() const { return heap_; }
  // NVSHMEM's load/store address of `addr` on `pe` (nvshmem_ptr), NULL where it has none.
  void *ptr(void *addr, int pe) const;
  // Initialise NVSHMEM's device state in a loaded module that links libnvshmem_device.bc (a module
  // without it is left alone). Returns false when the module has none.
  bool module_init(CUmodule m, const char *api) const;
  void module_finalize(CUmodule m) const;
  // NVSHMEM's barrier over every PE on `stream` (it completes the engine's operations first).
  void barrier_all_on_stream(CUstream stream) const;
  // Host-initiated operations on `stream` (the copy-engine calls' route to an engine peer), each done
  // in stream order: a put and its quiet, a get, a SET of a 64-bit signal slot. `sym` arguments are
  // symmetric addresses of this PE's heap.
  void putmem_on_stream(void *sym_dst, const void *src, size_t n, int pe, CUstream stream) const;
  void getmem_on_stream(void *dst, const void *sym_src, size_t n, int pe, CUstream stream) const;
  void signal_set_on_stream(uint64_t *sym_sig, uint64_t value, int pe, CUstream stream) const;
  // Where NVSHMEM's device bitcode is (next to the host library), "" if not found.
  static std::string device_bitcode();

 private:
  void *heap_ = nullptr;
  bool started_ = false;
};

}  // namespace nv
}  // namespace tdist
