// Test-only stand-in for device/NVIDIA's libtdist_device.bc: just the Triton-facing symbols the
// front end calls, reading the device state as docs/CONTRACT.md section 3 says. CI compiles kernels
// against it (clang-19) when the real bitcode has not been built; it is never run.
#include <stdint.h>

#include "tdist/device_state.h"

#define DEV __attribute__((device))

extern "C" {
DEV tdist_device_state_t *tdisti_device_state;
DEV int tdist_my_pe(void) { return tdisti_device_state->my_pe; }
DEV int tdist_n_pes(void) { return tdisti_device_state->n_pes; }
DEV int64_t tdist_ptr_i64(int64_t addr, int pe) {
  tdist_device_state_t *s = tdisti_device_state;
  return (int64_t)s->p2p_heap_base[pe] + (addr - (int64_t)s->heap_base);
}
DEV int32_t tdist_barrier_all_i64(void) {
  __asm__ volatile("membar.sys;" ::: "memory");
  return 0;
}
}
