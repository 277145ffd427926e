// The CUDA driver API, loaded at run time (dlopen libcuda.so.1 + dlsym) so that
// libtdist starts, and falls back to the CPU backend, on machines without an NVIDIA driver (CI).
#pragma once

#include <cuda.h>

#include <string>

namespace tdist::cu {

// X(name): every driver entry point tdist uses. `name` is the cuda.h spelling; cuda.h's
// versioning macros (cuMemAlloc -> cuMemAlloc_v2) apply to the member, its type and the symbol
// looked up alike.
#define TDIST_CU_FUNCTIONS(X)       \
  X(cuInit)                         \
  X(cuGetErrorName)                 \
  X(cuGetErrorString)               \
  X(cuDriverGetVersion)             \
  X(cuDeviceGetCount)               \
  X(cuDeviceGet)                    \
  X(cuDeviceGetAttribute)           \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent)                \
  X(cuCtxGetCurrent)                \
  X(cuCtxSynchronize)               \
  X(cuMemGetAllocationGranularity)  \
  X(cuMemCreate)                    \
  X(cuMemRelease)                   \
  X(cuMemExportToShareableHandle)   \
  X(cuMemImportFromShareableHandle) \
  X(cuMemAddressReserve)            \
  X(cuMemAddressFree)               \
  X(cuMemMap)                       \
  X(cuMemUnmap)                     \
  X(cuMemSetAccess)                 \
  X(cuMemAlloc)                     \
  X(cuMemFree)                      \
  X(cuMemcpyHtoD)                   \
  X(cuMemcpyDtoH)                   \
  X(cuMemcpyDtoDAsync)              \
  X(cuMemsetD8)                     \
  X(cuModuleLoadData)               \
  X(cuModuleUnload)                 \
  X(cuModuleGetGlobal)              \
  X(cuModuleGetFunction)            \
  X(cuLaunchKernel)                 \
  X(cuStreamSynchronize)            \
  X(cuStreamCreate)                 \
  X(cuStreamDestroy)                \
  X(cuMemcpyHtoDAsync)              \
  X(cuStreamWriteValue64)

// Entry points newer drivers have and tdist uses when present (nullptr otherwise):
// cuMemcpyBatchAsync (CUDA 12.8) carries CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE, which asks
// for a copy engine rather than an SM copy kernel (SDMA must not need the SMs that kernels waiting
// for its data occupy).
#define TDIST_CU_OPTIONAL_FUNCTIONS(X) X(cuMemcpyBatchAsync)

struct Driver {
#define TDIST_CU_MEMBER(name) decltype(&::name) name = nullptr;
  TDIST_CU_FUNCTIONS(TDIST_CU_MEMBER)
  TDIST_CU_OPTIONAL_FUNCTIONS(TDIST_CU_MEMBER)
#undef TDIST_CU_MEMBER
};

// The loaded driver (initialised with cuInit), or nullptr; `why` says what failed.
const Driver *driver(std::string *why = nullptr);

// "CUDA_ERROR_X (message)" for a CUresult.
std::string result_string(CUresult r);

}  // namespace tdist::cu

// Calls a driver function; on failure throws TDIST_ERR_SMEM naming the call and the CUDA error.
#define TDIST_CU(drv, call)                                                                                 \
  do {                                                                                                      \
    CUresult tdist_cu_r_ = (drv)->call;                                                                     \
    if (tdist_cu_r_ != CUDA_SUCCESS)                                                                        \
      TDIST_THROW(TDIST_ERR_SMEM, "%s failed: %s", #call, ::tdist::cu::result_string(tdist_cu_r_).c_str()); \
  } while (0)
