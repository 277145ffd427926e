/*
 * tdist NVIDIA host API: what a CUDA program adds to tdist.h. Implemented in runtime/NVIDIA
 * (part of libtdist when built with TDIST_ENABLE_CUDA). The CUDA driver is loaded at run time
 * (dlopen of libcuda.so.1), so libtdist starts on machines without a driver; every call here then
 * fails with TDIST_ERR_NOT_SUPPORTED.
 *
 * Types are opaque (void *) so this header needs no CUDA header: `cu_module` is a CUmodule,
 * `stream` a CUstream / cudaStream_t (NULL = the legacy default stream).
 * Errors follow tdist.h: a negative tdist_status_t, details in tdist_last_error_message().
 */
#ifndef TDIST_NVIDIA_HOST_H
#define TDIST_NVIDIA_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "tdist/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Device pointer to this PE's tdist_device_state_t in GPU memory (the value every module's
 *  `tdisti_device_state` global must hold), or NULL when the CUDA backend is not initialised. */
TDIST_EXPORT void *tdist_cuda_device_state(void);

/** Fill `*out` (`size` must be sizeof(tdist_device_fast_t), include/tdist/device_state.h) with the
 *  constant-memory copy every module's `tdisti_fast` holds (tdist_cuda_bind_state copies it; module
 *  registration patches it). Jobs above TDIST_FAST_MAX_PES get n_pes = 0 (global-memory path). */
TDIST_EXPORT int tdist_cuda_fast_state(void *out, size_t size);

/** CUDA device ordinal this PE's heap lives on, or -1 when the CUDA backend is not initialised. */
TDIST_EXPORT int tdist_cuda_device(void);

/** Where NVSHMEM's device bitcode (libnvshmem_device.bc) is, when this process runs the NVIDIA
 *  backend's ROCE engine on NVSHMEM (a job with PEs on other hosts, or TDIST_ROCE_PEERS=all; see
 *  docs/CONTRACT.md section 7); NULL when it does not. Kernels of such a job link
 *  libtdist_device_nvshmem.bc and this file instead of libtdist_device.bc alone, and their modules
 *  are registered (tdist_cuda_register_module) so that NVSHMEM's device state is set in them. The
 *  string stays valid until tdist_finalize. */
TDIST_EXPORT const char *tdist_cuda_engine_bitcode(void);

/** Register a loaded module (CUmodule) that links the device library: its `tdisti_device_state`
 *  global is patched now if tdist is initialised, and again whenever the state moves. This is
 *  what Triton's kernel_load_end_hook calls (the seed's GPU "patching"). A module without the
 *  global is accepted and not kept (returns TDIST_SUCCESS, nothing to patch; unregistering it
 *  succeeds too). Call tdist_cuda_unregister_module before unloading the module. */
TDIST_EXPORT int tdist_cuda_register_module(void *cu_module);
TDIST_EXPORT int tdist_cuda_unregister_module(void *cu_module);

/** Synchronise `stream` and report the sticky device fault of the launches on it: returns
 *  TDIST_SUCCESS, or the recorded code (e.g. TDIST_ERR_TIMEOUT) with a message naming the PE,
 *  heap offset, predicate, expected and seen values; the record is then cleared. */
TDIST_EXPORT int tdist_cuda_check_fault(void *stream);

/** Enqueue a barrier over all PEs on `stream` (one small kernel running tdist_barrier_all):
 *  work enqueued after it on any PE's stream starts after every PE's earlier work on its stream. */
TDIST_EXPORT int tdist_cuda_barrier_all_on_stream(void *stream);

/** Launch `function` (a CUfunction) on `stream` (a CUstream) over a gx x gy x gz grid of
 *  `block_threads`-thread blocks with `smem_bytes` of dynamic shared memory; `params` is
 *  cuLaunchKernel's kernelParams (one pointer per kernel parameter). The eager fast path of cached
 *  launches (python/tdist_kernels/_launch.py): the host work of a launch in one C call. Needs only
 *  the CUDA driver and the function's context current (no tdist_init). A failed launch returns
 *  TDIST_ERR_SMEM naming the CUDA error. */
TDIST_EXPORT int tdist_cuda_launch(void *function, uint32_t gx, uint32_t gy, uint32_t gz,
                                   uint32_t block_threads, uint32_t smem_bytes, void *stream, void **params);

/** Enqueue a barrier over the members of `team` (a tdist_team_t of tdist.h) on `stream`: one CTA runs
 *  the same pull barrier as the world's, on the team's own epoch word (offset
 *  TDIST_TEAM_SYNC_DEVICE_BARRIER_OFF of its team heap, so the team needs one: split it with a
 *  tdist_team_config_t whose heap_bytes > 0). Work enqueued after it on any member's stream starts
 *  after every member's earlier work on its stream. Called by every member, the same sequence of
 *  team barriers on every member; PEs outside the team are not involved. A PE outside the team or a
 *  team without a heap fails at once (TDIST_ERR_INVALID_PARAM). Bounded like every device wait: on
 *  expiry or a lost PE the fault is recorded (tdist_cuda_check_fault names it) and the kernel traps,
 *  so later work on the stream never runs. */
TDIST_EXPORT int tdist_cuda_team_barrier_on_stream(int32_t team, void *stream);

/** SDMA engine: host-initiated copy-engine transfer to / from PE `pe` on `stream`.
 *  put: `dst` is a symmetric address (translated to `pe`), `src` any device memory;
 *  get: `src` symmetric on `pe`, `dst` any device memory. Asynchronous on `stream`. */
TDIST_EXPORT int tdist_cuda_putmem_on_stream(void *dst, const void *src, size_t nbytes, int pe, void *stream);
TDIST_EXPORT int tdist_cuda_getmem_on_stream(void *dst, const void *src, size_t nbytes, int pe, void *stream);

/** Stream signals (no SM involved: the GPU's front end performs them in stream order, so they make
 *  progress even while persistent kernels occupy every SM).
 *  signal: after every earlier operation on `stream` (a fence first), set the 8-byte-aligned
 *  symmetric int64/uint64 slot `sig_addr` on PE `pe` to `value`. Only TDIST_SIGNAL_SET is offered
 *  (the driver has no stream atomic add): TDIST_SIGNAL_ADD returns TDIST_ERR_NOT_SUPPORTED; use
 *  the device-side signal_op for counters.
 *  wait: later work on `stream` starts once this PE's slot `sig_addr` satisfies `cmp` `value`
 *  (any tdist_cmp_t, unsigned compare). One thread of a one-CTA kernel waits, bounded like every
 *  device wait (the init attribute's wait timeout, and the watchdog's abort when a PE is lost); on
 *  expiry it records the fault (tdist_cuda_check_fault names PE, offset, expected and seen) and
 *  traps, so later work never runs on data that did not arrive. */
TDIST_EXPORT int tdist_cuda_signal_on_stream(void *sig_addr, uint64_t value, int sig_op, int pe,
                                             void *stream);
TDIST_EXPORT int tdist_cuda_signal_wait_until_on_stream(void *sig_addr, int cmp, uint64_t value,
                                                        void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TDIST_NVIDIA_HOST_H */
