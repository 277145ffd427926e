// The NVIDIA device library as one translation unit: include/tdist/NVIDIA/device.cuh with strong
// external definitions (TDIST_NV_ABI_LINKAGE empty), compiled by clang-19 to NVPTX bitcode
// (libtdist_device.bc) for Triton's extern_libs and the MLIR lowerings. See CMakeLists.txt.
#define TDIST_NV_BITCODE 1
#define TDIST_NV_ABI_LINKAGE
#include "tdist/NVIDIA/device.cuh"
