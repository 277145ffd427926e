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

/*
 * Kernel entry pack of a compiled kernel (docs/COMPILE.md section 4): `args[i]` points at the
 * kernel's argument i in source order (a memref descriptor for a pointer argument, the value for
 * a scalar); `grid` is the launch grid (x, y, z).
 */
typedef struct tdist_kernel_pack_t {
  void **args;
  int32_t grid[3];
} tdist_kernel_pack_t;

/*
 * Launches a 3-D grid: validates `grid` (each dimension >= 1 and gx * gy * gz <=
 * TDIST_CPU_MAX_GRID; otherwise TDIST_ERR_INVALID_PARAM with a message naming the values), then
 * runs tdist_cpu_launch(gx * gy * gz, entry, &pack) with pack = { args, { gx, gy, gz } }. Returns
 * what tdist_cpu_launch returns. The pack lives on the caller's stack for the whole launch.
 *
 * Programs are numbered linearly; an entry recovers its grid coordinates from
 * pid = tdistx_program_id(0) and the pack's grid as
 *     x = pid % gx,  y = (pid / gx) % gy,  z = pid / (gx * gy)
 * (x fastest), so tdistx_num_programs(0) == gx * gy * gz.
 */
TDIST_EXPORT int tdist_cpu_launch_grid(const int32_t grid[3], tdist_cpu_kernel_fn entry, void **args);

/*
 * Block events among the programs of one launch: Ascend's intra-kernel sync_block_{set,wait,all}
 * (hivm.hir.sync_block_* lowers to these on CPU ranks). Event ids 0..15; the state belongs to the
 * launch and starts empty in every launch.
 *   set:  release event `event_id` once (stores before it are visible to the waiter it wakes);
 *   wait: acquire; returns when event `event_id` has been set once more than the waits of it that
 *         came before in this launch (each wait consumes one set). Bounded like every device wait:
 *         on timeout the launch fails with TDIST_ERR_TIMEOUT naming the event (sticky);
 *   all:  a reusable barrier over every program of the launch, one per event id.
 * Called outside a launch or with an id out of range: TDIST_ERR_INVALID_PARAM (sticky in a launch).
 */
TDIST_EXPORT void tdist_cpu_sync_block_set(int32_t event_id);
TDIST_EXPORT void tdist_cpu_sync_block_wait(int32_t event_id);
TDIST_EXPORT void tdist_cpu_sync_block_all(int32_t event_id);

#ifdef __cplusplus
}
#endif

#endif
