// The CPU backend's transport: the heap (one memfd per PE, shared with every local PE and mapped
// by all of them) and the hooks the runtime core calls (core/transport.hpp).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "CPU/backend.hpp"
#include "bootstrap/control.hpp"
#include "core/error.hpp"
#include "core/fault.hpp"
#include "core/transport.hpp"

namespace tdist {

namespace cpu {
const tdist_device_state_t *g_state = nullptr;
}  // namespace cpu

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
  // Device code reads the host copy itself.
  void publish(const tdist_device_state_t &s) override { cpu::g_state = &s; }
  void publish_fault(const tdist_device_state_t &s) override {
    if (!local_) return;
    const bool faulted = fault_code(s) != 0;
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(static_cast<char *>(local_) + TDIST_SYNC_FAULT_OFF))
        .store(faulted ? 1 : 0, std::memory_order_release);
    if (!faulted) return;
    // Wake the waiters asleep on any PE's memory at once (their sleep is also bounded by 1 ms).
    for (void *b : bases_)
      if (b)
        cpu::wake_words(reinterpret_cast<uint32_t *>(static_cast<char *>(b) + TDIST_SYNC_SLEEPERS_OFF),
                        reinterpret_cast<uint32_t *>(static_cast<char *>(b) + TDIST_SYNC_FUTEX_OFF));
  }
  void quiet() override { cpu::copy_engine_drain(); }
  void host_barrier(ControlPlane &) override {
    cpu::pull_barrier(TDIST_SYNC_HOST_BARRIER_OFF);
    std::string what;
    if (int code = take_fault(&what)) TDIST_THROW(code, "host barrier: %s", what.c_str());
  }
  void unmap() override {
    cpu::g_state = nullptr;  // before the heap it points into goes
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
