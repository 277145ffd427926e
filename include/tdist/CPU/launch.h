/*
 * CPU "kernel" launch: runs `fn(args)` as `grid` concurrent programs of this PE. Inside, device
 * code calls tdistx_program_id(0) / tdistx_num_programs(0) and the device ABI (tdist/abi.h).
 * All programs of a launch are co-resident (one thread each), so producer/consumer kernels that
 * wait on each other make progress, as on a GPU with a persistent grid.
 *
 * Returns TDIST_SUCCESS, or the sticky device fault of the launch (e.g. TDIST_ERR_TIMEOUT with
 * the PE, heap offset, expected and seen value in tdist_last_error_message()). A fault is cleared
 * when it has been reported.
 */
#ifndef TDIST_CPU_LAUNCH_H
#define TDIST_CPU_LAUNCH_H

#include "tdist/tdist.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*tdist_cpu_kernel_fn)(void *args);

#define TDIST_CPU_MAX_GRID 1024
TDIST_EXPORT int tdist_cpu_launch(int32_t grid, tdist_cpu_kernel_fn fn, void *args);

#ifdef __cplusplus
}
#endif

#endif
