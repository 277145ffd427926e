// The NVIDIA backend's own kernels, compiled by nvcc to a fatbin that embed.cmake turns into a C
// array linked into libtdist (loaded with cuModuleLoadData on first use, state patched like any
// registered module). extern "C" keeps the names plain for cuModuleGetFunction.
#define TDIST_NV_NO_RUNTIME_API 1
#include "tdist/NVIDIA/device.cuh"

// tdist_cuda_barrier_all_on_stream: one CTA, so it is the last to arrive at the grid barrier and
// runs the cross-PE pull barrier itself.
extern "C" __global__ void tdisti_nv_barrier_kernel(void) { tdist_barrier_all(); }
