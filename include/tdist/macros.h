/* Qualifier macros shared by host, CPU-device and CUDA-device code. The only place they live. */
#ifndef TDIST_MACROS_H
#define TDIST_MACROS_H

#if defined(__CUDACC__) || defined(__CUDA__)
#define TDIST_HOST_DEVICE __host__ __device__
#define TDIST_DEVICE_FN __device__
#else
#define TDIST_HOST_DEVICE
#define TDIST_DEVICE_FN
#endif

/* Device-ABI declarations in abi.h. In CUDA device compilation the NVIDIA backend supplies its own
 * __device__ definitions under the same names (include/tdist/NVIDIA/device.cuh), so abi.h is a host
 * (CPU-backend) declaration there. */
#if defined(__GNUC__)
#define TDIST_EXPORT __attribute__((visibility("default")))
#else
#define TDIST_EXPORT
#endif
#define TDIST_DEVICE_API TDIST_EXPORT

#endif /* TDIST_MACROS_H */
