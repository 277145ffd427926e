// Built when the NVIDIA backend is not: the CUDA transport is reported as unavailable.
#include "core/error.hpp"
#include "core/transport.hpp"

namespace tdist {
bool cuda_transport_available() { return false; }
std::unique_ptr<HeapTransport> make_cuda_transport(const TransportOptions &) {
  TDIST_THROW(TDIST_ERR_NOT_SUPPORTED, "this tdist was built without the NVIDIA backend");
}
}  // namespace tdist
