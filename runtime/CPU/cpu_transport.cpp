// CPU backend heap: one memfd per PE, shared with every local PE and mapped by all of them.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/control.hpp"
#include "core/error.hpp"
#include "core/transport.hpp"

namespace tdist {

namespace {

constexpr size_t kHeapBaseAlign = 2u << 20;  // tdist_align accepts alignments up to this

// Maps `bytes` of `fd` at an address aligned to `align` (a power of two), so heap offsets aligned
// by the allocator are aligned addresses too (tdist_align); plain mmap only promises a page.
void *map_aligned(int fd, size_t bytes, size_t align) {
  void *r = ::mmap(nullptr, bytes + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return MAP_FAILED;
  uintptr_t lo = reinterpret_cast<uintptr_t>(r), a = (lo + align - 1) & ~uintptr_t(align - 1);
  void *p = ::mmap(reinterpret_cast<void *>(a), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    ::munmap(r, bytes + align);
    errno = e;
    return MAP_FAILED;
  }
  if (a > lo) ::munmap(r, a - lo);  // trim the reservation around the mapping
  if (lo + align > a) ::munmap(reinterpret_cast<void *>(a + bytes), lo + align - a);
  return p;
}

class CpuTransport final : public HeapTransport {
 public:
  explicit CpuTransport(const TransportOptions &o) : opts_(o) {}
  ~CpuTransport() override { unmap(); }
  const char *name() const override { return "cpu"; }

  void map(ControlPlane &cp, size_t bytes) override {
    TDIST_CHECK(cp.local_size() == cp.size(), TDIST_ERR_NOT_SUPPORTED,
                "the CPU backend needs every PE on one host (%d of %d PEs are local); across "
                "hosts use the ROCE engine of a GPU backend",
                cp.local_size(), cp.size());
    bytes_ = bytes;
    int fd = ::memfd_create("tdist-heap", MFD_CLOEXEC);
    TDIST_CHECK(fd >= 0, TDIST_ERR_SMEM, "memfd_create: %s", std::strerror(errno));
    if (::ftruncate(fd, off_t(bytes)) != 0) {
      int e = errno;
      ::close(fd);
      TDIST_THROW(TDIST_ERR_SMEM, "cannot size the %zu-byte heap: %s", bytes, std::strerror(e));
    }
    std::vector<int> fds;
    try {
      fds = exchange_fds_with_local_peers(cp, fd, "heap");
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    bases_.assign(cp.size(), nullptr);
    std::string err;
    for (int pe = 0; pe < cp.size(); ++pe) {
      if (fds[pe] < 0) continue;
      void *p = map_aligned(fds[pe], bytes, kHeapBaseAlign);
      ::close(fds[pe]);
      if (p == MAP_FAILED) {
        if (err.empty()) err = strfmt("mmap of PE %d's heap: %s", pe, std::strerror(errno));
        continue;
      }
      bases_[pe] = p;
    }
    local_ = bases_[cp.rank()];
    if (!err.empty()) {
      unmap();
      TDIST_THROW(TDIST_ERR_SMEM, "%s", err.c_str());
    }
  }
  void *local_base() const override { return local_; }
  const std::vector<void *> &peer_bases() const override { return bases_; }
  void zero(size_t off, size_t n) override { std::memset(static_cast<char *>(local_) + off, 0, n); }
  void publish(const tdist_device_state_t &) override {}  // device code reads the host copy
  void unmap() override {
    for (void *&p : bases_)
      if (p) {
        ::munmap(p, bytes_);
        p = nullptr;
      }
    local_ = nullptr;
  }

 private:
  TransportOptions opts_;
  size_t bytes_ = 0;
  void *local_ = nullptr;
  std::vector<void *> bases_;
};

}  // namespace

std::unique_ptr<HeapTransport> make_cpu_transport(const TransportOptions &opts) {
  return std::make_unique<CpuTransport>(opts);
}

}  // namespace tdist
