// The NVIDIA backend's own kernels, compiled by nvcc to a fatbin that embed.cmake turns into a C
// array linked into libtdist (loaded with cuModuleLoadData on first use, state patched like any
// registered module). extern "C" keeps the names plain for cuModuleGetFunction.
#define TDIST_NV_NO_RUNTIME_API 1
#include "tdist/NVIDIA/device.cuh"

// tdist_cuda_barrier_all_on_stream: one CTA, so it is the last to arrive at the grid barrier and
// runs the cross-PE pull barrier itself.
extern "C" __global__ void tdisti_nv_barrier_kernel(void) { tdist_barrier_all(); }

// tdist_cuda_team_barrier_on_stream: one CTA whose first thread runs the pull barrier of every
// device barrier (tdisti_nv_pe_barrier) over the team's members, world PEs start + i * stride, on
// the team's own epoch word (heap offset epoch_off: offset 0 of the team heap block). Work enqueued
// after it on any member's stream starts after every member's earlier work on its stream. On expiry
// or a lost PE the fault is recorded and the kernel stops the stream (prints the record, traps), so
// later work never runs unsynchronised.
extern "C" __global__ void tdisti_nv_team_barrier_kernel(uint64_t epoch_off, int start, int stride, int size,
                                                         int me) {
  if (threadIdx.x != 0) return;
  tdist_device_state_t *st = tdisti_nv_state_checked();
  tdisti_nv_fence_sc_sys(); /* the stream's earlier work is released before the epoch */
  const int32_t s = tdisti_nv_pe_barrier(st, epoch_off, start, stride, size, me);
  if (s != 0) tdisti_nv_stop("team_barrier_on_stream", s);
}

// tdist_cuda_signal_wait_until_on_stream: one thread waits (bounded by the PE's wait timeout, with
// the watchdog's abort), so later work on the stream starts only once the slot satisfies cmp. On
// expiry or abort the fault is recorded and the kernel traps, so the stream never goes on with data
// that did not arrive.
extern "C" __global__ void tdisti_nv_wait_kernel(uint64_t *sig, int cmp, uint64_t value) {
  if (threadIdx.x != 0) return;
  const uint64_t seen = tdist_signal_wait_until(sig, cmp, value);
  if (!tdisti_nv_cmp(seen, cmp, value)) {
    printf("tdist: signal_wait_until_on_stream gave up: slot %p, cmp %d, expected %llu, seen %llu\n", sig,
           cmp, (unsigned long long)value, (unsigned long long)seen);
    __trap();
  }
}
