/*
 * tdist device ABI: the one set of C symbols every backend implements.
 *
 * Consumers: the Triton front end (through LLVM bitcode on NVIDIA), the MLIR lowerings
 * (convert-distributed-to-llvm emits calls to exactly these names), and C / C++ / CUDA C++ users.
 * Implementations: runtime/CPU (C++, the CPU backend; runs here), device/NVIDIA (CUDA header +
 * bitcode), device/Ascend (names only: the aclshmem template-library names, see docs/CONTRACT.md).
 *
 * Name tiers, as in OpenSHMEM/NVSHMEM:
 *   tdist_    standard SHMEM-style calls
 *   tdistx_   extensions (dl.* support: slot waits, consume_token, notify)
 *   tdisti_   internal, never called by users
 *
 * Memory ordering contract (seed 000, section 6):
 *   - every signal update (signal_op, putmem_signal, notify, typed p used as a flag) is a
 *     RELEASE: all earlier stores of the caller are visible to whoever observes the signal;
 *   - every wait (signal_wait_until, wait_*) is an ACQUIRE: loads after it see the data the
 *     signalling PE wrote before its release;
 *   - fence orders the caller's puts to each PE; quiet completes all outstanding nbi puts/gets;
 *   - consume_token is the identity at run time; it exists so the compiler cannot hoist a load
 *     above the wait that produced the token.
 *
 * Errors on the device side are sticky, like a CUDA launch fault: a wait that times out records
 * (pe, heap offset, expected, seen) in the PE's device state and returns; every later wait of the
 * same launch returns at once; the launch reports TDIST_ERR_TIMEOUT with that diagnostic.
 * A wait called from host code on CPU ranks (outside a launch) that ends without its condition
 * sets tdist_last_error() (TDIST_ERR_TIMEOUT naming the slot, TDIST_ERR_BOOTSTRAP naming a lost
 * peer) and takes the fault: after a timeout the next host wait waits again; a lost peer stays.
 * Before tdist_init and after tdist_finalize the waits and tdist_signal_fetch touch nothing and
 * set TDIST_ERR_NOT_INITED.
 */
#ifndef TDIST_ABI_H
#define TDIST_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "tdist/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- enumerations shared by every layer (C, C++, CUDA, MLIR attributes, Python) ---- */

/** Signal update operation (values are the seed's SignalOp enum). */
typedef enum tdist_signal_op_t { TDIST_SIGNAL_SET = 1, TDIST_SIGNAL_ADD = 2 } tdist_signal_op_t;

/** Wait predicates for signal_wait_until / wait_until. */
typedef enum tdist_cmp_t {
  TDIST_CMP_EQ = 0,
  TDIST_CMP_NE = 1,
  TDIST_CMP_GT = 2,
  TDIST_CMP_GE = 3,
  TDIST_CMP_LT = 4,
  TDIST_CMP_LE = 5
} tdist_cmp_t;

/** Transport engines (bitmask; values are aclshmem's data_op_engine_type). */
typedef enum tdist_engine_t {
  TDIST_ENGINE_MTE = 0x01,  /* core-issued load/store through the peer mapping */
  TDIST_ENGINE_SDMA = 0x02, /* host-initiated copy engine / helper-thread memcpy */
  TDIST_ENGINE_ROCE = 0x04, /* across nodes: delegated to an existing engine */
  TDIST_ENGINE_UDMA = 0x08  /* device-initiated bulk transfer, one call per peer */
} tdist_engine_t;

/** Signal slots are 64 bytes apart (one cache line): int32 -> 16 elements, int64 -> 8. */
#define TDIST_SIGNAL_SLOT_BYTES 64

/* One-token spellings so the X-macros can use T() and T{}. */
typedef signed char tdist_schar_t;
typedef long long tdist_longlong_t;

/* ---- typed families: one source of truth, expanded wherever a per-type symbol is needed ----
 * X(name, ctype) ; `name` is the symbol fragment (aclshmem spelling). */
#define TDIST_FOR_EACH_RMA_TYPE(X) \
  X(float, float)                  \
  X(double, double)                \
  X(char, char)                    \
  X(schar, tdist_schar_t)          \
  X(short, short)                  \
  X(int, int)                      \
  X(long, long)                    \
  X(longlong, tdist_longlong_t)    \
  X(int8, int8_t)                  \
  X(int16, int16_t)                \
  X(int32, int32_t)                \
  X(int64, int64_t)                \
  X(uint8, uint8_t)                \
  X(uint16, uint16_t)              \
  X(uint32, uint32_t)              \
  X(uint64, uint64_t)              \
  X(size, size_t)                  \
  X(ptrdiff, ptrdiff_t)

/* Types a signal / wait slot may have. */
#define TDIST_FOR_EACH_SIGNAL_TYPE(X) \
  X(int32, int32_t)                   \
  X(int64, int64_t)                   \
  X(uint64, uint64_t)

/* ---- queries ---- */
TDIST_DEVICE_API int tdist_my_pe(void);
TDIST_DEVICE_API int tdist_n_pes(void);

/** Address of `addr` (a symmetric address on this PE) on PE `pe`, or NULL when `pe` cannot be
 *  reached by load/store (e.g. another node). Non-heap `addr` or `pe` out of range: sticky error
 *  TDIST_ERR_INVALID_PARAM and NULL. */
TDIST_DEVICE_API void *tdist_ptr(const void *addr, int pe);

/* ---- typed single-element put/get: tdist_<T>_p / tdist_<T>_g ---- */
#define TDIST_DECLARE_PG(name, T)                                  \
  TDIST_DEVICE_API void tdist_##name##_p(T *dst, T value, int pe); \
  TDIST_DEVICE_API T tdist_##name##_g(const T *src, int pe);
TDIST_FOR_EACH_RMA_TYPE(TDIST_DECLARE_PG)
#undef TDIST_DECLARE_PG

/* ---- bulk RMA. dst/src of put: dst symmetric (remote), src any local memory; get: reverse. ---- */
TDIST_DEVICE_API void tdist_putmem(void *dst, const void *src, size_t nbytes, int pe);
TDIST_DEVICE_API void tdist_getmem(void *dst, const void *src, size_t nbytes, int pe);
TDIST_DEVICE_API void tdist_putmem_nbi(void *dst, const void *src, size_t nbytes, int pe);
TDIST_DEVICE_API void tdist_getmem_nbi(void *dst, const void *src, size_t nbytes, int pe);

/** put `nbytes`, then update the signal at `sig_addr` on `pe` with release ordering after the
 *  data (the receiver that observes the signal sees the data). */
TDIST_DEVICE_API void tdist_putmem_signal(void *dst, const void *src, size_t nbytes, uint64_t *sig_addr,
                                          uint64_t signal, int sig_op, int pe);
TDIST_DEVICE_API void tdist_putmem_signal_nbi(void *dst, const void *src, size_t nbytes, uint64_t *sig_addr,
                                              uint64_t signal, int sig_op, int pe);

/* ---- signals and waits ---- */
TDIST_DEVICE_API void tdist_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
TDIST_DEVICE_API uint64_t tdist_signal_fetch(const uint64_t *sig_addr);
/** Wait (acquire) until *sig_addr <cmp> cmp_value on this PE; returns the value seen. */
TDIST_DEVICE_API uint64_t tdist_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* Typed point-to-point waits: tdist_<T>_wait_until(ivar, cmp, value). */
#define TDIST_DECLARE_WAIT_UNTIL(name, T) \
  TDIST_DEVICE_API void tdist_##name##_wait_until(T *ivar, int cmp, T cmp_value);
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DECLARE_WAIT_UNTIL)
#undef TDIST_DECLARE_WAIT_UNTIL

/* dl.wait: wait (acquire) until each of `n` slots, TDIST_SIGNAL_SLOT_BYTES apart starting at
 * `slots`, equals `value`. Non-consuming. Returns a token (0) for consume_token.
 * dl.notify: update the slot `slot` (a symmetric address) on `pe` (release). */
#define TDIST_DECLARE_SLOT_OPS(name, T)                                      \
  TDIST_DEVICE_API int32_t tdistx_wait_##name(T *slots, int32_t n, T value); \
  TDIST_DEVICE_API void tdistx_notify_##name(T *slot, T value, int32_t pe, int32_t sig_op);
TDIST_FOR_EACH_SIGNAL_TYPE(TDIST_DECLARE_SLOT_OPS)
#undef TDIST_DECLARE_SLOT_OPS

/** consume_token: identity on the value; an IR anchor ordering later loads after a wait. */
TDIST_DEVICE_API void *tdistx_consume_token_ptr(void *value, int32_t token);
TDIST_DEVICE_API int64_t tdistx_consume_token_int64(int64_t value, int32_t token);

/* ---- ordering and collectives ---- */
TDIST_DEVICE_API void tdist_fence(void);
TDIST_DEVICE_API void tdist_quiet(void);
/** Centralised pull barrier over all PEs (seed 6.4). Device-side it is collective over every
 *  program of the current launch on every PE: each program calls it once per phase. */
TDIST_DEVICE_API void tdist_barrier_all(void);

/* ---- program identity inside a CPU launch (GPU code uses its own intrinsics) ---- */
TDIST_DEVICE_API int32_t tdistx_program_id(int32_t axis);
TDIST_DEVICE_API int32_t tdistx_num_programs(int32_t axis);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TDIST_ABI_H */
