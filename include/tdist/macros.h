/* Export and declaration macros shared by host, CPU-device and CUDA-device code. The only place
 * they live; the CUDA device qualifiers are the NVIDIA backend's own (TDISTI_NV_DEV in
 * include/tdist/NVIDIA/device.cuh). */
#ifndef TDIST_MACROS_H
#define TDIST_MACROS_H

#if defined(__GNUC__)
#define TDIST_EXPORT __attribute__((visibility("default")))
#else
#define TDIST_EXPORT
#endif

/* Device-ABI declarations in abi.h. In CUDA device compilation the NVIDIA backend supplies its own
 * __device__ definitions under the same names (include/tdist/NVIDIA/device.cuh), so abi.h is a host
 * (CPU-backend) declaration there. */
#define TDIST_DEVICE_API TDIST_EXPORT

#endif /* TDIST_MACROS_H */
