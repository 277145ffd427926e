/*
 * The aclshmem link-time symbols on CPU ranks: what a kernel compiled by triton-ascend + tdist
 * calls (docs/COMPILE.md sections 3 and 4). The ttadapter output declares each library call as a
 * `func.func private` with `llvm.emit_c_interface`, so MLIR's LLVM lowering calls
 * `_mlir_ciface_<symbol>`; libtdist defines those names (runtime/CPU/aclshmem.cpp) on top of the
 * device ABI (include/tdist/abi.h). Pointers are int64_t addresses. The typed families come from
 * the X-macros of device/Ascend/symbols.def.
 */
#ifndef TDIST_CPU_ACLSHMEM_H
#define TDIST_CPU_ACLSHMEM_H

#include <stdint.h>

#include "tdist/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

TDIST_EXPORT int32_t _mlir_ciface_aclshmem_my_pe(void);
TDIST_EXPORT int32_t _mlir_ciface_aclshmem_n_pes(void);

/* aclshmem_ptr_<T>: the address of `ptr` (symmetric, this PE) on `pe`, 0 when unreachable.
 * aclshmem_consume_token_<T>_ptr: identity on a scalar pointer (as its address). */
#define TDIST_ASCEND_PTR_TYPE(tname)                                               \
  TDIST_EXPORT int64_t _mlir_ciface_aclshmem_ptr_##tname(int64_t ptr, int32_t pe); \
  TDIST_EXPORT int64_t _mlir_ciface_aclshmem_consume_token_##tname##_ptr(int64_t value, int32_t token);
/* aclshmem_wait_<T>: acquire until each of `n` slots, 64 bytes apart from `slots`, == value. */
#define TDIST_ASCEND_WAIT_TYPE(tname) \
  TDIST_EXPORT int32_t _mlir_ciface_aclshmem_wait_##tname(int64_t slots, int32_t n, tname##_t value);
/* aclshmem_<T>_p on a 64-bit signal: release put of `value` to `dst` on `pe`. */
#define TDIST_ASCEND_P_TYPE(tname) \
  TDIST_EXPORT void _mlir_ciface_aclshmem_##tname##_p(int64_t dst, int64_t value, int32_t pe);
#include "../../device/Ascend/symbols.def"

/* i32 notify: SET=1 / ADD=2 on the int32 slot `sig_addr` of `pe`, release. */
TDIST_EXPORT void _mlir_ciface_aclshmemx_signal_op(int64_t sig_addr, int64_t signal, int32_t sig_op,
                                                   int32_t pe);

/* Acquire wait until *sig_addr <cmp> value (tdist_cmp_t, int64 compare); returns the value seen. */
TDIST_EXPORT int64_t _mlir_ciface_aclshmem_signal_wait_until(int64_t sig_addr, int32_t cmp, int64_t value);

/* consume_token on integers and an opaque pointer: identity. */
TDIST_EXPORT int32_t _mlir_ciface_aclshmem_consume_token_int32(int32_t value, int32_t token);
TDIST_EXPORT int64_t _mlir_ciface_aclshmem_consume_token_int64(int64_t value, int32_t token);
TDIST_EXPORT int64_t _mlir_ciface_aclshmem_consume_token_ptr(int64_t value, int32_t token);

/* Bulk RMA (put: dst symmetric on `pe`; get: src symmetric on `pe`). */
TDIST_EXPORT void _mlir_ciface_aclshmem_putmem(int64_t dst, int64_t src, int64_t nbytes, int32_t pe);
TDIST_EXPORT void _mlir_ciface_aclshmem_getmem(int64_t dst, int64_t src, int64_t nbytes, int32_t pe);
TDIST_EXPORT void _mlir_ciface_aclshmem_putmem_nbi(int64_t dst, int64_t src, int64_t nbytes, int32_t pe);
TDIST_EXPORT void _mlir_ciface_aclshmem_getmem_nbi(int64_t dst, int64_t src, int64_t nbytes, int32_t pe);
/* Put, then update the 64-bit signal at `sig_addr` on `pe` (SET=1 / ADD=2) with release. */
TDIST_EXPORT void _mlir_ciface_aclshmem_putmem_signal(int64_t dst, int64_t src, int64_t nbytes,
                                                      int64_t sig_addr, int64_t signal, int32_t sig_op,
                                                      int32_t pe);
TDIST_EXPORT void _mlir_ciface_aclshmem_putmem_signal_nbi(int64_t dst, int64_t src, int64_t nbytes,
                                                          int64_t sig_addr, int64_t signal, int32_t sig_op,
                                                          int32_t pe);

TDIST_EXPORT void _mlir_ciface_aclshmem_fence(void);
TDIST_EXPORT void _mlir_ciface_aclshmem_quiet(void);
/* Collective over every program of the launch on every PE (tdist_barrier_all). */
TDIST_EXPORT void _mlir_ciface_aclshmem_barrier_all(void);
TDIST_EXPORT void _mlir_ciface_aclshmemx_barrier_all_vec(void);

#ifdef __cplusplus
}
#endif

#endif
