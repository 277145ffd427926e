// The CPU backend's transport: the heap (one memfd per PE, shared with every local PE and mapped
// by all of them) and the hooks the runtime core calls (core/transport.hpp).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "CPU/backend.hpp"
#include "CPU/ucx_engine.hpp"
#include "bootstrap/control.hpp"
#include "core/env.hpp"
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

// A number from the first line of `path` (a cgroup file); nullopt if absent or "max".
std::optional<uint64_t> read_u64(const std::string &path) {
  std::ifstream f(path);
  std::string v;
  if (!f || !(f >> v) || v.empty() || v[0] < '0' || v[0] > '9') return std::nullopt;
  return std::strtoull(v.c_str(), nullptr, 10);
}

// Memory this process may still fill: MemAvailable + SwapFree, within its memory cgroup's limit
// (v2: memory.max - memory.current; v1: memory.limit_in_bytes - memory.usage_in_bytes).
// `what` says where the bound came from.
uint64_t backable_bytes(std::string *what) {
  uint64_t avail = 0, swap = 0;
  std::ifstream mi("/proc/meminfo");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (mi >> key >> kb) {
    std::getline(mi, unit);
    if (key == "MemAvailable:") avail = kb << 10;
    if (key == "SwapFree:") swap = kb << 10;
  }
  uint64_t best = avail + swap;
  *what = "MemAvailable + SwapFree";
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string dir, limit_file, usage_file;
    if (ctrl.empty())
      dir = "/sys/fs/cgroup", limit_file = "memory.max", usage_file = "memory.current";
    else if (ctrl == "memory")
      dir = "/sys/fs/cgroup/memory", limit_file = "memory.limit_in_bytes",
      usage_file = "memory.usage_in_bytes";
    else
      continue;
    // Inside a cgroup namespace the path may not exist under the mount: the mount's root is ours.
    for (const std::string &d : {dir + path, dir}) {
      auto lim = read_u64(d + "/" + limit_file), use = read_u64(d + "/" + usage_file);
      if (!lim) continue;
      if (*lim < (uint64_t(1) << 60)) {
        uint64_t left = use && *use < *lim ? *lim - *use : 0;
        if (left < best) {
          best = left;
          *what = "the memory cgroup's limit";
        }
      }
      break;
    }
  }
  return best;
}

// TDIST_ROCE_PEERS (core/env.hpp), and "all" needs the ROCE engine here.
RocePeers roce_peers() {
  const RocePeers m = env_roce_peers();
  TDIST_CHECK(m != RocePeers::kAll || cpu::ucx_available(), TDIST_ERR_NOT_SUPPORTED,
              "TDIST_ROCE_PEERS=all needs the ROCE engine: %s", cpu::ucx_unavailable_reason().c_str());
  return m;
}

class CpuTransport final : public HeapTransport {
 public:
  explicit CpuTransport(const TransportOptions &o) : opts_(o) {}
  ~CpuTransport() override { unmap(); }
  const char *name() const override { return "cpu"; }

  // A memfd heap is shared memory: its pages come from RAM and swap (it is not bounded by
  // /dev/shm's size, nor refused by ftruncate or mmap), so a heap the host cannot back would be
  // accepted and fault (SIGBUS) when touched. Every local PE's heap counts.
  std::string check_capacity(size_t bytes, int local_pes) const override {
    std::string what;
    const uint64_t can = backable_bytes(&what);
    const double need = double(bytes) * double(local_pes);
    if (need <= double(can)) return {};
    return strfmt(
        "the symmetric heaps of the %d PE(s) on this host need %.2f GiB (%zu bytes each), "
        "more than it can back: %.2f GiB free (%s); lower local_mem_size",
        local_pes, need / double(1ull << 30), bytes, double(can) / double(1ull << 30), what.c_str());
  }

  bool reaches_other_hosts() const override {
    return cpu::ucx_available() && roce_peers() != RocePeers::kNone;
  }

  void map(ControlPlane &cp, size_t bytes) override {
    const RocePeers roce = roce_peers();
    TDIST_CHECK(cp.local_size() == cp.size() || (roce != RocePeers::kNone && cpu::ucx_available()),
                TDIST_ERR_NOT_SUPPORTED,
                "the CPU backend without its ROCE engine (%s) needs every PE on one host (%d of %d PEs "
                "are local)",
                roce == RocePeers::kNone ? "TDIST_ROCE_PEERS=none" : cpu::ucx_unavailable_reason().c_str(),
                cp.local_size(), cp.size());
    const bool all_remote = roce == RocePeers::kAll;
    // Job-wide: some PE is on another host, or every peer goes through the engine
    // (TDIST_ROCE_PEERS is the job's). A job on one host never opens, nor loads, UCX.
    const bool use_engine = cp.local_size() != cp.size() || all_remote;
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
    std::vector<bool> remote(size_t(cp.size()), false);
    std::string err;
    for (int pe = 0; pe < cp.size(); ++pe) {
      // A PE whose heap is not mapped here (another host, or every other PE when
      // TDIST_ROCE_PEERS=all) is reached through the ROCE engine.
      if (pe != cp.rank() && (fds[pe] < 0 || all_remote)) {
        if (fds[pe] >= 0) ::close(fds[pe]);
        remote[size_t(pe)] = true;
        continue;
      }
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
    if (use_engine) {  // collective: every PE takes part, with or without remote peers
      try {
        ucx_ = cpu::make_ucx_engine(cp, local_, bytes, remote);
      } catch (...) {
        unmap();
        throw;
      }
      rdma_.assign(size_t(cp.size()), nullptr);
      for (int pe = 0; pe < cp.size(); ++pe)
        if (remote[size_t(pe)]) rdma_[size_t(pe)] = reinterpret_cast<void *>(ucx_->base(pe));
      cpu::g_ucx = ucx_.get();
    }
  }
  std::vector<void *> rdma_bases() const override {
    return rdma_.empty() ? HeapTransport::rdma_bases() : rdma_;
  }
  void *local_base() const override { return local_; }
  const std::vector<void *> &peer_bases() const override { return bases_; }
  void zero(size_t off, size_t n) override { std::memset(static_cast<char *>(local_) + off, 0, n); }
  // Device code reads the host copy itself.
  void publish(const tdist_device_state_t &s) override { cpu::g_state = &s; }
  void publish_fault(const tdist_device_state_t &s) override {
    if (!local_) return;
    const bool faulted = fault_code(s) != 0;
    std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t *>(static_cast<char *>(local_) + TDIST_SYNC_FAULT_OFF))
        .store(faulted ? 1 : 0, std::memory_order_release);
    if (!faulted) return;
    // Wake the waiters asleep on any PE's memory at once (their sleep is also bounded by 1 ms).
    for (void *b : bases_)
      if (b)
        cpu::wake_words(reinterpret_cast<uint32_t *>(static_cast<char *>(b) + TDIST_SYNC_SLEEPERS_OFF),
                        reinterpret_cast<uint32_t *>(static_cast<char *>(b) + TDIST_SYNC_FUTEX_OFF));
  }
  void quiet() override {
    cpu::copy_engine_drain();
    if (ucx_) ucx_->quiet();
  }
  void host_barrier(ControlPlane &) override {
    cpu::pull_barrier(TDIST_SYNC_HOST_BARRIER_OFF);
    std::string what;
    if (int code = take_fault(&what)) TDIST_THROW(code, "host barrier: %s", what.c_str());
  }
  void unmap() override {
    cpu::g_state = nullptr;  // before the heap it points into goes
    cpu::g_ucx = nullptr;
    ucx_.reset();  // its registration of the heap goes before the heap
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
  std::unique_ptr<cpu::UcxEngine> ucx_;
  std::vector<void *> rdma_;
};

}  // namespace

std::unique_ptr<HeapTransport> make_cpu_transport(const TransportOptions &opts) {
  return std::make_unique<CpuTransport>(opts);
}

}  // namespace tdist
