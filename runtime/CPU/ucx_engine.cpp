// The ROCE engine of the CPU backend on UCX (runtime/CPU/ucx_engine.hpp).
#include "CPU/ucx_engine.hpp"

#include "CPU/backend.hpp"
#include "bootstrap/control.hpp"
#include "core/error.hpp"

#ifdef TDIST_HAVE_UCX
#include <dlfcn.h>
#include <poll.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#endif

namespace tdist::cpu {

UcxEngine *g_ucx = nullptr;

#ifndef TDIST_HAVE_UCX

bool ucx_available() { return false; }
std::string ucx_unavailable_reason() { return "this libtdist was built without UCX's headers (libucx-dev)"; }

std::unique_ptr<UcxEngine> make_ucx_engine(ControlPlane &, void *, size_t, const std::vector<bool> &) {
  TDIST_THROW(TDIST_ERR_NOT_SUPPORTED, "%s, so it cannot reach PEs on other hosts",
              ucx_unavailable_reason().c_str());
}

#else

namespace {

// UCX is loaded when a job first needs it (a PE on another host, or TDIST_ROCE_PEERS=all), not
// linked: a job on one host never loads it, nor the memory hooks UCX installs into the process
// when it loads. Every entry point the engine calls is looked up once, by name, in libucp (and
// the libucs it brings); ucp_init is an inline wrapper of ucp_init_version in UCX's header.
// clang-format off (one entry point per line; the formatter does not settle on this macro)
#define TDIST_UCX_FUNCS(X)      \
  X(ucp_atomic_op_nbx)          \
  X(ucp_cleanup)                \
  X(ucp_config_read)            \
  X(ucp_config_release)         \
  X(ucp_ep_close_nbx)           \
  X(ucp_ep_create)              \
  X(ucp_ep_rkey_unpack)         \
  X(ucp_get_nbx)                \
  X(ucp_init_version)           \
  X(ucp_mem_map)                \
  X(ucp_mem_unmap)              \
  X(ucp_put_nbx)                \
  X(ucp_request_cancel)         \
  X(ucp_request_check_status)   \
  X(ucp_request_free)           \
  X(ucp_rkey_buffer_release)    \
  X(ucp_rkey_destroy)           \
  X(ucp_rkey_pack)              \
  X(ucp_worker_arm)             \
  X(ucp_worker_create)          \
  X(ucp_worker_destroy)         \
  X(ucp_worker_fence)           \
  X(ucp_worker_flush_nbx)       \
  X(ucp_worker_get_address)     \
  X(ucp_worker_get_efd)         \
  X(ucp_worker_progress)        \
  X(ucp_worker_query)           \
  X(ucp_worker_release_address) \
  X(ucs_status_string)
// clang-format on

struct Ucx {
#define TDIST_UCX_FIELD(f) decltype(&::f) f = nullptr;
  TDIST_UCX_FUNCS(TDIST_UCX_FIELD)
#undef TDIST_UCX_FIELD
  std::string error;  // why it could not be loaded; empty when every entry point was found
};

constexpr const char *kUcpLibrary = "libucp.so.0";

const Ucx &ucx() {
  static Ucx u;
  static std::once_flag once;
  std::call_once(once, [] {
    // RTLD_LOCAL: UCX's symbols stay out of the process's global namespace
    void *h = ::dlopen(kUcpLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = ::dlerror();
      u.error = strfmt("%s could not be loaded (%s; install UCX, e.g. Debian's libucx0)", kUcpLibrary,
                       e ? e : "no reason given");
      return;
    }
#define TDIST_UCX_LOOKUP(f)                                                                           \
  if (u.error.empty()) {                                                                              \
    u.f = reinterpret_cast<decltype(&::f)>(::dlsym(h, #f));                                           \
    if (!u.f) u.error = strfmt("%s has no entry point %s (UCX too old or not UCX)", kUcpLibrary, #f); \
  }
    TDIST_UCX_FUNCS(TDIST_UCX_LOOKUP)
#undef TDIST_UCX_LOOKUP
    // kept loaded for the life of the process: UCX does not support being unloaded
  });
  return u;
}

}  // namespace

bool ucx_available() { return ucx().error.empty(); }
std::string ucx_unavailable_reason() { return ucx().error; }

namespace {

void check(ucs_status_t st, const char *what) {
  TDIST_CHECK(st == UCS_OK, TDIST_ERR_SMEM, "UCX %s: %s", what, ucx().ucs_status_string(st));
}

// The blob every PE publishes: heap base, worker address, packed remote key.
std::string pack_blob(uint64_t base, const void *addr, size_t alen, const void *rkey, size_t rlen) {
  std::string b(sizeof base, '\0');
  std::memcpy(b.data(), &base, sizeof base);
  auto put_part = [&](const void *p, size_t n) {
    uint32_t n32 = uint32_t(n);
    b.append(reinterpret_cast<const char *>(&n32), sizeof n32);
    b.append(static_cast<const char *>(p), n);
  };
  put_part(addr, alen);
  put_part(rkey, rlen);
  return b;
}

struct Blob {
  uint64_t base = 0;
  std::string addr, rkey;
};

Blob unpack_blob(const std::string &b, int pe) {
  Blob r;
  size_t at = 0;
  auto take = [&](void *dst, size_t n) {
    TDIST_CHECK(at + n <= b.size(), TDIST_ERR_BOOTSTRAP, "PE %d's UCX descriptor is truncated", pe);
    std::memcpy(dst, b.data() + at, n);
    at += n;
  };
  auto part = [&](std::string *out) {
    uint32_t n = 0;
    take(&n, sizeof n);
    TDIST_CHECK(n <= b.size() - at, TDIST_ERR_BOOTSTRAP, "PE %d's UCX descriptor is truncated", pe);
    out->assign(b.data() + at, n);
    at += n;
  };
  take(&r.base, sizeof r.base);
  part(&r.addr);
  part(&r.rkey);
  TDIST_CHECK(at == b.size(), TDIST_ERR_BOOTSTRAP, "PE %d's UCX descriptor has trailing bytes", pe);
  return r;
}

// How long the progress thread keeps polling after its last activity before it sleeps.
constexpr uint64_t kSpinAfterActivityNs = 200000;
// Polls of an operation's wait before it yields the core between polls.
constexpr uint64_t kWaitSpins = 256;

class Engine final : public UcxEngine {
  // Every call on the worker (the programs' operations and waits, the progress thread's polls) holds
  // this mutex: with 4 ranks x (programs + a progress thread) on 2 cores, UCX's own spin lock had a
  // thread spin away its time slice while the holder was preempted (39 % of all cycles of the direct
  // all-to-all across hosts, benchmarks/NOTES.md); a waiter here sleeps instead. The callbacks run
  // inside ucp_worker_progress, so under it, and never take it.
  std::mutex worker_mu_;
  template <class F>
  auto locked(F &&f) {
    std::lock_guard<std::mutex> g(worker_mu_);
    return f();
  }

 public:
  Engine(ControlPlane &cp, void *heap, size_t bytes, const std::vector<bool> &remote)
      : me_(cp.rank()),
        remote_(remote),
        eps_(size_t(cp.size()), nullptr),
        rkeys_(size_t(cp.size()), nullptr),
        bases_(size_t(cp.size()), 0) {
    bool any = false;
    for (bool r : remote_) any |= r;
    std::string blob;
    if (any) {
      try {
        open(heap, bytes, &blob);
      } catch (...) {
        close();
        throw;
      }
    }
    // every PE takes part in the exchange, those without remote peers with an empty blob
    std::vector<std::string> all = cp.allgather(blob, false);
    if (!any) return;
    try {
      for (int pe = 0; pe < cp.size(); ++pe) {
        if (!remote_[size_t(pe)]) continue;
        TDIST_CHECK(!all[size_t(pe)].empty(), TDIST_ERR_NOT_SUPPORTED,
                    "PE %d reaches PE %d only through the ROCE engine, which PE %d did not open", me_, pe,
                    pe);
        Blob b = unpack_blob(all[size_t(pe)], pe);
        bases_[size_t(pe)] = b.base;
        ucp_ep_params_t ep{};
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep.address = reinterpret_cast<const ucp_address_t *>(b.addr.data());
        check(ucx().ucp_ep_create(worker_, &ep, &eps_[size_t(pe)]), "ucp_ep_create");
        check(ucx().ucp_ep_rkey_unpack(eps_[size_t(pe)], b.rkey.data(), &rkeys_[size_t(pe)]),
              "ucp_ep_rkey_unpack");
      }
    } catch (...) {
      close();
      throw;
    }
    progress_ = std::thread([this] { progress_loop(); });
  }

  ~Engine() override {
    quiet();
    close();
  }

  bool remote(int pe) const override { return pe >= 0 && size_t(pe) < remote_.size() && remote_[size_t(pe)]; }
  uint64_t base(int pe) const override { return bases_[size_t(pe)]; }

  bool put(int pe, uint64_t off, const void *src, size_t n) override {
    ucp_request_param_t p{};
    return wait(locked([&] {
                  return ucx().ucp_put_nbx(eps_[size_t(pe)], src, n, bases_[size_t(pe)] + off,
                                           rkeys_[size_t(pe)], &p);
                }),
                "put", pe, off);
  }
  bool put_nbi(int pe, uint64_t off, const void *src, size_t n) override {
    auto *op = new Posted{pe, off, "put"};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = &posted_done;
    p.user_data = op;
    return post(locked([&] {
                  return ucx().ucp_put_nbx(eps_[size_t(pe)], src, n, bases_[size_t(pe)] + off,
                                           rkeys_[size_t(pe)], &p);
                }),
                op);
  }
  bool get(int pe, uint64_t off, void *dst, size_t n) override {
    ucp_request_param_t p{};
    return wait(locked([&] {
                  return ucx().ucp_get_nbx(eps_[size_t(pe)], dst, n, bases_[size_t(pe)] + off,
                                           rkeys_[size_t(pe)], &p);
                }),
                "get", pe, off);
  }
  bool atomic_add(int pe, uint64_t off, uint64_t v, uint64_t *fetched) override {
    return amo(UCP_ATOMIC_OP_ADD, pe, off, v, fetched, fetched ? "fetching atomic add" : "atomic add");
  }
  // A set is a swap (UCP has no non-fetching set) whose old value nobody reads, so it is posted
  // instead of waited for: a wait would be a round trip through the target's progress thread per
  // signal. Its operand and reply live with the request; the callback frees them and records a
  // failure; quiet's flush completes it, as every posted operation.
  bool atomic_set(int pe, uint64_t off, uint64_t v) override {
    auto *op = new Posted{pe, off, "atomic set", v, 0};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER |
                     UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    p.reply_buffer = &op->reply;
    p.cb.send = &posted_done;
    p.user_data = op;
    return post(locked([&] {
                  return ucx().ucp_atomic_op_nbx(eps_[size_t(pe)], UCP_ATOMIC_OP_SWAP, &op->value, 1,
                                                 bases_[size_t(pe)] + off, rkeys_[size_t(pe)], &p);
                }),
                op);
  }
  void fence() override {
    if (worker_) locked([&] { return ucx().ucp_worker_fence(worker_); });
  }
  bool quiet() override {
    if (!worker_) return true;
    ucp_request_param_t p{};
    return wait(locked([&] { return ucx().ucp_worker_flush_nbx(worker_, &p); }), "quiet (flush)", -1, 0);
  }
  const char *transports() const override { return "ucp"; }

 private:
  void open(void *heap, size_t bytes, std::string *blob) {
    ucp_params_t pp{};
    pp.field_mask = UCP_PARAM_FIELD_FEATURES;
    pp.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
    // UCX's TCP transport moves an emulated put in segments of UCX_TCP_TX/RX_SEG_SIZE (8 KiB by
    // default), each handled by the target's progress thread; 1 MiB segments let a large put go
    // in few of them (benchmarks/NOTES.md, "Beyond one host"). The transport reads these from the
    // environment only (ucp_config_modify does not reach it), so they are set here before UCX reads
    // its configuration, unless the user set them. This runs at init, before the engine's threads.
    for (const char *name : {"UCX_TCP_TX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE"}) setenv(name, "1m", 0);
    ucp_config_t *cfg = nullptr;
    check(ucx().ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
    ucs_status_t st = ucx().ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &pp, cfg, &ctx_);
    ucx().ucp_config_release(cfg);
    check(st, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_MULTI;
    check(ucx().ucp_worker_create(ctx_, &wp, &worker_), "ucp_worker_create");
    ucp_worker_attr_t wa{};
    wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    check(ucx().ucp_worker_query(worker_, &wa), "ucp_worker_query");
    TDIST_CHECK(wa.thread_mode == UCS_THREAD_MODE_MULTI, TDIST_ERR_NOT_SUPPORTED,
                "this UCX does not give a multi-threaded worker (programs of a launch call it at once)");
    check(ucx().ucp_worker_get_efd(worker_, &efd_), "ucp_worker_get_efd");
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = heap;
    mp.length = bytes;
    check(ucx().ucp_mem_map(ctx_, &mp, &mem_), "ucp_mem_map of the heap");
    void *rkey = nullptr;
    size_t rlen = 0;
    check(ucx().ucp_rkey_pack(ctx_, mem_, &rkey, &rlen), "ucp_rkey_pack");
    ucp_address_t *addr = nullptr;
    size_t alen = 0;
    st = ucx().ucp_worker_get_address(worker_, &addr, &alen);
    if (st != UCS_OK) ucx().ucp_rkey_buffer_release(rkey);
    check(st, "ucp_worker_get_address");
    *blob = pack_blob(reinterpret_cast<uintptr_t>(heap), addr, alen, rkey, rlen);
    ucx().ucp_worker_release_address(worker_, addr);
    ucx().ucp_rkey_buffer_release(rkey);
  }

  void close() {
    if (progress_.joinable()) {
      stop_.store(true);
      progress_.join();
    }
    for (ucp_rkey_h &k : rkeys_)
      if (k) ucx().ucp_rkey_destroy(k), k = nullptr;
    for (size_t pe = 0; pe < eps_.size(); ++pe) {
      if (!eps_[pe]) continue;
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;  // peers may be gone at finalize; nothing is in flight after quiet
      ucs_status_ptr_t r = ucx().ucp_ep_close_nbx(eps_[pe], &p);
      if (UCS_PTR_IS_PTR(r)) {
        for (int i = 0; i < 100000 && ucx().ucp_request_check_status(r) == UCS_INPROGRESS; ++i)
          ucx().ucp_worker_progress(worker_);
        ucx().ucp_request_free(r);
      }
      eps_[pe] = nullptr;
    }
    if (mem_) ucx().ucp_mem_unmap(ctx_, mem_), mem_ = nullptr;
    if (worker_) ucx().ucp_worker_destroy(worker_), worker_ = nullptr;
    if (ctx_) ucx().ucp_cleanup(ctx_), ctx_ = nullptr;
  }

  // Serves the peers' operations on this heap; remote writes wake this PE's sleeping waiters.
  void progress_loop() {
    uint64_t last = now_ns();
    while (!stop_.load(std::memory_order_relaxed)) {
      if (locked([&] { return ucx().ucp_worker_progress(worker_); })) {
        wake_pe(me_);
        last = now_ns();
        continue;
      }
      // Right after activity more usually follows (the next put of a loop, a reply): keep polling
      // for a while, yielding the core, before sleeping on the event descriptor.
      if (now_ns() - last < kSpinAfterActivityNs) {
        sched_yield();
        continue;
      }
      ucs_status_t st = locked([&] { return ucx().ucp_worker_arm(worker_); });
      if (st == UCS_ERR_BUSY) continue;  // events came in meanwhile
      pollfd p{efd_, POLLIN, 0};
      ::poll(&p, 1, 1);
      wake_pe(me_);
    }
  }

  // A posted operation: what its callback needs (and a swap's operand and reply, which must live
  // as long as the request).
  struct Posted {
    int pe;
    uint64_t off;
    const char *what;
    uint64_t value = 0, reply = 0;
  };
  static void posted_done(void *request, ucs_status_t st, void *user) {
    auto *op = static_cast<Posted *>(user);
    if (st != UCS_OK)
      record_fault(
          TDIST_ERR_SMEM, op->pe, op->off, 0, 0, -1,
          strfmt("the ROCE engine's %s to PE %d failed: %s", op->what, op->pe, ucx().ucs_status_string(st)));
    ucx().ucp_request_free(request);
    delete op;
  }
  // After posting `op`: in flight (posted_done finishes it), done at once, or failed at once.
  bool post(ucs_status_ptr_t r, Posted *op) {
    if (UCS_PTR_IS_PTR(r)) return true;
    const int pe = op->pe;
    const uint64_t off = op->off;
    const char *what = op->what;
    delete op;
    if (r == nullptr) return true;
    record_fault(TDIST_ERR_SMEM, pe, off, 0, 0, -1,
                 strfmt("the ROCE engine's %s to PE %d failed: %s", what, pe,
                        ucx().ucs_status_string(UCS_PTR_STATUS(r))));
    return false;
  }

  bool amo(ucp_atomic_op_t op, int pe, uint64_t off, uint64_t v, uint64_t *fetched, const char *what) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    if (fetched) {
      p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      p.reply_buffer = fetched;
    }
    return wait(locked([&] {
                  return ucx().ucp_atomic_op_nbx(eps_[size_t(pe)], op, &v, 1, bases_[size_t(pe)] + off,
                                                 rkeys_[size_t(pe)], &p);
                }),
                what, pe, off);
  }

  // Completes `r`, bounded by the wait timeout; a failure or an expiry records a fault naming the
  // operation and the PE, and returns false.
  bool wait(ucs_status_ptr_t r, const char *what, int pe, uint64_t off) {
    if (r == nullptr) return true;
    ucs_status_t st;
    if (UCS_PTR_IS_ERR(r)) {
      st = UCS_PTR_STATUS(r);
    } else {
      const tdist_device_state_t *s = state();
      // the job's wait bound; at finalize (no state any more) a fixed one, so that a flush towards
      // a host that went away cannot hold the process
      const uint64_t limit = !s ? 10'000'000'000ull : s->wait_timeout_ns ? s->wait_timeout_ns : UINT64_MAX;
      const uint64_t start = now_ns();
      for (uint64_t i = 1;; ++i) {
        // Progress, and past the first polls hand the core over between them: the reply needs
        // the target's progress thread, which may be waiting for this very core.
        unsigned events = 0;
        {
          std::lock_guard<std::mutex> g(worker_mu_);
          st = ucx().ucp_request_check_status(r);
          if (st != UCS_INPROGRESS) break;
          events = ucx().ucp_worker_progress(worker_);
        }
        if (!events && i > kWaitSpins) sched_yield();
        if (i & 63) continue;
        // a fault recorded meanwhile (a lost peer, named by the watchdog) ends the wait at once
        const bool lost = s && fault_code(*s) != 0;
        if (lost || now_ns() - start > limit) {
          std::lock_guard<std::mutex> g(worker_mu_);
          ucx().ucp_request_cancel(worker_, r);
          for (int k = 0; k < 1000000 && ucx().ucp_request_check_status(r) == UCS_INPROGRESS; ++k)
            ucx().ucp_worker_progress(worker_);
          ucx().ucp_request_free(r);
          if (!lost)
            record_fault(TDIST_ERR_TIMEOUT, pe, off, 0, 0, -1,
                         strfmt("the ROCE engine's %s to PE %d did not complete within %.0f ms", what, pe,
                                double(limit) / 1e6));
          return false;
        }
      }
      locked([&] { return ucx().ucp_request_free(r); });
    }
    if (st == UCS_OK) return true;
    record_fault(TDIST_ERR_SMEM, pe, off, 0, 0, -1,
                 strfmt("the ROCE engine's %s to PE %d failed: %s", what, pe, ucx().ucs_status_string(st)));
    return false;
  }

  int me_;
  std::vector<bool> remote_;
  ucp_context_h ctx_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h mem_ = nullptr;
  int efd_ = -1;
  std::vector<ucp_ep_h> eps_;
  std::vector<ucp_rkey_h> rkeys_;
  std::vector<uint64_t> bases_;
  std::thread progress_;
  std::atomic<bool> stop_{false};
};

}  // namespace

std::unique_ptr<UcxEngine> make_ucx_engine(ControlPlane &cp, void *heap, size_t bytes,
                                           const std::vector<bool> &remote) {
  TDIST_CHECK(ucx_available(), TDIST_ERR_NOT_SUPPORTED, "the ROCE engine cannot start: %s",
              ucx_unavailable_reason().c_str());
  return std::make_unique<Engine>(cp, heap, bytes, remote);
}

#endif

}  // namespace tdist::cpu
