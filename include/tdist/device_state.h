/*
 * The device state: what device code (CPU programs, CUDA kernels, Triton kernels through the
 * bitcode library) reads to find the symmetric heap. One layout for every backend; the CUDA backend
 * keeps a copy in device memory and patches its address into every loaded module (the seed's GPU
 * "patching"), the CPU backend keeps it in host memory. Field order is ABI: append only, bump
 * TDIST_DEVICE_STATE_VERSION.
 */
#ifndef TDIST_DEVICE_STATE_H
#define TDIST_DEVICE_STATE_H

#include <stdint.h>

#define TDIST_DEVICE_STATE_MAGIC 0x74646973u /* "tdis" */
#define TDIST_DEVICE_STATE_VERSION 1u

/* Heap layout (identical on every PE, offsets relative to heap_base):
 *   [0, TDIST_HEAP_RESERVED)        internal region (below)
 *   [TDIST_HEAP_RESERVED, heap_size) user allocations (collective malloc)
 * Internal region: */
#define TDIST_HEAP_RESERVED (64u * 1024u)
#define TDIST_SYNC_DEVICE_BARRIER_OFF 0u /* uint64 flag: this PE's device barrier epoch     */
#define TDIST_SYNC_HOST_BARRIER_OFF 64u  /* uint64 flag: this PE's host barrier epoch       */
#define TDIST_SYNC_GRID_ARRIVE_OFF 128u  /* uint64: programs arrived at the device barrier  */
#define TDIST_SYNC_GRID_RELEASE_OFF 192u /* uint64: device barrier generation released      */
#define TDIST_SYNC_FAULT_OFF 256u        /* uint64: nonzero once a launch faulted (sticky)   */
#define TDIST_SYNC_SLEEPERS_OFF 320u     /* uint32: CPU waiters asleep on this PE's memory   */
#define TDIST_SYNC_FUTEX_OFF 384u        /* uint32: futex word bumped to wake those waiters  */
/* uint64 counters of barrier arrivals pushed by PEs reached through the ROCE engine (CPU ranks on
 * other hosts): one atomic add per barrier from each, only growing */
#define TDIST_SYNC_DEVICE_ARRIVALS_OFF 448u
#define TDIST_SYNC_HOST_ARRIVALS_OFF 512u

/* A team heap (tdist_team_split_strided_ex, tdist_team_split_2d) is a block of the user part of the
 * world heap, at the same offset on every PE. Its first TDIST_TEAM_SYNC_BYTES are the team's own
 * synchronisation words, zeroed on every PE by the split; team allocations come after. Offsets
 * relative to the block: */
#define TDIST_TEAM_SYNC_BYTES 256u
#define TDIST_TEAM_SYNC_DEVICE_BARRIER_OFF 0u /* uint64: this PE's epoch of the team's device barrier */
/* uint64: barrier arrivals pushed by the team's members reached through the ROCE engine (only growing) */
#define TDIST_TEAM_SYNC_DEVICE_ARRIVALS_OFF 64u

typedef struct tdist_device_state {
  uint32_t magic;   /* TDIST_DEVICE_STATE_MAGIC */
  uint32_t version; /* TDIST_DEVICE_STATE_VERSION */
  int32_t my_pe;
  int32_t n_pes;
  uint64_t heap_size;              /* bytes, same on every PE */
  void *heap_base;                 /* this PE's heap, as mapped in this process / on this device */
  void **p2p_heap_base;            /* [n_pes] load/store-reachable base of each PE's heap, or NULL */
  void **rdma_heap_base;           /* [n_pes] base as seen by the ROCE engine, or NULL */
  void **sdma_heap_base;           /* [n_pes] base as seen by the copy engine, or NULL */
  uint32_t engine_mask;            /* tdist_engine_t bits enabled at init */
  uint32_t debug;                  /* nonzero: trap (GPU) / abort (CPU) on a device fault */
  uint64_t wait_timeout_ns;        /* 0 = wait forever */
  uint64_t spin_before_backoff_ns; /* CPU: pure spinning before a wait yields, then sleeps */
  /* sticky fault record, written by the first faulting wait */
  int32_t fault_code;    /* 0 or a tdist_status_t */
  int32_t fault_pe;      /* PE whose memory was waited on / targeted */
  uint64_t fault_offset; /* heap offset of the slot */
  uint64_t fault_expected;
  uint64_t fault_seen;
  int32_t fault_cmp;
  int32_t fault_reported; /* set by the first Triton-facing form that reports the record (device.cuh) */
} tdist_device_state_t;

/* The hot, read-only part of the state as a copy in each GPU module's constant memory
 * (`tdisti_fast`, patched next to `tdisti_device_state`): peer translation and my_pe / n_pes then
 * cost constant-cache reads instead of dependent global loads, which every ld.acquire.sys poll
 * would otherwise force back to L2. n_pes == 0 (jobs above TDIST_FAST_MAX_PES, or a module never
 * patched) means "not filled": device code falls back to the state in global memory. */
#define TDIST_FAST_MAX_PES 128
typedef struct tdist_device_fast {
  uint64_t heap_base;
  uint64_t heap_size;
  int32_t my_pe;
  int32_t n_pes; /* 0: not filled */
  /* Nonzero when every PE is reachable by load/store and p2p_base[pe] == p2p_base[0] + pe *
   * p2p_stride (the NVIDIA heap maps all PEs into one range): translation is then a multiply-add of
   * constant-bank operands, with no indexed constant read in the chain before a signal's store. */
  uint64_t p2p_stride;
  uint64_t p2p_base[TDIST_FAST_MAX_PES]; /* 0: PE not reachable by load/store */
} tdist_device_fast_t;

#endif /* TDIST_DEVICE_STATE_H */
