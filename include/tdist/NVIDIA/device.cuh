/*
 * tdist CUDA device API: the device ABI of include/tdist/abi.h as CUDA C++ __device__ functions,
 * plus warp/block forms and the Triton-facing `_i64` twins.
 *
 * One source, two compilers:
 *   - nvcc / clang CUDA users include this header in their .cu files. The ABI functions are
 *     `extern "C" __device__ inline`, so no relocatable device code is needed. Each module (each
 *     .cu file without -rdc) has its own `tdisti_device_state` pointer which the host fills once
 *     after tdist_init with tdist_cuda_bind_state() (runtime API, defined below) or, for a module
 *     loaded with the driver API, with tdist_cuda_register_module() (include/tdist/NVIDIA/host.h).
 *   - device/NVIDIA/tdist_device.cu compiles this header with clang-19 into the NVPTX bitcode that
 *     Triton links through `extern_libs` (TDIST_NV_ABI_LINKAGE empty: strong exported symbols).
 *     The header therefore uses no CUDA header and no CUDA builtin variable: only inline PTX.
 *
 * Include order: include this header BEFORE tdist/tdist.h or tdist/abi.h in a CUDA file (it
 * declares the ABI names as __device__ functions; abi.h seen first would declare them host).
 *
 * Scopes of the forms:
 *   tdist_*            thread form: the calling thread does the whole operation.
 *   tdistx_*_warp      every lane of the warp calls with the same arguments; the warp cooperates.
 *   tdistx_*_block     every thread of the CTA calls with the same arguments; the CTA cooperates.
 *   <symbol>_i64       Triton-facing twin: pointers as int64. Triton runs an extern call in EVERY
 *                      thread of the program, so the twins are program-collective: every thread of
 *                      the CTA must call them with the same arguments. RMA twins use the block
 *                      form; signal-side twins (p, signal_op, notify, putmem_signal) synchronise the
 *                      CTA (bar.sync) and let thread 0 perform the release, so every store the
 *                      program made before the call is released; wait twins let threads
 *                      0..n-1 poll the slots, then synchronise the CTA.
 *
 * Memory ordering (seed 000 section 6, abi.h): signal updates are st.release.sys /
 * red.release.sys; waits are ld.acquire.sys (or relaxed sweeps followed by fence.acq_rel.sys);
 * tdist_fence is fence.acq_rel.sys; tdist_quiet is fence.sc.sys (SM stores complete in order of
 * the fence; there is no outstanding DMA on this path).
 *
 * Waits are bounded by tdist_device_state_t::wait_timeout_ns (0 = forever). A wait that expires
 * records a sticky fault (code, PE, heap offset, cmp, expected, seen) in the device state, sets the
 * fault flag at TDIST_SYNC_FAULT_OFF in the heap, and returns; later waits of any thread notice the
 * fault and return at once. tdist_cuda_check_fault() reports it on the host. With debug set
 * (TDIST_DEBUG=1) the faulting thread prints the diagnostic and traps instead.
 *
 * TDIST_NV_NO_DEVICE_PRINTF (define before including): no printf on the device. Any call in a
 * kernel, even one never taken, makes ptxas put MEMBAR.ALL.CTA before every system-scope release,
 * which costs about 3.5% of a signal round trip (benchmarks/NOTES.md). Without the printf a debug
 * trap and the "state not bound" trap say nothing on the device; the fault record is still written
 * and, without debug, still reported by tdist_cuda_check_fault().
 */
#ifndef TDIST_NVIDIA_DEVICE_CUH
#define TDIST_NVIDIA_DEVICE_CUH

#if !(defined(__CUDACC__) || defined(__CUDA__))
#error "tdist/NVIDIA/device.cuh is CUDA device code: compile it with nvcc or clang -x cuda"
#endif

#include <stddef.h>
#include <stdint.h>

#include "tdist/macros.h"

/* ---- qualifiers (clang -nocudainc defines no __device__ macro) ---- */
#ifdef __device__
#define TDISTI_NV_DEV __device__
#else
#define TDISTI_NV_DEV __attribute__((device))
#endif
#define TDISTI_NV_FN TDISTI_NV_DEV static inline __attribute__((always_inline))
#ifndef TDIST_NV_ABI_LINKAGE
#define TDIST_NV_ABI_LINKAGE inline
#endif
#define TDISTI_NV_ABI extern "C" TDISTI_NV_DEV TDIST_NV_ABI_LINKAGE

/* Declare the ABI as __device__ functions (see the include-order note above). */
#if defined(TDIST_ABI_H) && !defined(TDISTI_NV_ABI_DEVICE_DECLS)
#error "include tdist/NVIDIA/device.cuh before tdist/abi.h (or tdist/tdist.h) in CUDA code"
#endif
#define TDISTI_NV_ABI_DEVICE_DECLS 1
#pragma push_macro("TDIST_DEVICE_API")
#undef TDIST_DEVICE_API
#define TDIST_DEVICE_API TDISTI_NV_DEV
#include "tdist/abi.h"
#pragma pop_macro("TDIST_DEVICE_API")
#include "tdist/device_state.h"

/* Status codes used on the device: TDISTI_NV_<name> has tdist_status_t's TDIST_<name> value (tdist.h
 * is host API), both from the one status table. */
enum {
#define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) TDISTI_NV_##name = (value),
#include "tdist/status.def"
#undef TDIST_STATUS
};

/* The device state this module reads. Filled by the host (see the file comment). With -rdc,
 * define TDIST_NV_STATE_EXTERN in every file but one. */
/* It lives in constant memory: device code only reads it, the constant cache is not invalidated
 * by ld.acquire.sys, and the compiler may keep it in a register across a polling loop. The host
 * writes it with cuModuleGetGlobal + a copy, which works for __constant__ symbols too. */
#define TDISTI_NV_CONST_VAR __attribute__((constant))
#ifdef TDIST_NV_STATE_EXTERN
extern "C" TDISTI_NV_CONST_VAR tdist_device_state_t *tdisti_device_state;
extern "C" TDISTI_NV_CONST_VAR tdist_device_fast_t tdisti_fast;
#else
extern "C" {
TDISTI_NV_CONST_VAR tdist_device_state_t *tdisti_device_state = 0;
/* Constant-memory copy of the hot fields (device_state.h); n_pes == 0 until the host fills it. */
TDISTI_NV_CONST_VAR tdist_device_fast_t tdisti_fast = {0, 0, 0, 0, 0, {0}};
}
#endif

#if defined(TDIST_NV_NO_DEVICE_PRINTF)
#define TDISTI_NV_PRINTF(...) ((void)0)
#else
#ifdef __NVCC__
#include <stdio.h>
#else
extern "C" TDISTI_NV_DEV int printf(const char *, ...); /* clang lowers it to vprintf */
#endif
#define TDISTI_NV_PRINTF(...) printf(__VA_ARGS__)
#endif

/* ======================================================================================
 * Internal helpers (tdisti_nv_*): special registers, PTX memory operations, fault record.
 * ====================================================================================== */

#define TDISTI_NV_SREG(name, reg)                     \
  TDISTI_NV_FN uint32_t tdisti_nv_##name(void) {      \
    uint32_t v;                                       \
    asm volatile("mov.u32 %0, %%" reg ";" : "=r"(v)); \
    return v;                                         \
  }
TDISTI_NV_SREG(tid_x, "tid.x")
TDISTI_NV_SREG(tid_y, "tid.y")
TDISTI_NV_SREG(tid_z, "tid.z")
TDISTI_NV_SREG(ntid_x, "ntid.x")
TDISTI_NV_SREG(ntid_y, "ntid.y")
TDISTI_NV_SREG(ntid_z, "ntid.z")
TDISTI_NV_SREG(ctaid_x, "ctaid.x")
TDISTI_NV_SREG(ctaid_y, "ctaid.y")
TDISTI_NV_SREG(ctaid_z, "ctaid.z")
TDISTI_NV_SREG(nctaid_x, "nctaid.x")
TDISTI_NV_SREG(nctaid_y, "nctaid.y")
TDISTI_NV_SREG(nctaid_z, "nctaid.z")
TDISTI_NV_SREG(laneid, "laneid")
#undef TDISTI_NV_SREG

/* Linear thread index in the CTA and CTA size. */
TDISTI_NV_FN uint32_t tdisti_nv_block_tid(void) {
  return tdisti_nv_tid_x() +
         tdisti_nv_ntid_x() * (tdisti_nv_tid_y() + tdisti_nv_ntid_y() * tdisti_nv_tid_z());
}
TDISTI_NV_FN uint32_t tdisti_nv_block_size(void) {
  return tdisti_nv_ntid_x() * tdisti_nv_ntid_y() * tdisti_nv_ntid_z();
}
TDISTI_NV_FN uint64_t tdisti_nv_num_ctas(void) {
  return (uint64_t)tdisti_nv_nctaid_x() * tdisti_nv_nctaid_y() * tdisti_nv_nctaid_z();
}
TDISTI_NV_FN void tdisti_nv_syncthreads(void) { asm volatile("bar.sync 0;" ::: "memory"); }
TDISTI_NV_FN void tdisti_nv_syncwarp(void) { asm volatile("bar.warp.sync -1;" ::: "memory"); }
/* bar.sync 0 that also ORs `pred` over the CTA (every thread gets the result). */
TDISTI_NV_FN int tdisti_nv_syncthreads_or(int pred) {
  int r;
  asm volatile("{ .reg .pred p, q; setp.ne.s32 q, %1, 0; bar.red.or.pred p, 0, q; selp.s32 %0, 1, 0, p; }"
               : "=r"(r)
               : "r"(pred)
               : "memory");
  return r;
}
TDISTI_NV_FN uint64_t tdisti_nv_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
TDISTI_NV_FN void tdisti_nv_nanosleep(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }
TDISTI_NV_FN void tdisti_nv_trap(void) { asm volatile("trap;"); }

/* ---- system-scope memory operations (addresses are global-space heap addresses) ---- */
TDISTI_NV_FN uint64_t tdisti_nv_ld_acquire_u64(const void *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
TDISTI_NV_FN uint32_t tdisti_nv_ld_acquire_u32(const void *p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
TDISTI_NV_FN uint64_t tdisti_nv_ld_relaxed_u64(const void *p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
TDISTI_NV_FN uint32_t tdisti_nv_ld_relaxed_u32(const void *p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
TDISTI_NV_FN void tdisti_nv_st_release_u64(void *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
TDISTI_NV_FN void tdisti_nv_st_release_u32(void *p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
TDISTI_NV_FN void tdisti_nv_st_relaxed_u64(void *p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
TDISTI_NV_FN void tdisti_nv_red_add_release_u64(void *p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
TDISTI_NV_FN void tdisti_nv_red_add_release_u32(void *p, uint32_t v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
TDISTI_NV_FN uint64_t tdisti_nv_atom_add_acq_rel_gpu_u64(void *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
TDISTI_NV_FN int32_t tdisti_nv_atom_cas_s32(void *p, int32_t cmp, int32_t v) {
  int32_t old;
  asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(p), "r"(cmp), "r"(v)
               : "memory");
  return old;
}
TDISTI_NV_FN int32_t tdisti_nv_ld_volatile_s32(const void *p) {
  int32_t v;
  asm volatile("ld.volatile.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
TDISTI_NV_FN void tdisti_nv_fence_acq_rel_sys(void) { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
TDISTI_NV_FN void tdisti_nv_fence_sc_sys(void) { asm volatile("fence.sc.sys;" ::: "memory"); }

/* Width-generic release store / relaxed load of one element of 1, 2, 4 or 8 bytes (bit copies). */
TDISTI_NV_FN void tdisti_nv_st_release_bits(void *p, uint64_t bits, unsigned size) {
  switch (size) {
    case 1:
      asm volatile("st.release.sys.global.b8 [%0], %1;" ::"l"(p), "r"((uint32_t)bits) : "memory");
      break;
    case 2:
      asm volatile("st.release.sys.global.b16 [%0], %1;" ::"l"(p), "h"((uint16_t)bits) : "memory");
      break;
    case 4:
      asm volatile("st.release.sys.global.b32 [%0], %1;" ::"l"(p), "r"((uint32_t)bits) : "memory");
      break;
    default: asm volatile("st.release.sys.global.b64 [%0], %1;" ::"l"(p), "l"(bits) : "memory"); break;
  }
}
TDISTI_NV_FN uint64_t tdisti_nv_ld_relaxed_bits(const void *p, unsigned size) {
  uint32_t r;
  uint16_t h;
  uint64_t l;
  switch (size) {
    case 1:
      asm volatile("ld.relaxed.sys.global.b8 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
      return r & 0xffu;
    case 2: asm volatile("ld.relaxed.sys.global.b16 %0, [%1];" : "=h"(h) : "l"(p) : "memory"); return h;
    case 4: asm volatile("ld.relaxed.sys.global.b32 %0, [%1];" : "=r"(r) : "l"(p) : "memory"); return r;
    default: asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(l) : "l"(p) : "memory"); return l;
  }
}

/* Reads of the device state. The state (all but the fault record) is immutable while a kernel
 * runs: the host publishes it between launches. So it is read through the non-coherent path
 * (ld.global.nc) with non-volatile asm that has no memory clobber: the compiler may keep the
 * values in registers across the acquire/release operations of a loop (an ld.acquire.sys
 * invalidates L1, and re-reading state -> table -> entry after every acquire costs three
 * dependent L2 round trips, about doubling a signal round trip). Never use these for the fault
 * fields, which device code writes. */
TDISTI_NV_FN uint64_t tdisti_nv_ldc_u64(const void *p) {
  uint64_t v;
  asm("{ .reg .u64 g; cvta.to.global.u64 g, %1; ld.global.nc.u64 %0, [g]; }" : "=l"(v) : "l"(p));
  return v;
}
TDISTI_NV_FN int32_t tdisti_nv_ldc_s32(const void *p) {
  int32_t v;
  asm("{ .reg .u64 g; cvta.to.global.u64 g, %1; ld.global.nc.s32 %0, [g]; }" : "=r"(v) : "l"(p));
  return v;
}
#define TDISTI_NV_SF_PTR(st, field) ((void *)(uintptr_t)tdisti_nv_ldc_u64(&(st)->field))
#define TDISTI_NV_SF_U64(st, field) tdisti_nv_ldc_u64(&(st)->field)
#define TDISTI_NV_SF_S32(st, field) tdisti_nv_ldc_s32(&(st)->field)

TDISTI_NV_FN tdist_device_state_t *tdisti_nv_state(void) { return tdisti_device_state; }
/* Base of PE `pe`'s heap in the p2p table (NULL: not reachable by load/store). */
TDISTI_NV_FN char *tdisti_nv_p2p_base(const tdist_device_state_t *st, int pe) {
  if (tdisti_fast.n_pes > 0) return (char *)(uintptr_t)tdisti_fast.p2p_base[pe];
  void **tab = (void **)TDISTI_NV_SF_PTR(st, p2p_heap_base);
  return (char *)(uintptr_t)tdisti_nv_ldc_u64(tab + pe);
}
TDISTI_NV_FN void tdisti_nv_fault(int32_t code, int32_t pe, uint64_t offset, int32_t cmp, uint64_t expected,
                                  uint64_t seen);
/* The state, trapping with a message when this module was never bound. */
TDISTI_NV_FN tdist_device_state_t *tdisti_nv_state_checked(void) {
  tdist_device_state_t *st = tdisti_nv_state();
  if (st == 0) tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, -1, 0, -1, 0, 0);
  return st;
}

/* Heap offset of a local symmetric address (for diagnostics); ~0 when outside the heap. */
TDISTI_NV_FN uint64_t tdisti_nv_heap_offset(const tdist_device_state_t *st, const void *addr) {
  uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)st->heap_base);
  return off < st->heap_size ? off : ~(uint64_t)0;
}

/* Record the launch's sticky fault (first one wins), set the heap fault flag, and in debug mode
 * print the diagnostic and trap. */
TDISTI_NV_FN void tdisti_nv_fault(int32_t code, int32_t pe, uint64_t offset, int32_t cmp, uint64_t expected,
                                  uint64_t seen) {
  tdist_device_state_t *st = tdisti_nv_state();
  if (st == 0) {
    /* No state: the module was never bound. Nothing to record into; always trap. */
    TDISTI_NV_PRINTF(
        "tdist: device state not bound in this module (call tdist_cuda_bind_state or "
        "tdist_cuda_register_module after tdist_init)\n");
    tdisti_nv_trap();
    return;
  }
  if (tdisti_nv_atom_cas_s32(&st->fault_code, 0, code) == 0) {
    st->fault_pe = pe;
    st->fault_offset = offset;
    st->fault_expected = expected;
    st->fault_seen = seen;
    st->fault_cmp = cmp;
    tdisti_nv_fence_sc_sys();
    if (st->heap_base != 0) tdisti_nv_st_release_u64((char *)st->heap_base + TDIST_SYNC_FAULT_OFF, 1);
  }
  if (st->debug) {
    TDISTI_NV_PRINTF(
        "tdist[pe %d]: device fault %d: PE %d heap offset %llu cmp %d expected %llu seen %llu "
        "(block %u thread %u)\n",
        st->my_pe, code, pe, (unsigned long long)offset, cmp, (unsigned long long)expected,
        (unsigned long long)seen, tdisti_nv_ctaid_x(), tdisti_nv_block_tid());
    tdisti_nv_trap();
  }
}

TDISTI_NV_FN int tdisti_nv_faulted(const tdist_device_state_t *st) {
  return tdisti_nv_ld_volatile_s32(&st->fault_code) != 0;
}

/* ---- predicates ---- */
template <class T>
TDISTI_NV_FN bool tdisti_nv_cmp(T seen, int cmp, T v) {
  switch (cmp) {
    case TDIST_CMP_EQ: return seen == v;
    case TDIST_CMP_NE: return seen != v;
    case TDIST_CMP_GT: return seen > v;
    case TDIST_CMP_GE: return seen >= v;
    case TDIST_CMP_LT: return seen < v;
    case TDIST_CMP_LE: return seen <= v;
    default: return false; /* an unknown predicate never holds: the wait faults */
  }
}

template <class T>
TDISTI_NV_FN T tdisti_nv_ld_acquire(const T *p) {
  if (sizeof(T) == 8) {
    uint64_t b = tdisti_nv_ld_acquire_u64(p);
    T v;
    __builtin_memcpy(&v, &b, sizeof v);
    return v;
  } else {
    uint32_t b = tdisti_nv_ld_acquire_u32(p);
    T v;
    __builtin_memcpy(&v, &b, sizeof v);
    return v;
  }
}

/* ---- the one device wait ----
 * Every wait of every layer ends in tdisti_nv_wait_one / tdisti_nv_wait_slots: the C ABI's thread,
 * warp and block forms, the Triton-facing twins that dl.wait, libshmem_device and the kernels'
 * helpers call, the MLIR GPU lowering of distributed.wait, and (through tdistx_wait_check_i64) the
 * loops that poll something other than a slot (the LL all-reduce's packets). The policy:
 *   - a short wait pays nothing: pure polls first, the state and the timer only after they fail;
 *   - a wait is bounded by `timeout` ns (TDISTI_NV_TIMEOUT_STATE: the state's wait_timeout_ns, set by
 *     the runtime from TDIST_WAIT_TIMEOUT_MS; 0: forever);
 *   - every 64 polls it checks the sticky fault: a fault recorded by any wait of this PE, or by the
 *     host when the watchdog saw a peer die, ends the wait at once with that fault's status;
 *   - on expiry it records the fault (this PE's status TDIST_ERR_TIMEOUT, the PE owning the slot,
 *     the heap offset, cmp, expected, seen) and returns TDIST_ERR_TIMEOUT.
 * What the caller does with a nonzero status is the only thing that differs by form: the C forms
 * return (the host reads the record with tdist_cuda_check_fault); the Triton-facing twins, whose
 * callers cannot branch on a status, report the record once per PE and trap (tdisti_nv_stop). */
#define TDISTI_NV_TIMEOUT_STATE (~(uint64_t)0)

/* The PE whose heap holds `addr` and the offset in it (for the fault record): this PE's heap, else
 * the peer mapping that contains it; (my_pe, ~0) when no heap does. Failure path only. */
TDISTI_NV_FN int32_t tdisti_nv_owner(const tdist_device_state_t *st, const void *addr, uint64_t *off) {
  const uint64_t a = (uint64_t)(uintptr_t)addr;
  *off = tdisti_nv_heap_offset(st, addr);
  if (*off != ~(uint64_t)0) return st->my_pe;
  if (st->p2p_heap_base)
    for (int32_t pe = 0; pe < st->n_pes; ++pe) {
      const uint64_t b = (uint64_t)(uintptr_t)st->p2p_heap_base[pe];
      if (b != 0 && a - b < st->heap_size) {
        *off = a - b;
        return pe;
      }
    }
  return st->my_pe;
}

/* The slow-path check every polling loop makes (every 64 polls once its first polls failed):
 * 0 = keep polling; else the status that ends the wait: the sticky fault's code when one is
 * recorded, or TDIST_ERR_TIMEOUT after recording this wait's expiry. */
TDISTI_NV_FN int32_t tdisti_nv_wait_check(tdist_device_state_t *st, uint64_t t0, uint64_t timeout,
                                          const void *addr, int cmp, uint64_t expected, uint64_t seen) {
  const int32_t f = tdisti_nv_ld_volatile_s32(&st->fault_code);
  if (f != 0) return f;
  if (timeout != 0 && tdisti_nv_globaltimer() - t0 > timeout) {
    uint64_t off;
    const int32_t owner = tdisti_nv_owner(st, addr, &off);
    tdisti_nv_fault(TDISTI_NV_ERR_TIMEOUT, owner, off, cmp, expected, seen);
    return TDISTI_NV_ERR_TIMEOUT;
  }
  return 0;
}

/* The state for a wait that has to start its slow path, and its resolved bound; NULL (after
 * recording an INVALID_PARAM fault, or trapping when no state is bound) on a bad call. */
TDISTI_NV_FN tdist_device_state_t *tdisti_nv_wait_begin(int cmp, uint64_t expected, uint64_t seen,
                                                        uint64_t *timeout) {
  tdist_device_state_t *st = tdisti_nv_state();
  if (st == 0 || cmp < TDIST_CMP_EQ || cmp > TDIST_CMP_LE) {
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, st ? st->my_pe : -1, 0, cmp, expected, seen);
    return 0;
  }
  if (*timeout == TDISTI_NV_TIMEOUT_STATE) *timeout = st->wait_timeout_ns;
  return st;
}

/* Wait (acquire) until *addr <cmp> v. Returns 0, or the status that ended the wait (see above);
 * *seen_out is the value last read. */
template <class T>
TDISTI_NV_FN int32_t tdisti_nv_wait_one(const T *addr, int cmp, T v, uint64_t timeout, T *seen_out) {
  T seen;
  /* Pure polls first: a short wait (a signal round trip is ~1.5 us) should never pay for the
   * state, timeout and timer reads, which after an ld.acquire.sys are L2 round trips. */
#pragma unroll 1
  for (int i = 0; i < 256; ++i) {
    seen = tdisti_nv_ld_acquire(addr);
    if (tdisti_nv_cmp(seen, cmp, v)) {
      *seen_out = seen;
      return 0;
    }
  }
  *seen_out = seen;
  tdist_device_state_t *st = tdisti_nv_wait_begin(cmp, (uint64_t)v, (uint64_t)seen, &timeout);
  if (st == 0) return TDISTI_NV_ERR_INVALID_PARAM;
  const uint64_t t0 = tdisti_nv_globaltimer();
  for (uint32_t it = 1;; ++it) {
    seen = tdisti_nv_ld_acquire(addr);
    if (tdisti_nv_cmp(seen, cmp, v)) {
      *seen_out = seen;
      return 0;
    }
    if ((it & 63u) == 0) {
      const int32_t s = tdisti_nv_wait_check(st, t0, timeout, addr, cmp, (uint64_t)v, (uint64_t)seen);
      if (s != 0) {
        *seen_out = seen;
        return s;
      }
    }
  }
}

/* Wait until each of n slots (`stride` bytes apart, TDIST_SIGNAL_SLOT_BYTES unless the caller says
 * otherwise) equals v; first/step select this thread's subset (cooperative waits). A thread with one slot
 * polls it with ld.acquire; one with several sweeps them with relaxed loads, so all are in flight at once,
 * and one acquire fence ends the sweep. Returns 0 or the status that ended the wait. */
template <class T>
TDISTI_NV_FN int32_t tdisti_nv_wait_slots(const T *slots, int32_t n, T v, int32_t first, int32_t step,
                                          uint64_t timeout, size_t stride = TDIST_SIGNAL_SLOT_BYTES) {
  const char *base = (const char *)slots;
  if (first >= n) return 0;
  if (first + step >= n) {
    T seen;
    return tdisti_nv_wait_one<T>((const T *)(base + (size_t)first * stride), TDIST_CMP_EQ, v, timeout, &seen);
  }
  tdist_device_state_t *st = 0;
  uint64_t t0 = 0;
  for (uint32_t it = 0;; ++it) {
    int32_t bad = -1;
    T seen = v;
    for (int32_t i = first; i < n; i += step) {
      const T *p = (const T *)(base + (size_t)i * stride);
      uint64_t b = tdisti_nv_ld_relaxed_bits(p, sizeof(T));
      T x;
      __builtin_memcpy(&x, &b, sizeof x);
      if (x != v) {
        bad = i;
        seen = x;
        break;
      }
    }
    if (bad < 0) {
      tdisti_nv_fence_acq_rel_sys();
      return 0;
    }
    if (it == 0) {
      st = tdisti_nv_wait_begin(TDIST_CMP_EQ, (uint64_t)v, (uint64_t)seen, &timeout);
      if (st == 0) return TDISTI_NV_ERR_INVALID_PARAM;
      t0 = tdisti_nv_globaltimer();
    } else if ((it & 63u) == 0) {
      const int32_t s = tdisti_nv_wait_check(st, t0, timeout, base + (size_t)bad * stride, TDIST_CMP_EQ,
                                             (uint64_t)v, (uint64_t)seen);
      if (s != 0) return s;
    }
  }
}

/* A Triton-facing form's answer to a wait that ended without its condition: the first thread of
 * the PE to get here prints the fault record, then every failing thread traps (the host sees a
 * launch failure at its next synchronisation; the record stays in the state). */
TDISTI_NV_FN void tdisti_nv_stop(const char *what, int32_t status) {
  tdist_device_state_t *st = tdisti_nv_state();
  if (st != 0 && tdisti_nv_atom_cas_s32(&st->fault_reported, 0, 1) == 0) {
    TDISTI_NV_PRINTF(
        "tdist[pe %d]: %s gave up (status %d): fault %d on PE %d, heap offset 0x%llx, cmp %d, "
        "expected %llu, seen %llu (block %u thread %u)\n",
        st->my_pe, what, status, tdisti_nv_ld_volatile_s32(&st->fault_code), st->fault_pe,
        (unsigned long long)st->fault_offset, st->fault_cmp, (unsigned long long)st->fault_expected,
        (unsigned long long)st->fault_seen, tdisti_nv_ctaid_x(), tdisti_nv_block_tid());
  }
  (void)what;
  (void)status;
  tdisti_nv_trap();
}

/* ---- address translation ---- */
/* The table and global-state paths: a job above TDIST_FAST_MAX_PES, a module the host never
 * patched, a PE without a load/store mapping, or an address outside the heap (a fault). */
TDISTI_NV_FN void *tdisti_nv_ptr_slow(const void *addr, int pe) {
  const int32_t fn = tdisti_fast.n_pes;
  if (fn > 0) { /* patched: the constant table, no dependent global load */
    const uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)tdisti_fast.heap_base);
    if (pe >= 0 && pe < fn && off < tdisti_fast.heap_size) {
      const uint64_t base = tdisti_fast.p2p_base[pe];
      return base ? (void *)(uintptr_t)(base + off) : 0;
    }
  }
  tdist_device_state_t *st = tdisti_nv_state();
  if (st == 0) {
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, 0, -1, 0, 0);
    return 0;
  }
  uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)TDISTI_NV_SF_PTR(st, heap_base));
  const int32_t n = TDISTI_NV_SF_S32(st, n_pes);
  if (pe < 0 || pe >= n || off >= TDISTI_NV_SF_U64(st, heap_size)) {
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, off, -1, (uint64_t)n, (uint64_t)(uintptr_t)addr);
    return 0;
  }
  char *base = tdisti_nv_p2p_base(st, pe);
  return base ? base + off : 0;
}

/* Fast path: every PE mapped at a uniform stride (tdist_device_fast_t.p2p_stride). One combined
 * predicate (non-short-circuit &, so one branch) over constant-bank operands, then a multiply-add;
 * n_pes == 0 (not patched) fails the unsigned range test. */
TDISTI_NV_FN void *tdisti_nv_ptr(const void *addr, int pe) {
  const uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)tdisti_fast.heap_base);
  const uint64_t stride = tdisti_fast.p2p_stride;
  const bool fast =
      ((uint32_t)pe < (uint32_t)tdisti_fast.n_pes) & (off < tdisti_fast.heap_size) & (stride != 0);
  if (__builtin_expect(fast, 1))
    return (void *)(uintptr_t)(tdisti_fast.p2p_base[0] + (uint64_t)pe * stride + off);
  return tdisti_nv_ptr_slow(addr, pe);
}

/* ---- bulk copy: lanes idx, idx+stride, ... of a cooperating group copy n bytes ----
 * 16-byte vectors when dst and src share their alignment modulo 16 (head and tail bytewise),
 * else 8-, 4-byte or byte elements. TDISTI_NV_COPY_UNROLL independent vectors per thread are in
 * flight per iteration. Plain (weak) loads and stores: ordering comes from the fences / release ops. */
#ifndef TDISTI_NV_COPY_UNROLL
#define TDISTI_NV_COPY_UNROLL 8
#endif
struct __attribute__((aligned(16))) tdisti_nv_v16 {
  uint32_t x, y, z, w;
};
/* Explicit 16-byte generic loads/stores: clang does not always merge the struct copy into one
 * vector access, and the source of a put may be shared memory (generic addressing). */
TDISTI_NV_FN tdisti_nv_v16 tdisti_nv_ld16(const tdisti_nv_v16 *p) {
  tdisti_nv_v16 v;
  asm volatile("ld.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
TDISTI_NV_FN void tdisti_nv_st16(tdisti_nv_v16 *p, tdisti_nv_v16 v) {
  asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
template <class V>
TDISTI_NV_FN V tdisti_nv_ld(const V *p) {
  return *p;
}
template <class V>
TDISTI_NV_FN void tdisti_nv_st(V *p, V v) {
  *p = v;
}
TDISTI_NV_FN tdisti_nv_v16 tdisti_nv_ld(const tdisti_nv_v16 *p) { return tdisti_nv_ld16(p); }
TDISTI_NV_FN void tdisti_nv_st(tdisti_nv_v16 *p, tdisti_nv_v16 v) { tdisti_nv_st16(p, v); }

template <class V>
TDISTI_NV_FN void tdisti_nv_copy_elems(V *d, const V *s, size_t n, size_t idx, size_t stride) {
  /* TDISTI_NV_COPY_UNROLL independent loads in flight per thread before their stores: the stores
   * (asm volatile, memory clobber) keep the next batch's loads behind them, so this depth is all
   * the memory parallelism a thread offers. */
  enum { U = TDISTI_NV_COPY_UNROLL };
  size_t i = idx;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    V r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = tdisti_nv_ld(s + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) tdisti_nv_st(d + i + u * stride, r[u]);
  }
  for (; i < n; i += stride) tdisti_nv_st(d + i, tdisti_nv_ld(s + i));
}

template <unsigned A, class V>
TDISTI_NV_FN void tdisti_nv_copy_aligned(char *d, const char *s, size_t n, size_t idx, size_t stride) {
  size_t head = (A - ((uintptr_t)d & (A - 1))) & (A - 1);
  if (head > n) head = n;
  for (size_t i = idx; i < head; i += stride) d[i] = s[i];
  size_t nv = (n - head) / A;
  tdisti_nv_copy_elems<V>((V *)(d + head), (const V *)(s + head), nv, idx, stride);
  for (size_t i = head + nv * A + idx; i < n; i += stride) d[i] = s[i];
}

TDISTI_NV_FN void tdisti_nv_copy(void *dst, const void *src, size_t n, size_t idx, size_t stride) {
  char *d = (char *)dst;
  const char *s = (const char *)src;
  uintptr_t mis = (uintptr_t)d ^ (uintptr_t)s;
  if ((mis & 15) == 0)
    tdisti_nv_copy_aligned<16, tdisti_nv_v16>(d, s, n, idx, stride);
  else if ((mis & 7) == 0)
    tdisti_nv_copy_aligned<8, uint64_t>(d, s, n, idx, stride);
  else if ((mis & 3) == 0)
    tdisti_nv_copy_aligned<4, uint32_t>(d, s, n, idx, stride);
  else
    tdisti_nv_copy_elems<char>(d, s, n, idx, stride);
}

/* ---- the ROCE engine: PEs without a load/store mapping (docs/CONTRACT.md section 7) ----
 * libtdist_device_nvshmem.bc is this header compiled with TDIST_NV_ENGINE_NVSHMEM; Triton links it
 * with NVSHMEM's libnvshmem_device.bc when the runtime runs the NVSHMEM engine. There, a PE whose p2p
 * base is NULL and whose rdma base is set is reached through NVSHMEM's device API, at the address
 * rdma base + heap offset (the heap is NVSHMEM's symmetric heap, and the rdma base of every engine
 * peer is this PE's own heap base: NVSHMEM takes the local address of a symmetric object). In the
 * plain library, and for a PE no table reaches, an operation records TDIST_ERR_NOT_SUPPORTED for that
 * PE instead of being dropped. The scope of an engine call is the tdist form's: a thread form calls
 * NVSHMEM's thread form, the warp and block forms NVSHMEM's _warp and _block forms (every lane / thread
 * of the group calls them, as the tdist forms require). */
enum { TDISTI_NV_SCOPE_THREAD = 0, TDISTI_NV_SCOPE_WARP = 1, TDISTI_NV_SCOPE_BLOCK = 2 };
/* NVSHMEM's signal operators (nvshmem_constants.h; the host side checks them at compile time). */
#define TDISTI_NV_NVSHMEM_SIGNAL_SET 9
#define TDISTI_NV_NVSHMEM_SIGNAL_ADD 10

#if defined(TDIST_NV_ENGINE_NVSHMEM) && !defined(TDIST_NV_BITCODE)
/* CUDA C++ (nvcc, -rdc): NVSHMEM's device API comes from its own headers, whose inline definitions
 * need its static device library at the device link (libnvshmem_device.a). */
#include <nvshmem.h>
#include <nvshmemx.h>
#elif defined(TDIST_NV_ENGINE_NVSHMEM)
/* The bitcode: declarations only, resolved by libnvshmem_device.bc when Triton links both. */
extern "C" {
#define TDISTI_NV_NVSHMEM_RMA(prefix, suffix)                                                                \
  TDISTI_NV_DEV void prefix##putmem##suffix(void *dst, const void *src, size_t nbytes, int pe);              \
  TDISTI_NV_DEV void prefix##putmem_nbi##suffix(void *dst, const void *src, size_t nbytes, int pe);          \
  TDISTI_NV_DEV void prefix##getmem##suffix(void *dst, const void *src, size_t nbytes, int pe);              \
  TDISTI_NV_DEV void prefix##putmem_signal##suffix(void *dst, const void *src, size_t nbytes,                \
                                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
  TDISTI_NV_DEV void prefix##putmem_signal_nbi##suffix(                                                      \
      void *dst, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
TDISTI_NV_NVSHMEM_RMA(nvshmem_, )
TDISTI_NV_NVSHMEM_RMA(nvshmemx_, _warp)
TDISTI_NV_NVSHMEM_RMA(nvshmemx_, _block)
#undef TDISTI_NV_NVSHMEM_RMA
TDISTI_NV_DEV void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
TDISTI_NV_DEV void nvshmem_uint32_atomic_set(uint32_t *dst, uint32_t value, int pe);
TDISTI_NV_DEV void nvshmem_uint32_atomic_add(uint32_t *dst, uint32_t value, int pe);
TDISTI_NV_DEV void nvshmem_uint8_p(uint8_t *dst, uint8_t value, int pe);
TDISTI_NV_DEV void nvshmem_uint16_p(uint16_t *dst, uint16_t value, int pe);
TDISTI_NV_DEV void nvshmem_uint32_p(uint32_t *dst, uint32_t value, int pe);
TDISTI_NV_DEV void nvshmem_uint64_p(uint64_t *dst, uint64_t value, int pe);
TDISTI_NV_DEV uint8_t nvshmem_uint8_g(const uint8_t *src, int pe);
TDISTI_NV_DEV uint16_t nvshmem_uint16_g(const uint16_t *src, int pe);
TDISTI_NV_DEV uint32_t nvshmem_uint32_g(const uint32_t *src, int pe);
TDISTI_NV_DEV uint64_t nvshmem_uint64_g(const uint64_t *src, int pe);
TDISTI_NV_DEV void nvshmem_fence(void);
TDISTI_NV_DEV void nvshmem_quiet(void);
}
#endif

/* The engine's address of symmetric `addr` on `pe`, or NULL: no engine reaches `pe`. */
TDISTI_NV_FN void *tdisti_nv_engine_addr(const void *addr, int pe) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  tdist_device_state_t *st = tdisti_nv_state();
  if (st == 0 || st->rdma_heap_base == 0 || pe < 0 || pe >= st->n_pes) return 0;
  const uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)st->heap_base);
  char *b = (char *)st->rdma_heap_base[pe];
  return b != 0 && off < st->heap_size ? b + off : 0;
#else
  (void)addr;
  (void)pe;
  return 0;
#endif
}

/* No load/store path to `pe` and no engine: record it (a bad PE or address has already recorded
 * INVALID_PARAM in the translation; the first fault wins). */
TDISTI_NV_FN void tdisti_nv_unreachable(int pe, uint64_t what) {
  tdisti_nv_fault(TDISTI_NV_ERR_NOT_SUPPORTED, pe, 0, -1, what, 0);
}

/* NVSHMEM's form of one group RMA by scope (every participant calls; a uniform branch). */
#define TDISTI_NV_ENGINE_CALL(scope, name, ...) \
  do {                                          \
    if ((scope) == TDISTI_NV_SCOPE_BLOCK)       \
      nvshmemx_##name##_block(__VA_ARGS__);     \
    else if ((scope) == TDISTI_NV_SCOPE_WARP)   \
      nvshmemx_##name##_warp(__VA_ARGS__);      \
    else                                        \
      nvshmem_##name(__VA_ARGS__);              \
  } while (0)

/* A put of `n` bytes from local `src` to symmetric `dst` on `pe` by a group (participant `idx` of
 * `size`): the load/store copy when `p` (dst translated by the p2p table) is set, else the engine's
 * put, else a recorded NOT_SUPPORTED. The engine's blocking form in every tdist form, nbi ones too:
 * tdist lets the source be reused on return, which NVSHMEM's _nbi forms do not. Delivery is the
 * engine's quiet (tdist_quiet), as the load/store path's is fence.sc.sys. */
TDISTI_NV_FN void tdisti_nv_put(void *p, void *dst, const void *src, size_t n, int pe, size_t idx,
                                size_t size, int scope) {
  if (p) {
    tdisti_nv_copy(p, src, n, idx, size);
    return;
  }
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (void *e = tdisti_nv_engine_addr(dst, pe)) {
    TDISTI_NV_ENGINE_CALL(scope, putmem, e, src, n, pe);
    return;
  }
#endif
  (void)dst;
  (void)scope;
  tdisti_nv_unreachable(pe, n);
}
/* A get (complete on return in every form, as the load/store copy is). */
TDISTI_NV_FN void tdisti_nv_get(const void *p, void *dst, const void *src, size_t n, int pe, size_t idx,
                                size_t size, int scope) {
  if (p) {
    tdisti_nv_copy(dst, p, n, idx, size);
    return;
  }
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (void *e = tdisti_nv_engine_addr(src, pe)) {
    TDISTI_NV_ENGINE_CALL(scope, getmem, dst, e, n, pe);
    return;
  }
#endif
  (void)src;
  (void)scope;
  tdisti_nv_unreachable(pe, n);
}

/* The engine's operator for a tdist one (-1: not a tdist operator; the caller faults). */
TDISTI_NV_FN int tdisti_nv_engine_sig_op(int op) {
  return op == TDIST_SIGNAL_SET   ? TDISTI_NV_NVSHMEM_SIGNAL_SET
         : op == TDIST_SIGNAL_ADD ? TDISTI_NV_NVSHMEM_SIGNAL_ADD
                                  : -1;
}

/* putmem_signal to a PE reached only by the engine (`p`, dst's p2p translation, is NULL), by a
 * group: NVSHMEM's (blocking) putmem_signal, which delivers the signal after the data. Returns 0 when
 * the engine took it, else 1 (the caller goes on with the load/store path, which records the fault of
 * an unreachable PE). */
TDISTI_NV_FN int tdisti_nv_engine_put_signal(const void *p, void *dst, const void *src, size_t n,
                                             uint64_t *sig, uint64_t v, int op, int pe, int scope) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (p != 0) return 1;
  void *e = tdisti_nv_engine_addr(dst, pe);
  uint64_t *es = (uint64_t *)tdisti_nv_engine_addr(sig, pe);
  if (e == 0 || es == 0) return 1;
  const int nop = tdisti_nv_engine_sig_op(op);
  if (nop < 0) {
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, 0, -1, (uint64_t)op, v);
    return 0;
  }
  TDISTI_NV_ENGINE_CALL(scope, putmem_signal, e, src, n, es, v, nop, pe);
  return 0;
#else
  (void)p, (void)dst, (void)src, (void)n, (void)sig, (void)v, (void)op, (void)pe, (void)scope;
  return 1;
#endif
}

/* The engine's quiet (nothing in the plain library). */
TDISTI_NV_FN void tdisti_nv_engine_quiet(void) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  nvshmem_quiet();
#endif
}

/* tdist_fence and tdist_quiet. The plain library: a system-scope fence orders (fence) or completes
 * (quiet) this thread's stores into peer mappings. The engine build: NVSHMEM's fence and quiet alone,
 * since they order or complete memory stores to symmetric objects too (OpenSHMEM's definition) and
 * end in a system-scope fence of the calling thread on every NVSHMEM transport; a second fence
 * before them cost a drain per call. */
TDISTI_NV_FN void tdisti_nv_fence(void) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  nvshmem_fence();
#else
  tdisti_nv_fence_acq_rel_sys();
#endif
}
TDISTI_NV_FN void tdisti_nv_quiet(void) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  nvshmem_quiet();
#else
  tdisti_nv_fence_sc_sys();
#endif
}

/* A release update of a signal slot on a PE reached only by the engine: NVSHMEM's fence (this
 * thread's earlier engine operations to `pe` are delivered first), then its signal op / atomic. */
template <class T>
TDISTI_NV_FN void tdisti_nv_engine_notify(T *slot, T v, int32_t pe, int32_t op) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (void *e = tdisti_nv_engine_addr(slot, pe)) {
    if (op != TDIST_SIGNAL_SET && op != TDIST_SIGNAL_ADD) {
      tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, 0, -1, (uint64_t)op, 0);
      return;
    }
    nvshmem_fence(); /* ends in a system-scope fence: this thread's stores are released too */
    if (sizeof(T) == 8) {
      uint64_t b;
      __builtin_memcpy(&b, &v, 8);
      nvshmemx_signal_op((uint64_t *)e, b, tdisti_nv_engine_sig_op(op), pe);
    } else {
      uint32_t b;
      __builtin_memcpy(&b, &v, 4);
      if (op == TDIST_SIGNAL_SET)
        nvshmem_uint32_atomic_set((uint32_t *)e, b, pe);
      else
        nvshmem_uint32_atomic_add((uint32_t *)e, b, pe);
    }
    return;
  }
#endif
  (void)slot;
  (void)v;
  tdisti_nv_unreachable(pe, (uint64_t)op);
}

/* Typed p (release) and g through the engine, by the width of the type. */
TDISTI_NV_FN void tdisti_nv_engine_p(void *dst, uint64_t bits, unsigned width, int pe) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (void *e = tdisti_nv_engine_addr(dst, pe)) {
    nvshmem_fence(); /* as the notify's: this thread's stores are released too */
    if (width == 1)
      nvshmem_uint8_p((uint8_t *)e, (uint8_t)bits, pe);
    else if (width == 2)
      nvshmem_uint16_p((uint16_t *)e, (uint16_t)bits, pe);
    else if (width == 4)
      nvshmem_uint32_p((uint32_t *)e, (uint32_t)bits, pe);
    else
      nvshmem_uint64_p((uint64_t *)e, bits, pe);
    return;
  }
#endif
  (void)dst;
  (void)bits;
  tdisti_nv_unreachable(pe, width);
}
TDISTI_NV_FN uint64_t tdisti_nv_engine_g(const void *src, unsigned width, int pe) {
#if defined(TDIST_NV_ENGINE_NVSHMEM)
  if (void *e = tdisti_nv_engine_addr(src, pe)) {
    if (width == 1) return nvshmem_uint8_g((const uint8_t *)e, pe);
    if (width == 2) return nvshmem_uint16_g((const uint16_t *)e, pe);
    if (width == 4) return nvshmem_uint32_g((const uint32_t *)e, pe);
    return nvshmem_uint64_g((const uint64_t *)e, pe);
  }
#endif
  (void)src;
  tdisti_nv_unreachable(pe, width);
  return 0;
}

/* Signal update on a translated address. */
TDISTI_NV_FN void tdisti_nv_signal_at(uint64_t *p, uint64_t v, int op, int pe) {
  if (op == TDIST_SIGNAL_SET)
    tdisti_nv_st_release_u64(p, v);
  else if (op == TDIST_SIGNAL_ADD)
    tdisti_nv_red_add_release_u64(p, v);
  else
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, 0, -1, (uint64_t)op, v);
}

template <class T>
TDISTI_NV_FN void tdisti_nv_notify(T *slot, T v, int32_t pe, int32_t op) {
  T *p = (T *)tdisti_nv_ptr(slot, pe);
  if (p == 0) {
    /* No load/store path to `pe`: the engine's signal, or (no engine) a recorded NOT_SUPPORTED
     * rather than a dropped signal, so the waiter's side is not the only one to see a timeout. */
    tdisti_nv_engine_notify<T>(slot, v, pe, op);
    return;
  }
  if (sizeof(T) == 8) {
    uint64_t b;
    __builtin_memcpy(&b, &v, 8);
    tdisti_nv_signal_at((uint64_t *)p, b, op, pe);
  } else {
    uint32_t b;
    __builtin_memcpy(&b, &v, 4);
    if (op == TDIST_SIGNAL_SET)
      tdisti_nv_st_release_u32(p, b);
    else if (op == TDIST_SIGNAL_ADD)
      tdisti_nv_red_add_release_u32(p, b);
    else
      tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, pe, 0, -1, (uint64_t)op, b);
  }
}

/* ======================================================================================
 * The device ABI (thread form).
 * ====================================================================================== */

TDISTI_NV_ABI int tdist_my_pe(void) {
  return tdisti_fast.n_pes > 0 ? tdisti_fast.my_pe : TDISTI_NV_SF_S32(tdisti_nv_state_checked(), my_pe);
}
TDISTI_NV_ABI int tdist_n_pes(void) {
  return tdisti_fast.n_pes > 0 ? tdisti_fast.n_pes : TDISTI_NV_SF_S32(tdisti_nv_state_checked(), n_pes);
}
TDISTI_NV_ABI void *tdist_ptr(const void *addr, int pe) { return tdisti_nv_ptr(addr, pe); }

/* Typed p (release store: usable as a flag) and g (relaxed system-scope load). */
#define TDISTI_NV_DEFINE_PG(name, T)                                                               \
  TDISTI_NV_ABI void tdist_##name##_p(T *dst, T value, int pe) {                                   \
    T *p = (T *)tdisti_nv_ptr(dst, pe);                                                            \
    uint64_t bits = 0;                                                                             \
    __builtin_memcpy(&bits, &value, sizeof(T));                                                    \
    if (p == 0)                                                                                    \
      tdisti_nv_engine_p(dst, bits, sizeof(T), pe);                                                \
    else                                                                                           \
      tdisti_nv_st_release_bits(p, bits, sizeof(T));                                               \
  }                                                                                                \
  TDISTI_NV_ABI T tdist_##name##_g(const T *src, int pe) {                                         \
    const T *p = (const T *)tdisti_nv_ptr(src, pe);                                                \
    T v;                                                                                           \
    const uint64_t bits =                                                                          \
        p == 0 ? tdisti_nv_engine_g(src, sizeof(T), pe) : tdisti_nv_ld_relaxed_bits(p, sizeof(T)); \
    __builtin_memcpy(&v, &bits, sizeof(T));                                                        \
    return v;                                                                                      \
  }
TDIST_FOR_EACH_RMA_TYPE(TDISTI_NV_DEFINE_PG)
#undef TDISTI_NV_DEFINE_PG

TDISTI_NV_ABI void tdist_putmem(void *dst, const void *src, size_t nbytes, int pe) {
  tdisti_nv_put(tdisti_nv_ptr(dst, pe), dst, src, nbytes, pe, 0, 1, TDISTI_NV_SCOPE_THREAD);
}
TDISTI_NV_ABI void tdist_getmem(void *dst, const void *src, size_t nbytes, int pe) {
  tdisti_nv_get(tdisti_nv_ptr(src, pe), dst, src, nbytes, pe, 0, 1, TDISTI_NV_SCOPE_THREAD);
}
/* SM loads/stores are issued in order; nbi differs only in not implying completion before
 * tdist_quiet (the stores may still be in flight to the peer). */
TDISTI_NV_ABI void tdist_putmem_nbi(void *dst, const void *src, size_t nbytes, int pe) {
  tdist_putmem(dst, src, nbytes, pe);
}
TDISTI_NV_ABI void tdist_getmem_nbi(void *dst, const void *src, size_t nbytes, int pe) {
  tdist_getmem(dst, src, nbytes, pe);
}

/* signal_op is the one notify on a uint64 slot: an unreachable PE records NOT_SUPPORTED. */
TDISTI_NV_ABI void tdist_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
  tdisti_nv_notify<uint64_t>(sig_addr, signal, pe, sig_op);
}
TDISTI_NV_ABI void tdist_putmem_signal(void *dst, const void *src, size_t nbytes, uint64_t *sig_addr,
                                       uint64_t signal, int sig_op, int pe) {
  void *p = tdisti_nv_ptr(dst, pe);
  if (tdisti_nv_engine_put_signal(p, dst, src, nbytes, sig_addr, signal, sig_op, pe,
                                  TDISTI_NV_SCOPE_THREAD) == 0)
    return;
  tdisti_nv_put(p, dst, src, nbytes, pe, 0, 1, TDISTI_NV_SCOPE_THREAD);
  /* The release below orders this thread's data stores before the signal. */
  tdist_signal_op(sig_addr, signal, sig_op, pe);
}
TDISTI_NV_ABI void tdist_putmem_signal_nbi(void *dst, const void *src, size_t nbytes, uint64_t *sig_addr,
                                           uint64_t signal, int sig_op, int pe) {
  tdist_putmem_signal(dst, src, nbytes, sig_addr, signal, sig_op, pe);
}

TDISTI_NV_ABI uint64_t tdist_signal_fetch(const uint64_t *sig_addr) {
  return tdisti_nv_ld_acquire_u64(sig_addr);
}
TDISTI_NV_ABI uint64_t tdist_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
  uint64_t seen;
  (void)tdisti_nv_wait_one<uint64_t>(sig_addr, cmp, cmp_value, TDISTI_NV_TIMEOUT_STATE, &seen);
  return seen;
}

#define TDISTI_NV_DEFINE_WAIT_UNTIL(name, T)                                           \
  TDISTI_NV_ABI void tdist_##name##_wait_until(T *ivar, int cmp, T cmp_value) {        \
    T seen;                                                                            \
    (void)tdisti_nv_wait_one<T>(ivar, cmp, cmp_value, TDISTI_NV_TIMEOUT_STATE, &seen); \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDISTI_NV_DEFINE_WAIT_UNTIL)
#undef TDISTI_NV_DEFINE_WAIT_UNTIL

#define TDISTI_NV_DEFINE_SLOT_OPS(name, T)                                                \
  TDISTI_NV_ABI int32_t tdistx_wait_##name(T *slots, int32_t n, T value) {                \
    (void)tdisti_nv_wait_slots<T>(slots, n, value, 0, 1, TDISTI_NV_TIMEOUT_STATE);        \
    return 0;                                                                             \
  }                                                                                       \
  TDISTI_NV_ABI void tdistx_notify_##name(T *slot, T value, int32_t pe, int32_t sig_op) { \
    tdisti_nv_notify<T>(slot, value, pe, sig_op);                                         \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDISTI_NV_DEFINE_SLOT_OPS)
#undef TDISTI_NV_DEFINE_SLOT_OPS

/* consume_token: identity, but the asm makes the value depend on the token so that the compiler
 * cannot move loads through the returned pointer above the wait that produced the token. */
TDISTI_NV_ABI void *tdistx_consume_token_ptr(void *value, int32_t token) {
  uint64_t v = (uint64_t)(uintptr_t)value;
  asm volatile("" : "+l"(v) : "r"(token) : "memory");
  return (void *)(uintptr_t)v;
}
TDISTI_NV_ABI int64_t tdistx_consume_token_int64(int64_t value, int32_t token) {
  asm volatile("" : "+l"(value) : "r"(token) : "memory");
  return value;
}

TDISTI_NV_ABI void tdist_fence(void) { tdisti_nv_fence(); }
TDISTI_NV_ABI void tdist_quiet(void) { tdisti_nv_quiet(); }

/* The cross-PE part of every device barrier, run by one thread per PE, over a member set: world PEs
 * start + i * stride, i < size, this PE being member `me`, each with its epoch word at heap offset
 * `epoch_off` (the world's barriers: TDIST_SYNC_DEVICE_BARRIER_OFF over every PE; a team's: offset
 * TDIST_TEAM_SYNC_DEVICE_BARRIER_OFF of its team heap block over its members). Publish this PE's next
 * epoch (release) and pull every other member's, accepting epoch or epoch + 1 (a member may already be
 * in the next barrier). Every barrier on one epoch word adds one to it on every member, so the grid
 * barrier and the PE barriers of libshmem_device compose, as long as every member runs the same
 * sequence of barriers on it. Returns 0, or the status that ended the pull (its fault recorded, the
 * ABI's wait policy: tdisti_nv_wait_check every 64 sweeps). */
TDISTI_NV_FN int32_t tdisti_nv_pe_barrier(tdist_device_state_t *st, uint64_t epoch_off, int start, int stride,
                                          int size, int me) {
  char *heap = (char *)TDISTI_NV_SF_PTR(st, heap_base);
  uint64_t *epoch_p = (uint64_t *)(heap + epoch_off);
  const uint64_t e = tdisti_nv_ld_relaxed_u64(epoch_p) + 1;
  /* Members behind the engine (no p2p base) are told, not read: one engine add to each one's
   * arrivals counter, after this PE's earlier engine operations are delivered (the engine's quiet).
   * The world's counter is TDIST_SYNC_DEVICE_ARRIVALS_OFF, a team's is in its sync words. */
  const uint64_t arrivals_off =
      epoch_off == TDIST_SYNC_DEVICE_BARRIER_OFF
          ? (uint64_t)TDIST_SYNC_DEVICE_ARRIVALS_OFF
          : epoch_off - TDIST_TEAM_SYNC_DEVICE_BARRIER_OFF + TDIST_TEAM_SYNC_DEVICE_ARRIVALS_OFF;
  uint64_t n_engine = 0;
  for (int i = 0; i < size; ++i) {
    const int pe = start + i * stride;
    if (i == me || tdisti_nv_p2p_base(st, pe) != 0) continue;
    if (n_engine++ == 0) tdisti_nv_quiet();
    tdisti_nv_engine_notify<uint64_t>((uint64_t *)(heap + arrivals_off), 1, pe, TDIST_SIGNAL_ADD);
  }
  if (n_engine != 0 && tdisti_nv_faulted(st)) return tdisti_nv_ld_volatile_s32(&st->fault_code);
  tdisti_nv_st_release_u64(epoch_p, e);
  const uint64_t t0 = tdisti_nv_globaltimer();
  int32_t status = 0;
  for (uint32_t it = 0;; ++it) {
    int bad = -1, bad_cmp = TDIST_CMP_EQ;
    uint64_t seen = 0, want = e;
    const uint64_t *bad_p = 0;
    for (int i = 0; i < size; ++i) {
      if (i == me) continue;
      const int pe = start + i * stride;
      const char *base = tdisti_nv_p2p_base(st, pe);
      if (base == 0) continue; /* an engine member: counted below */
      const uint64_t *q = (const uint64_t *)(base + epoch_off);
      uint64_t v = tdisti_nv_ld_relaxed_u64(q);
      if (v != e && v != e + 1) {
        bad = pe;
        seen = v;
        bad_p = q;
        break;
      }
    }
    /* every engine member adds once per barrier and none starts barrier e + 1 before all arrived at
     * this one: e * n_engine adds have come once they all arrived (more: some went on) */
    if (bad < 0 && n_engine != 0) {
      const uint64_t *arrived = (const uint64_t *)(heap + arrivals_off);
      const uint64_t v = tdisti_nv_ld_relaxed_u64(arrived);
      if (v < e * n_engine) {
        bad = st->my_pe;
        seen = v;
        bad_p = arrived;
        bad_cmp = TDIST_CMP_GE;
        want = e * n_engine;
      }
    }
    if (bad < 0) break;
    if ((it & 63u) == 63u &&
        (status = tdisti_nv_wait_check(st, t0, st->wait_timeout_ns, bad_p, bad_cmp, want, seen)) != 0)
      break;
  }
  tdisti_nv_fence_acq_rel_sys();
  return status;
}

/* The world's member set: every PE, on the epoch at TDIST_SYNC_DEVICE_BARRIER_OFF. */
TDISTI_NV_FN int32_t tdisti_nv_world_pe_barrier(tdist_device_state_t *st) {
  return tdisti_nv_pe_barrier(st, TDIST_SYNC_DEVICE_BARRIER_OFF, 0, 1, TDISTI_NV_SF_S32(st, n_pes),
                              TDISTI_NV_SF_S32(st, my_pe));
}

/* Device barrier (docs/CONTRACT.md section 3): collective over every CTA of the launch on every
 * PE; every thread of every CTA calls it. All CTAs of the launch must be co-resident. The last
 * CTA to arrive at TDIST_SYNC_GRID_ARRIVE_OFF resets the arrival count, runs the cross-PE barrier
 * (tdisti_nv_pe_barrier), then bumps TDIST_SYNC_GRID_RELEASE_OFF. */
TDISTI_NV_ABI void tdist_barrier_all(void) {
  tdisti_nv_syncthreads();
  if (tdisti_nv_block_tid() == 0) {
    tdist_device_state_t *st = tdisti_nv_state_checked();
    char *heap = (char *)TDISTI_NV_SF_PTR(st, heap_base);
    uint64_t *arrive = (uint64_t *)(heap + TDIST_SYNC_GRID_ARRIVE_OFF);
    uint64_t *release = (uint64_t *)(heap + TDIST_SYNC_GRID_RELEASE_OFF);
    const uint64_t gen = tdisti_nv_ld_acquire_u64(release);
    const uint64_t nctas = tdisti_nv_num_ctas();
    tdisti_nv_fence_sc_sys(); /* every earlier store of the CTA (bar.sync above) is released */
    const uint64_t old = tdisti_nv_atom_add_acq_rel_gpu_u64(arrive, 1);
    if (old == nctas - 1) {
      tdisti_nv_st_relaxed_u64(arrive, 0);
      (void)tdisti_nv_world_pe_barrier(st);
      tdisti_nv_st_release_u64(release, gen + 1);
    } else {
      uint64_t seen;
      (void)tdisti_nv_wait_one<uint64_t>(release, TDIST_CMP_NE, gen, TDISTI_NV_TIMEOUT_STATE, &seen);
    }
  }
  tdisti_nv_syncthreads();
}

TDISTI_NV_ABI int32_t tdistx_program_id(int32_t axis) {
  return (int32_t)(axis == 0 ? tdisti_nv_ctaid_x() : axis == 1 ? tdisti_nv_ctaid_y() : tdisti_nv_ctaid_z());
}
TDISTI_NV_ABI int32_t tdistx_num_programs(int32_t axis) {
  return (int32_t)(axis == 0   ? tdisti_nv_nctaid_x()
                   : axis == 1 ? tdisti_nv_nctaid_y()
                               : tdisti_nv_nctaid_z());
}

/* ======================================================================================
 * Warp and block forms (extensions). Every participating thread passes the same arguments.
 * ====================================================================================== */

#define TDISTI_NV_DEFINE_GROUP_RMA(scope, IDX, SIZE, SYNC, SCOPE)                                            \
  TDISTI_NV_ABI void tdistx_putmem_##scope(void *dst, const void *src, size_t nbytes, int pe) {              \
    tdisti_nv_put(tdisti_nv_ptr(dst, pe), dst, src, nbytes, pe, IDX, SIZE, SCOPE);                           \
    SYNC;                                                                                                    \
  }                                                                                                          \
  TDISTI_NV_ABI void tdistx_getmem_##scope(void *dst, const void *src, size_t nbytes, int pe) {              \
    tdisti_nv_get(tdisti_nv_ptr(src, pe), dst, src, nbytes, pe, IDX, SIZE, SCOPE);                           \
    SYNC;                                                                                                    \
  }                                                                                                          \
  TDISTI_NV_ABI void tdistx_putmem_nbi_##scope(void *dst, const void *src, size_t nbytes, int pe) {          \
    tdisti_nv_put(tdisti_nv_ptr(dst, pe), dst, src, nbytes, pe, IDX, SIZE, SCOPE);                           \
  }                                                                                                          \
  TDISTI_NV_ABI void tdistx_getmem_nbi_##scope(void *dst, const void *src, size_t nbytes, int pe) {          \
    tdisti_nv_get(tdisti_nv_ptr(src, pe), dst, src, nbytes, pe, IDX, SIZE, SCOPE);                           \
  }                                                                                                          \
  /* data from all participants, then (after the group sync) one release signal; through the engine,         \
   * NVSHMEM's putmem_signal of the group */                                                                 \
  TDISTI_NV_ABI void tdistx_putmem_signal_##scope(void *dst, const void *src, size_t nbytes,                 \
                                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) { \
    void *p = tdisti_nv_ptr(dst, pe);                                                                        \
    if (tdisti_nv_engine_put_signal(p, dst, src, nbytes, sig_addr, signal, sig_op, pe, SCOPE) == 0) {        \
      SYNC;                                                                                                  \
      return;                                                                                                \
    }                                                                                                        \
    tdisti_nv_put(p, dst, src, nbytes, pe, IDX, SIZE, SCOPE);                                                \
    SYNC;                                                                                                    \
    if (IDX == 0) {                                                                                          \
      tdisti_nv_fence_sc_sys();                                                                              \
      tdist_signal_op(sig_addr, signal, sig_op, pe);                                                         \
    }                                                                                                        \
    SYNC;                                                                                                    \
  }                                                                                                          \
  TDISTI_NV_ABI void tdistx_putmem_signal_nbi_##scope(                                                       \
      void *dst, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {  \
    tdistx_putmem_signal_##scope(dst, src, nbytes, sig_addr, signal, sig_op, pe);                            \
  }
TDISTI_NV_DEFINE_GROUP_RMA(warp, tdisti_nv_laneid(), 32u, tdisti_nv_syncwarp(), TDISTI_NV_SCOPE_WARP)
TDISTI_NV_DEFINE_GROUP_RMA(block, tdisti_nv_block_tid(), tdisti_nv_block_size(), tdisti_nv_syncthreads(),
                           TDISTI_NV_SCOPE_BLOCK)
#undef TDISTI_NV_DEFINE_GROUP_RMA

/* Block-cooperative slot wait: threads 0..n-1 (strided) poll the slots, then the CTA syncs. The
 * result is the same in every thread: 0, or the status that ended some thread's wait. */
template <class T>
TDISTI_NV_FN int32_t tdisti_nv_wait_slots_block(const T *slots, int32_t n, T v, uint64_t timeout,
                                                size_t stride = TDIST_SIGNAL_SLOT_BYTES) {
  const int32_t s = tdisti_nv_wait_slots<T>(slots, n, v, (int32_t)tdisti_nv_block_tid(),
                                            (int32_t)tdisti_nv_block_size(), timeout, stride);
  if (!tdisti_nv_syncthreads_or(s != 0)) return 0;
  if (s != 0) return s;
  tdist_device_state_t *st = tdisti_nv_state();
  const int32_t f = st ? tdisti_nv_ld_volatile_s32(&st->fault_code) : TDISTI_NV_ERR_INVALID_PARAM;
  return f != 0 ? f : TDISTI_NV_ERR_TIMEOUT;
}
#define TDISTI_NV_DEFINE_WAIT_BLOCK(name, T)                                        \
  TDISTI_NV_ABI int32_t tdistx_wait_##name##_block(T *slots, int32_t n, T value) {  \
    return tdisti_nv_wait_slots_block<T>(slots, n, value, TDISTI_NV_TIMEOUT_STATE); \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDISTI_NV_DEFINE_WAIT_BLOCK)
#undef TDISTI_NV_DEFINE_WAIT_BLOCK

/* ======================================================================================
 * Triton-facing twins: pointers as int64, program-collective (see the file comment).
 * ====================================================================================== */
#define TDISTI_NV_P(x) ((void *)(uintptr_t)(x))
#define TDISTI_NV_I(p) ((int64_t)(uintptr_t)(p))

TDISTI_NV_ABI int64_t tdist_ptr_i64(int64_t addr, int32_t pe) {
  return TDISTI_NV_I(tdisti_nv_ptr(TDISTI_NV_P(addr), pe));
}

#define TDISTI_NV_DEFINE_PG_I64(name, T)                                                \
  TDISTI_NV_ABI void tdist_##name##_p_i64(int64_t dst, T value, int32_t pe) {           \
    tdisti_nv_syncthreads();                                                            \
    if (tdisti_nv_block_tid() == 0) tdist_##name##_p((T *)TDISTI_NV_P(dst), value, pe); \
    tdisti_nv_syncthreads();                                                            \
  }                                                                                     \
  TDISTI_NV_ABI T tdist_##name##_g_i64(int64_t src, int32_t pe) {                       \
    return tdist_##name##_g((const T *)TDISTI_NV_P(src), pe);                           \
  }
TDIST_FOR_EACH_RMA_TYPE(TDISTI_NV_DEFINE_PG_I64)
#undef TDISTI_NV_DEFINE_PG_I64

TDISTI_NV_ABI void tdist_putmem_i64(int64_t dst, int64_t src, size_t nbytes, int32_t pe) {
  tdistx_putmem_block(TDISTI_NV_P(dst), TDISTI_NV_P(src), nbytes, pe);
}
TDISTI_NV_ABI void tdist_getmem_i64(int64_t dst, int64_t src, size_t nbytes, int32_t pe) {
  tdistx_getmem_block(TDISTI_NV_P(dst), TDISTI_NV_P(src), nbytes, pe);
}
TDISTI_NV_ABI void tdist_putmem_nbi_i64(int64_t dst, int64_t src, size_t nbytes, int32_t pe) {
  tdistx_putmem_nbi_block(TDISTI_NV_P(dst), TDISTI_NV_P(src), nbytes, pe);
}
TDISTI_NV_ABI void tdist_getmem_nbi_i64(int64_t dst, int64_t src, size_t nbytes, int32_t pe) {
  tdistx_getmem_nbi_block(TDISTI_NV_P(dst), TDISTI_NV_P(src), nbytes, pe);
}
TDISTI_NV_ABI void tdist_putmem_signal_i64(int64_t dst, int64_t src, size_t nbytes, int64_t sig_addr,
                                           uint64_t signal, int32_t sig_op, int32_t pe) {
  tdistx_putmem_signal_block(TDISTI_NV_P(dst), TDISTI_NV_P(src), nbytes, (uint64_t *)TDISTI_NV_P(sig_addr),
                             signal, sig_op, pe);
}
TDISTI_NV_ABI void tdist_putmem_signal_nbi_i64(int64_t dst, int64_t src, size_t nbytes, int64_t sig_addr,
                                               uint64_t signal, int32_t sig_op, int32_t pe) {
  tdist_putmem_signal_i64(dst, src, nbytes, sig_addr, signal, sig_op, pe);
}
/* The program's form of signal_op is the notify twin's body (bar.sync, then thread 0 releases):
 * the release after the join orders every earlier store of the program by cumulativity. */
TDISTI_NV_ABI void tdist_signal_op_i64(int64_t sig_addr, uint64_t signal, int32_t sig_op, int32_t pe) {
  tdisti_nv_syncthreads();
  if (tdisti_nv_block_tid() == 0) tdist_signal_op((uint64_t *)TDISTI_NV_P(sig_addr), signal, sig_op, pe);
}
TDISTI_NV_ABI uint64_t tdist_signal_fetch_i64(int64_t sig_addr) {
  return tdist_signal_fetch((const uint64_t *)TDISTI_NV_P(sig_addr));
}
/* The waits of the twins take the bound as an argument: timeout_ns < 0 is the state's
 * wait_timeout_ns, 0 is forever. A wait that ends without its condition stops the program
 * (tdisti_nv_stop): a Triton kernel cannot branch on a status. */
TDISTI_NV_FN uint64_t tdisti_nv_timeout_arg(int64_t timeout_ns) {
  return timeout_ns < 0 ? TDISTI_NV_TIMEOUT_STATE : (uint64_t)timeout_ns;
}
/* Thread form: every thread of the program that calls it polls (each its own acquire). */
TDISTI_NV_ABI uint64_t tdist_signal_wait_until_i64(int64_t sig_addr, int32_t cmp, uint64_t cmp_value,
                                                   int64_t timeout_ns) {
  uint64_t seen;
  const int32_t s = tdisti_nv_wait_one<uint64_t>((const uint64_t *)TDISTI_NV_P(sig_addr), cmp, cmp_value,
                                                 tdisti_nv_timeout_arg(timeout_ns), &seen);
  if (s != 0) tdisti_nv_stop("signal_wait_until", s);
  return seen;
}

/* Check of a polling loop that waits on something other than a slot (the LL all-reduce's packets):
 * call it when a poll failed, with t0 from tdistx_clock_i64 at the start of the wait. Returns 0 to
 * keep polling; otherwise the wait is over (the same bound and fault policy as every wait) and the
 * program stops. `addr`, `expected`, `seen` describe what was waited for, for the fault record. */
TDISTI_NV_ABI int64_t tdistx_clock_i64(void) { return (int64_t)tdisti_nv_globaltimer(); }
TDISTI_NV_ABI int32_t tdistx_wait_check_i64(int64_t t0, int64_t timeout_ns, int64_t addr, int32_t cmp,
                                            int64_t expected, int64_t seen) {
  uint64_t timeout = tdisti_nv_timeout_arg(timeout_ns);
  tdist_device_state_t *st = tdisti_nv_wait_begin(cmp, (uint64_t)expected, (uint64_t)seen, &timeout);
  const int32_t s = st == 0 ? TDISTI_NV_ERR_INVALID_PARAM
                            : tdisti_nv_wait_check(st, (uint64_t)t0, timeout, TDISTI_NV_P(addr), cmp,
                                                   (uint64_t)expected, (uint64_t)seen);
  if (s != 0) tdisti_nv_stop("wait", s);
  return s;
}

#define TDISTI_NV_DEFINE_SIGNAL_I64(name, T)                                                              \
  TDISTI_NV_ABI T tdist_##name##_wait_until_i64(int64_t ivar, int32_t cmp, T cmp_value,                   \
                                                int64_t timeout_ns) {                                     \
    T seen;                                                                                               \
    const int32_t s = tdisti_nv_wait_one<T>((const T *)TDISTI_NV_P(ivar), cmp, cmp_value,                 \
                                            tdisti_nv_timeout_arg(timeout_ns), &seen);                    \
    if (s != 0) tdisti_nv_stop(#name "_wait_until", s);                                                   \
    return seen;                                                                                          \
  }                                                                                                       \
  TDISTI_NV_ABI int32_t tdistx_wait_##name##_i64(int64_t slots, int32_t n, T value, int64_t timeout_ns) { \
    const int32_t s = tdisti_nv_wait_slots_block<T>((const T *)TDISTI_NV_P(slots), n, value,              \
                                                    tdisti_nv_timeout_arg(timeout_ns));                   \
    if (s != 0) tdisti_nv_stop("dl.wait", s);                                                             \
    return 0;                                                                                             \
  }                                                                                                       \
  /* bar.sync joins the program (its earlier stores are ordered before the release by                     \
   * cumulativity), then thread 0 alone releases. */                                                      \
  TDISTI_NV_ABI int32_t tdistx_notify_##name##_i64(int64_t slot, T value, int32_t pe, int32_t sig_op) {   \
    tdisti_nv_syncthreads();                                                                              \
    if (tdisti_nv_block_tid() == 0) tdistx_notify_##name((T *)TDISTI_NV_P(slot), value, pe, sig_op);      \
    return 0;                                                                                             \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDISTI_NV_DEFINE_SIGNAL_I64)
#undef TDISTI_NV_DEFINE_SIGNAL_I64

/* Block events between the programs of one launch on this GPU (the GPU form of the cann
 * extension's sync_block_set / sync_block_wait / sync_block_all; docs/COMPILE.md): a uint32 counter
 * per event in caller-provided memory, zeroed before the launch. set adds one (release); wait
 * waits for a nonzero count and consumes one (acquire); all is a barrier over every program of the
 * launch on an (arrivals, generation) pair, reusable within the launch; every program must be
 * co-resident. The waits are the one wait: bounded, noticing a recorded fault, stopping the program. */
TDISTI_NV_ABI int32_t tdistx_event_set_i64(int64_t slot) {
  tdisti_nv_syncthreads();
  if (tdisti_nv_block_tid() == 0)
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(TDISTI_NV_P(slot)) : "memory");
  return 0;
}
TDISTI_NV_ABI int32_t tdistx_event_wait_i64(int64_t slot, int64_t timeout_ns) {
  int32_t s = 0;
  if (tdisti_nv_block_tid() == 0) {
    uint32_t *c = (uint32_t *)TDISTI_NV_P(slot), seen;
    s = tdisti_nv_wait_one<uint32_t>(c, TDIST_CMP_NE, 0u, tdisti_nv_timeout_arg(timeout_ns), &seen);
    if (s == 0)
      asm volatile("red.relaxed.gpu.global.add.u32 [%0], -1;" ::"l"(c) : "memory");
    else
      tdisti_nv_stop("sync_block_wait", s);
  }
  tdisti_nv_syncthreads();
  return 0;
}
TDISTI_NV_ABI int32_t tdistx_event_all_i64(int64_t slot, int32_t last, int64_t timeout_ns) {
  tdisti_nv_syncthreads();
  if (tdisti_nv_block_tid() == 0) {
    uint32_t *arrive = (uint32_t *)TDISTI_NV_P(slot), *gen_p = arrive + 1, old, seen;
    const uint32_t gen = tdisti_nv_ld_acquire_u32(gen_p);
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(arrive) : "memory");
    if (old == (uint32_t)last) {
      asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(arrive) : "memory");
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(gen_p) : "memory");
    } else {
      const int32_t s =
          tdisti_nv_wait_one<uint32_t>(gen_p, TDIST_CMP_NE, gen, tdisti_nv_timeout_arg(timeout_ns), &seen);
      if (s != 0) tdisti_nv_stop("sync_block_all", s);
    }
  }
  tdisti_nv_syncthreads();
  return 0;
}

TDISTI_NV_ABI int64_t tdistx_consume_token_ptr_i64(int64_t value, int32_t token) {
  return tdistx_consume_token_int64(value, token);
}

/* Triton's extern_elementwise needs a result: the void collectives get int32-returning twins
 * (always 0). Program-collective like the other twins: every thread of the CTA calls them. */
TDISTI_NV_ABI int32_t tdist_barrier_all_i64(void) {
  tdist_barrier_all();
  return 0;
}
TDISTI_NV_ABI int32_t tdist_fence_i64(void) {
  tdist_fence();
  return 0;
}
TDISTI_NV_ABI int32_t tdist_quiet_i64(void) {
  tdist_quiet();
  return 0;
}

/* ======================================================================================
 * libshmem_device forms with NVSHMEM's scopes (appended; the twins above keep their meaning).
 *
 * Triton-distributed kernels call libshmem_device the way CUDA code calls NVSHMEM: the plain form
 * is one thread's call (typically under `if tid == 0:`), `_warp` is called by every lane of a warp,
 * `_block` by every thread of the program. So these twins contain no CTA barrier in the thread
 * form, only warp barriers in the warp form, and join the CTA in the block form.
 *
 * Bulk puts, each participant copying its share (tdisti_nv_copy):
 *   group forms join at entry (every participant's earlier stores to the source are visible to the
 *   others) and at exit (the whole source has been read and every store issued);
 *   blocking forms also fence (fence.sc.sys) in every participant before the exit join: on return
 *   every byte is performed at system scope, visible to any later access from any PE;
 *   `_nbi` forms skip that fence: they return as soon as the stores are issued, which may still be
 *   in flight to the peer. The source may be reused on return. Delivery is guaranteed once the
 *   issuing threads have called quiet (tdist_quiet_i64, fence.sc.sys), and is ordered before any
 *   later release (signal op, notify, putmem_signal, barrier) made by a thread that joined the
 *   issuers (a group form's exit join, __syncthreads) -- release cumulativity.
 * Gets complete on return in both forms (a load/store copy must load before it can store).
 * putmem_signal: data, group join, then one release signal by the group's first thread (after
 * fence.sc.sys); the blocking form joins again after the signal, `_nbi` lets the other participants
 * return without waiting for it.
 * ====================================================================================== */

/* Device-side teams. The runtime's teams (tdist_team_split_strided) live on the host (their stream
 * barrier, tdist_cuda_team_barrier_on_stream, runs tdisti_nv_pe_barrier over their members); on the
 * device the world team exists, and the node and shared teams are the world team: every PE of a
 * tdist job is mapped into every other PE (one host). The values are chosen so that they cannot be
 * taken for a host team handle (small non-negative indices). */
#define TDISTX_TEAM_SHARED 0x100001
#define TDISTX_TEAM_NODE 0x100002
TDISTI_NV_FN bool tdisti_nv_team_is_world(int32_t team) {
  return team == 0 || team == TDISTX_TEAM_SHARED || team == TDISTX_TEAM_NODE;
}

TDISTI_NV_FN uint32_t tdisti_nv_activemask(void) {
  uint32_t m;
  asm volatile("activemask.b32 %0;" : "=r"(m));
  return m;
}

/* The PE barrier of one participant per PE (the thread that represents the PE). `team` must be a
 * device-side team; the program stops otherwise, and when the barrier gives up. */
TDISTI_NV_FN void tdisti_nv_shmem_barrier_one(int32_t team, const char *what) {
  tdist_device_state_t *st = tdisti_nv_state_checked();
  if (!tdisti_nv_team_is_world(team)) {
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, TDISTI_NV_SF_S32(st, my_pe), 0, -1, (uint64_t)(int64_t)team,
                    0);
    tdisti_nv_stop(what, TDISTI_NV_ERR_INVALID_PARAM);
  }
  tdisti_nv_fence_sc_sys(); /* every store this thread made or observed is released before the epoch */
  const int32_t s = tdisti_nv_world_pe_barrier(st);
  if (s != 0) tdisti_nv_stop(what, s);
}

/* Thread form: one thread per PE calls it. A whole warp calling it (every lane a participant, so
 * 32 epochs per PE) is refused: the fault record's `expected` is the number of lanes. */
TDISTI_NV_ABI int32_t tdistx_shmem_barrier_thread_i64(int32_t team) {
  uint32_t lanes;
  asm("popc.b32 %0, %1;" : "=r"(lanes) : "r"(tdisti_nv_activemask()));
  if (lanes != 1) {
    tdist_device_state_t *st = tdisti_nv_state_checked();
    tdisti_nv_fault(TDISTI_NV_ERR_INVALID_PARAM, TDISTI_NV_SF_S32(st, my_pe), 0, -1, lanes, 0);
    tdisti_nv_stop(
        "libshmem_device barrier (thread form, called by several lanes: use the _warp or _block form)",
        TDISTI_NV_ERR_INVALID_PARAM);
  }
  tdisti_nv_shmem_barrier_one(team, "libshmem_device barrier");
  return 0;
}
TDISTI_NV_ABI int32_t tdistx_shmem_barrier_warp_i64(int32_t team) {
  tdisti_nv_syncwarp();
  if (tdisti_nv_laneid() == 0) tdisti_nv_shmem_barrier_one(team, "libshmem_device barrier_warp");
  tdisti_nv_syncwarp();
  return 0;
}
TDISTI_NV_ABI int32_t tdistx_shmem_barrier_block_i64(int32_t team) {
  tdisti_nv_syncthreads();
  if (tdisti_nv_block_tid() == 0) tdisti_nv_shmem_barrier_one(team, "libshmem_device barrier_block");
  tdisti_nv_syncthreads();
  return 0;
}

#define TDISTI_NV_DEFINE_SHMEM_RMA(scope, IDX, SIZE, SYNC, SCOPE)                                          \
  TDISTI_NV_ABI int32_t tdistx_shmem_putmem_##scope##_i64(int64_t dst, int64_t src, int64_t nbytes,        \
                                                          int32_t pe) {                                    \
    SYNC;                                                                                                  \
    void *p = tdisti_nv_ptr(TDISTI_NV_P(dst), pe);                                                         \
    tdisti_nv_put(p, TDISTI_NV_P(dst), TDISTI_NV_P(src), (size_t)nbytes, pe, IDX, SIZE, SCOPE);            \
    if (p) /* blocking: delivered on return, the stores by their fence, the engine's put by its quiet */   \
      tdisti_nv_fence_sc_sys();                                                                            \
    else                                                                                                   \
      tdisti_nv_engine_quiet();                                                                            \
    SYNC;                                                                                                  \
    return 0;                                                                                              \
  }                                                                                                        \
  TDISTI_NV_ABI int32_t tdistx_shmem_putmem_##scope##_nbi_i64(int64_t dst, int64_t src, int64_t nbytes,    \
                                                              int32_t pe) {                                \
    SYNC;                                                                                                  \
    void *p = tdisti_nv_ptr(TDISTI_NV_P(dst), pe);                                                         \
    tdisti_nv_put(p, TDISTI_NV_P(dst), TDISTI_NV_P(src), (size_t)nbytes, pe, IDX, SIZE, SCOPE);            \
    SYNC;                                                                                                  \
    return 0;                                                                                              \
  }                                                                                                        \
  TDISTI_NV_ABI int32_t tdistx_shmem_getmem_##scope##_i64(int64_t dst, int64_t src, int64_t nbytes,        \
                                                          int32_t pe) {                                    \
    SYNC;                                                                                                  \
    const void *p = tdisti_nv_ptr(TDISTI_NV_P(src), pe);                                                   \
    tdisti_nv_get(p, TDISTI_NV_P(dst), TDISTI_NV_P(src), (size_t)nbytes, pe, IDX, SIZE, SCOPE);            \
    SYNC;                                                                                                  \
    return 0;                                                                                              \
  }                                                                                                        \
  TDISTI_NV_ABI int32_t tdistx_shmem_putmem_signal_##scope##_nbi_i64(                                      \
      int64_t dst, int64_t src, int64_t nbytes, int64_t sig_addr, uint64_t signal, int32_t sig_op,         \
      int32_t pe) {                                                                                        \
    SYNC;                                                                                                  \
    void *p = tdisti_nv_ptr(TDISTI_NV_P(dst), pe);                                                         \
    if (tdisti_nv_engine_put_signal(p, TDISTI_NV_P(dst), TDISTI_NV_P(src), (size_t)nbytes,                 \
                                    (uint64_t *)TDISTI_NV_P(sig_addr), signal, sig_op, pe, SCOPE) == 0)    \
      return 0;                                                                                            \
    tdisti_nv_put(p, TDISTI_NV_P(dst), TDISTI_NV_P(src), (size_t)nbytes, pe, IDX, SIZE, SCOPE);            \
    SYNC;                                                                                                  \
    if (IDX == 0) {                                                                                        \
      tdisti_nv_fence_sc_sys();                                                                            \
      tdist_signal_op((uint64_t *)TDISTI_NV_P(sig_addr), signal, sig_op, pe);                              \
    }                                                                                                      \
    return 0;                                                                                              \
  }                                                                                                        \
  TDISTI_NV_ABI int32_t tdistx_shmem_putmem_signal_##scope##_i64(int64_t dst, int64_t src, int64_t nbytes, \
                                                                 int64_t sig_addr, uint64_t signal,        \
                                                                 int32_t sig_op, int32_t pe) {             \
    /* the non-blocking form, then the exit join that makes the call blocking */                           \
    tdistx_shmem_putmem_signal_##scope##_nbi_i64(dst, src, nbytes, sig_addr, signal, sig_op, pe);          \
    SYNC;                                                                                                  \
    return 0;                                                                                              \
  }
TDISTI_NV_DEFINE_SHMEM_RMA(thread, 0u, 1u, (void)0, TDISTI_NV_SCOPE_THREAD)
TDISTI_NV_DEFINE_SHMEM_RMA(warp, tdisti_nv_laneid(), 32u, tdisti_nv_syncwarp(), TDISTI_NV_SCOPE_WARP)
TDISTI_NV_DEFINE_SHMEM_RMA(block, tdisti_nv_block_tid(), tdisti_nv_block_size(), tdisti_nv_syncthreads(),
                           TDISTI_NV_SCOPE_BLOCK)
#undef TDISTI_NV_DEFINE_SHMEM_RMA

/* Single-element p (release) / g of the calling thread (libshmem_device's <type>_p / _g): the ABI's
 * thread forms, so a PE behind the engine is reached too. */
#define TDISTI_NV_DEFINE_SHMEM_PG(name, T)                                              \
  TDISTI_NV_ABI int32_t tdistx_shmem_##name##_p_i64(int64_t dst, T value, int32_t pe) { \
    tdist_##name##_p((T *)TDISTI_NV_P(dst), value, pe);                                 \
    return 0;                                                                           \
  }                                                                                     \
  TDISTI_NV_ABI T tdistx_shmem_##name##_g_i64(int64_t src, int32_t pe) {                \
    return tdist_##name##_g((const T *)TDISTI_NV_P(src), pe);                           \
  }
TDIST_FOR_EACH_RMA_TYPE(TDISTI_NV_DEFINE_SHMEM_PG)
#undef TDISTI_NV_DEFINE_SHMEM_PG

/* Thread form of signal_op: the calling thread's release update (no CTA barrier). */
TDISTI_NV_ABI int32_t tdistx_shmem_signal_op_i64(int64_t sig_addr, uint64_t signal, int32_t sig_op,
                                                 int32_t pe) {
  tdist_signal_op((uint64_t *)TDISTI_NV_P(sig_addr), signal, sig_op, pe);
  return 0;
}

/* dl.wait with an explicit slot stride (bytes): the block-cooperative wait of tdistx_wait_<T>_i64
 * over slots `stride_bytes` apart (Triton-distributed lays a kernel's slots out contiguously:
 * stride = the element size). */
#define TDISTI_NV_DEFINE_WAIT_STRIDED_I64(name, T)                                                         \
  TDISTI_NV_ABI int32_t tdistx_wait_##name##_strided_i64(int64_t slots, int32_t n, int64_t stride_bytes,   \
                                                         T value, int64_t timeout_ns) {                    \
    const int32_t s = tdisti_nv_wait_slots_block<T>(                                                       \
        (const T *)TDISTI_NV_P(slots), n, value, tdisti_nv_timeout_arg(timeout_ns), (size_t)stride_bytes); \
    if (s != 0) tdisti_nv_stop("dl.wait", s);                                                              \
    return 0;                                                                                              \
  }
TDIST_FOR_EACH_SIGNAL_TYPE(TDISTI_NV_DEFINE_WAIT_STRIDED_I64)
#undef TDISTI_NV_DEFINE_WAIT_STRIDED_I64

#undef TDISTI_NV_P
#undef TDISTI_NV_I

/* ======================================================================================
 * Host side (nvcc / clang CUDA with the runtime API): bind this module's state pointer.
 * ====================================================================================== */
#if !defined(TDIST_NV_BITCODE) && !defined(TDIST_NV_NO_RUNTIME_API) && \
    (defined(__NVCC__) || defined(__CUDA_RUNTIME_H__))
#include "tdist/NVIDIA/host.h"
/** Copy the device-state pointer of the initialised tdist into this module's
 *  `tdisti_device_state` (each .cu file is its own module without -rdc: call it once per file,
 *  after tdist_init, before the first launch that uses the API). Returns a tdist_status_t. */
static inline int tdist_cuda_bind_state(void) {
  void *p = tdist_cuda_device_state();
  if (p == 0) return -5; /* TDIST_ERR_NOT_INITED */
  if (cudaSetDevice(tdist_cuda_device()) != cudaSuccess) return -3;
  if (cudaMemcpyToSymbol(tdisti_device_state, &p, sizeof p) != cudaSuccess) return -3;
  tdist_device_fast_t f;
  int st = tdist_cuda_fast_state(&f, sizeof f);
  if (st != 0) return st;
  if (cudaMemcpyToSymbol(tdisti_fast, &f, sizeof f) != cudaSuccess) return -3;
  return 0;
}
#endif

#endif /* TDIST_NVIDIA_DEVICE_CUH */
