#include "core/translate.hpp"

#include "core/context.hpp"
#include "core/error.hpp"

namespace tdist {

std::string peer_addr_message(const tdist_device_state_t &s, const PeerAddr &r, const void *addr, int pe,
                              size_t n) {
  switch (r.error) {
    case AddrError::kPeRange: return strfmt("tdist_ptr: PE %d out of range [0, %d)", pe, s.n_pes);
    case AddrError::kNotSymmetric:
      return strfmt("tdist_ptr: %p is not a symmetric address (heap is [%p, %p))", addr, s.heap_base,
                    static_cast<void *>(static_cast<char *>(s.heap_base) + s.heap_size));
    case AddrError::kPastEnd:
      return strfmt("%zu bytes at heap offset %llu run past the end of the symmetric heap (%llu bytes)", n,
                    (unsigned long long)r.offset, (unsigned long long)s.heap_size);
    case AddrError::kNone: break;
  }
  return {};
}

void *host_ptr(const void *addr, int pe) {
  void *p = nullptr;
  c_boundary("tdist_ptr", [&] {
    const tdist_device_state_t &s = require_context("tdist_ptr").state;
    const PeerAddr r = peer_addr(s, addr, pe);
    if (r.error != AddrError::kNone) {
      set_last_error(TDIST_ERR_INVALID_PARAM, peer_addr_message(s, r, addr, pe, 1));
      return;
    }
    p = r.ptr;
  });
  return p;
}

}  // namespace tdist
