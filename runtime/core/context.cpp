// C host API: initialisation, collective allocation, teams, host barrier, control plane.
#include "core/context.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <cstdlib>
#include <cstring>

#include "core/collective.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/fault.hpp"
#include "core/watchdog.hpp"

namespace tdist {

void HeapTransport::host_barrier(ControlPlane &cp) { cp.barrier(); }

namespace {

std::unique_ptr<Context> g_ctx;
std::mutex g_init_mu;
Context *g_abandoned = nullptr;  // kept reachable: a context the process exited without finalizing

// A process that exits without tdist_finalize leaves its context to the OS (heap, sockets, threads
// go with the process; peers see the rank lost). Tearing it down from static destructors instead
// would run after the CUDA driver's own exit handlers (libcuda is loaded after libtdist) and crash
// inside the driver (seen as SIGSEGV after a Python exception in a GPU rank).
void abandon_at_exit() {
  if (g_ctx) g_abandoned = g_ctx.release();
}

// RANK, WORLD_SIZE, MASTER_PORT, TDIST_STORE_PORT: required, decimal, within [lo, hi].
int env_int(const char *name, int lo, int hi) {
  const char *v = std::getenv(name);
  TDIST_CHECK(v && *v, TDIST_ERR_INVALID_PARAM, "environment variable %s is not set", name);
  return int(env_uint(name, 0, uint64_t(lo), uint64_t(hi)));
}

void validate_attr(const tdist_init_attr_t &a) {
  TDIST_CHECK(a.n_ranks >= 1, TDIST_ERR_INVALID_PARAM, "n_ranks must be >= 1 (got %d)", a.n_ranks);
  TDIST_CHECK(a.my_rank >= 0 && a.my_rank < a.n_ranks, TDIST_ERR_INVALID_PARAM,
              "my_rank %d out of range [0, %d)", a.my_rank, a.n_ranks);
  TDIST_CHECK(a.local_mem_size > 0, TDIST_ERR_INVALID_PARAM, "local_mem_size must be > 0");
  TDIST_CHECK(a.local_mem_size <= (uint64_t(1) << 40), TDIST_ERR_INVALID_PARAM,
              "local_mem_size %llu exceeds 1 TiB", (unsigned long long)a.local_mem_size);
  TDIST_CHECK(a.option_attr.wait_timeout_ms <= kMaxTimeoutMs, TDIST_ERR_INVALID_PARAM,
              "wait_timeout_ms %llu exceeds %llu (the largest bound in nanoseconds that fits 64 bits)",
              (unsigned long long)a.option_attr.wait_timeout_ms, (unsigned long long)kMaxTimeoutMs);
  TDIST_CHECK(memchr(a.ip_port, '\0', sizeof a.ip_port) != nullptr, TDIST_ERR_INVALID_PARAM,
              "ip_port is not NUL-terminated");
  uint32_t known = TDIST_ENGINE_MTE | TDIST_ENGINE_SDMA | TDIST_ENGINE_ROCE | TDIST_ENGINE_UDMA;
  uint32_t e = a.option_attr.data_op_engine_type;
  TDIST_CHECK(e != 0 && (e & ~known) == 0, TDIST_ERR_INVALID_PARAM,
              "data_op_engine_type 0x%x: must be a non-empty combination of MTE=0x1, SDMA=0x2, "
              "ROCE=0x4, UDMA=0x8",
              e);
  int b = a.option_attr.backend;
  TDIST_CHECK(b == TDIST_BACKEND_AUTO || b == TDIST_BACKEND_CPU || b == TDIST_BACKEND_CUDA,
              TDIST_ERR_INVALID_PARAM, "backend %d: must be AUTO=0, CPU=1 or CUDA=2", b);
}

// tdist_collective_reject: why this thread's next collective call is to fail on every PE.
thread_local std::string t_reject;

}  // namespace

std::string take_reject() {
  std::string r = std::move(t_reject);
  t_reject.clear();
  return r;
}

bool check_alloc_args(CollectiveRecord &rec, std::string &why, size_t size, size_t align) {
  if (!why.empty()) {
    rec.status = TDIST_ERR_INVALID_PARAM;
    rec.rejected = 1;
  } else if (size == 0) {
    rec.status = TDIST_ERR_INVALID_PARAM;
    why = "size must be > 0";
  } else if (align == 0 || (align & (align - 1)) != 0) {
    rec.status = TDIST_ERR_INVALID_PARAM;
    why = strfmt("alignment %zu is not a power of two", align);
  } else if (align > kHeapGranule) {
    rec.status = TDIST_ERR_INVALID_PARAM;
    why = strfmt("alignment %zu exceeds the largest supported, %zu", align, kHeapGranule);
  }
  return rec.status == TDIST_SUCCESS;
}

namespace {
const char *op_name(uint32_t op) {
  switch (op) {
    case kOpMalloc: return "malloc";
    case kOpCalloc: return "calloc";
    case kOpAlign: return "align";
    case kOpFree: return "free";
    case kOpSplit: return "team_split_strided";
    case kOpSplit2d: return "team_split_2d";
    case kOpTeamMalloc: return "team_malloc";
    case kOpTeamAlign: return "team_align";
    case kOpTeamFree: return "team_free";
  }
  return "?";
}

std::string team_arg(int32_t t) {
  return t == TDIST_TEAM_INVALID ? std::string("TDIST_TEAM_INVALID") : strfmt("%d", t);
}

std::string heap_arg(uint64_t bytes) {
  return bytes ? strfmt("%llu-byte heap", (unsigned long long)bytes) : std::string("no heap");
}
}  // namespace

std::string describe(const CollectiveRecord &r) {
  switch (r.op) {
    case kOpFree:
    case kOpTeamFree: return strfmt("%s(heap offset %lld)", op_name(r.op), (long long)r.offset);
    case kOpAlign:
    case kOpTeamAlign:
      return strfmt("%s(%llu, %llu)", op_name(r.op), (unsigned long long)r.align, (unsigned long long)r.size);
    case kOpSplit:
      return strfmt("team_split_strided(parent %s, start %d, stride %d, size %d, %s)",
                    team_arg(r.parent).c_str(), r.start, r.stride, r.count, heap_arg(r.heap[0]).c_str());
    case kOpSplit2d:
      return strfmt("team_split_2d(parent %s, xrange %d, x-teams: %s, y-teams: %s)",
                    team_arg(r.parent).c_str(), r.start, heap_arg(r.heap[0]).c_str(),
                    heap_arg(r.heap[1]).c_str());
  }
  return strfmt("%s(%llu)", op_name(r.op), (unsigned long long)r.size);
}

namespace {
bool same_call(const CollectiveRecord &a, const CollectiveRecord &b) {
  if (a.seq != b.seq || a.op != b.op) return false;
  if (a.rejected || b.rejected) return true;  // only the call counts: the verdict fails it
  switch (a.op) {
    case kOpFree:
    case kOpTeamFree:
      // A pointer that is no allocation has no offset to compare: its verdict fails the call.
      return a.offset == b.offset || a.status != TDIST_SUCCESS || b.status != TDIST_SUCCESS;
    case kOpSplit:
    case kOpSplit2d:
      // A PE outside the parent may pass TDIST_TEAM_INVALID; the others name the same parent.
      return (a.parent == b.parent || a.parent == TDIST_TEAM_INVALID || b.parent == TDIST_TEAM_INVALID) &&
             a.start == b.start && a.stride == b.stride && a.count == b.count && a.heap[0] == b.heap[0] &&
             a.heap[1] == b.heap[1];
  }
  return a.size == b.size && a.align == b.align;
}
}  // namespace

std::string pack_record(const CollectiveRecord &mine, const std::string &why) {
  std::string in(reinterpret_cast<const char *>(&mine), sizeof mine);
  in += why.substr(0, 200);
  in.resize(sizeof mine + 200, '\0');
  return in;
}

std::vector<CollectiveRecord> check_records(const std::vector<std::string> &all, const Participants &p) {
  std::vector<CollectiveRecord> recs(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    TDIST_CHECK(all[i].size() == sizeof(CollectiveRecord) + 200, TDIST_ERR_BOOTSTRAP,
                "%s sent a collective record of %zu bytes", p.who(i).c_str(), all[i].size());
    std::memcpy(&recs[i], all[i].data(), sizeof(CollectiveRecord));
  }
  const CollectiveRecord &r0 = recs[0];
  for (size_t i = 1; i < recs.size(); ++i) {
    const CollectiveRecord &r = recs[i];
    if (!same_call(r0, r))
      TDIST_THROW(TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch%s: %s called %s as %s #%llu, %s called %s as call #%llu (%s must make "
                  "the same calls in the same order)",
                  p.scope.c_str(), p.who(0).c_str(), describe(r0).c_str(), p.calls,
                  (unsigned long long)r0.seq, p.who(i).c_str(), describe(r).c_str(),
                  (unsigned long long)r.seq, p.everyone);
  }
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i].status != TDIST_SUCCESS) {
      std::string msg(all[i].data() + sizeof(CollectiveRecord), 200);
      msg.resize(std::strlen(msg.c_str()));
      TDIST_THROW(recs[i].status, "failed on %s: %s", p.who(i).c_str(), msg.c_str());
    }
  return recs;
}

std::string pack_ctrl(CtrlHeader mine, const std::string &why, const std::string &data) {
  std::snprintf(mine.why, sizeof mine.why, "%s", why.c_str());
  std::string in(reinterpret_cast<const char *>(&mine), sizeof mine);
  return in + data;
}

std::vector<CtrlHeader> check_ctrl(const std::vector<std::string> &all, const Participants &p,
                                   std::vector<std::string> *payloads) {
  std::vector<CtrlHeader> h(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    TDIST_CHECK(all[i].size() >= sizeof(CtrlHeader), TDIST_ERR_BOOTSTRAP, "%s sent a short control record",
                p.who(i).c_str());
    std::memcpy(&h[i], all[i].data(), sizeof(CtrlHeader));
    h[i].why[sizeof h[i].why - 1] = '\0';
    if (payloads) payloads->push_back(all[i].substr(sizeof(CtrlHeader)));
  }
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i].status != TDIST_SUCCESS)
      TDIST_THROW(h[i].status, "failed on %s: %s", p.who(i).c_str(), h[i].why);
  return h;
}

const Participants &world_pes() {
  static const Participants p = [] {
    Participants w;
    w.who = [](size_t pe) { return strfmt("PE %zu", pe); };
    return w;
  }();
  return p;
}

namespace {

// Gathers `mine` from every PE; throws the same error on every PE when the calls differ or any
// PE's local verdict is an error. `why` is this PE's local error message (empty when fine).
std::vector<CollectiveRecord> agree(Context &c, const CollectiveRecord &mine, const std::string &why) {
  return check_records(c.cp->allgather(pack_record(mine, why)), world_pes());
}

void *collective_alloc(uint32_t op, size_t size, size_t align, const char *api) {
  Context &c = require_context(api);
  std::lock_guard<std::mutex> g(c.mu);
  CollectiveRecord rec{c.collective_seq++, op, TDIST_SUCCESS, size, align, -1};
  std::string why = take_reject();
  std::optional<size_t> off;
  if (!check_alloc_args(rec, why, size, align)) {  // rec.status and why say what was wrong
  } else if (size > c.state.heap_size) {
    rec.status = TDIST_ERR_MALLOC_FAILED;
    why = strfmt("%zu bytes requested, the heap holds %llu", size,
                 (unsigned long long)(c.state.heap_size - TDIST_HEAP_RESERVED));
  } else if (!(off = c.alloc->plan(size, align))) {
    rec.status = TDIST_ERR_MALLOC_FAILED;
    why = strfmt("heap exhausted: %zu bytes requested, largest free block %zu bytes", size,
                 c.alloc->largest_free());
  } else {
    rec.offset = int64_t(*off);
    // calloc zeroes before the agreement round: when any PE returns, every PE has zeroed, so a
    // peer's first put cannot be wiped by a late memset. The range is free memory either way.
    if (op == kOpCalloc) c.transport->zero(*off, size);
  }
  auto recs = agree(c, rec, why);
  for (size_t pe = 0; pe < recs.size(); ++pe)
    TDIST_CHECK(recs[pe].offset == rec.offset, TDIST_ERR_INNER,
                "heaps diverged: PE %zu got offset %lld, PE %d got %lld", pe, (long long)recs[pe].offset,
                c.state.my_pe, (long long)rec.offset);
  c.alloc->commit(*off, size);
  return static_cast<char *>(c.state.heap_base) + *off;
}

void publish(Context &c) {
  c.state.p2p_heap_base = c.p2p.data();
  c.state.rdma_heap_base = c.rdma.data();
  c.state.sdma_heap_base = c.sdma.data();
  c.transport->publish(c.state);
}

void do_init(const tdist_init_attr_t &attr, const std::string &secret = {}) {
  std::lock_guard<std::mutex> g(g_init_mu);
  TDIST_CHECK(!g_ctx, TDIST_ERR_INVALID_VALUE,
              "tdist is already initialised in this process (call tdist_finalize first)");
  check_environment();
  validate_attr(attr);
  auto c = std::make_unique<Context>();
  c->attr = attr;
  const auto &o = attr.option_attr;
  int backend = o.backend;
  if (backend == TDIST_BACKEND_AUTO)
    backend = cuda_transport_available() ? TDIST_BACKEND_CUDA : TDIST_BACKEND_CPU;
  c->cpu_backend = backend == TDIST_BACKEND_CPU;
  // Refused before any network wait, like every other bad attribute.
  TDIST_CHECK(!(c->cpu_backend && (o.data_op_engine_type & TDIST_ENGINE_ROCE)), TDIST_ERR_NOT_SUPPORTED,
              "engine ROCE is not available on the CPU backend (it needs an RDMA engine; use "
              "MTE, SDMA or UDMA)");

  BootstrapConfig bc;
  bc.rank = attr.my_rank;
  bc.n_ranks = attr.n_ranks;
  bc.address = attr.ip_port;
  bc.secret = secret;
  bc.connect_timeout_s = o.shm_init_timeout_s ? o.shm_init_timeout_s : 120;
  bc.op_timeout_s = o.control_timeout_s ? o.control_timeout_s : 120;
  c->cp = std::make_unique<ControlPlane>(bc);

  // This PE's verdict on what it was asked for (the backend is available, this host can back the
  // heaps), then agreement: every PE compares every PE's request with PE 0's, so every PE
  // reports the same mismatch or failure, and leaves the store cleanly (FINALIZE) instead of
  // closing on peers that are still reading ("rank k lost").
  size_t total = TDIST_HEAP_RESERVED + attr.local_mem_size;
  total = (total + kHeapGranule - 1) / kHeapGranule * kHeapGranule;
  struct Agreed {
    uint64_t heap;
    uint32_t engines;
    int32_t backend;
    int32_t status;
    char why[236];
  } mine{attr.local_mem_size, o.data_op_engine_type, backend, TDIST_SUCCESS, {}};
  auto refuse = [&](int code, const std::string &why) {
    mine.status = code;
    std::snprintf(mine.why, sizeof mine.why, "%s", why.c_str());
  };
  try {
    TransportOptions to;
    to.engine_mask = o.data_op_engine_type;
    to.device_id = o.device_id;
    c->transport = c->cpu_backend ? make_cpu_transport(to) : make_cuda_transport(to);
    std::string why = c->transport->check_capacity(total, c->cp->local_size());
    if (!why.empty()) refuse(TDIST_ERR_SMEM, why);
  } catch (const Error &e) {
    refuse(e.code(), e.what());
  }
  auto all = c->cp->allgather(std::string(reinterpret_cast<char *>(&mine), sizeof mine));
  std::vector<Agreed> req(all.size());
  for (size_t pe = 0; pe < all.size(); ++pe) std::memcpy(&req[pe], all[pe].data(), sizeof(Agreed));
  int code = TDIST_SUCCESS;
  std::string verdict;
  for (size_t pe = 1; pe < req.size() && !code; ++pe)
    if (req[pe].heap != req[0].heap || req[pe].engines != req[0].engines ||
        req[pe].backend != req[0].backend) {
      code = TDIST_ERR_COLLECTIVE_MISMATCH;
      verdict = strfmt(
          "init: collective mismatch: PE 0 asked for a %llu-byte heap (engines 0x%x, backend %d), "
          "PE %zu for a %llu-byte heap (engines 0x%x, backend %d); every PE must pass the same "
          "local_mem_size, data_op_engine_type and backend",
          (unsigned long long)req[0].heap, req[0].engines, req[0].backend, pe,
          (unsigned long long)req[pe].heap, req[pe].engines, req[pe].backend);
    }
  for (size_t pe = 0; pe < req.size() && !code; ++pe)
    if (req[pe].status != TDIST_SUCCESS) {
      code = req[pe].status;
      req[pe].why[sizeof req[pe].why - 1] = '\0';
      verdict = strfmt("init failed on PE %zu: %s", pe, req[pe].why);
    }
  // Before any heap exists: a peer on another host would get no heap base (every access to it
  // would go nowhere), so such a job stops here. Every PE sees the same hosts and backend, so every
  // PE reaches the same verdict.
  if (!code && c->cp->n_hosts() > 1 && !c->transport->reaches_other_hosts()) {
    code = TDIST_ERR_NOT_SUPPORTED;
    verdict = strfmt(
        "init: the job's %d ranks span %d hosts (%s), and the %s backend here reaches only the PEs of "
        "its own host (load/store over shared memory): run every rank on one host, or use the CPU "
        "backend with its ROCE engine (a build with UCX, TDIST_ROCE_PEERS not 'none')",
        c->cp->size(), c->cp->n_hosts(), c->cp->hosts_summary().c_str(), c->transport->name());
  }
  if (code) {
    try {
      c->cp->finalize();  // an agreed failure: nobody is lost
    } catch (const std::exception &) {
    }
    TDIST_THROW(code, "%s", verdict.c_str());
  }

  c->transport->map(*c->cp, total);
  c->transport->zero(0, TDIST_HEAP_RESERVED);

  int n = c->cp->size();
  c->p2p = c->transport->peer_bases();
  c->rdma = c->transport->rdma_bases();
  c->sdma = c->p2p;  // the copy engine addresses peers through the same mappings
  auto &s = c->state;
  s.magic = TDIST_DEVICE_STATE_MAGIC;
  s.version = TDIST_DEVICE_STATE_VERSION;
  s.my_pe = c->cp->rank();
  s.n_pes = n;
  s.heap_size = total;
  s.heap_base = c->transport->local_base();
  s.engine_mask = o.data_op_engine_type;
  s.debug = env_flag("TDIST_DEBUG", false);
  s.wait_timeout_ns = o.wait_timeout_ms * 1000000ull;
  // When every local PE has a core, spinning is cheapest; when PEs outnumber cores, the PE we
  // wait for may need our core: spin briefly, then yield.
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  s.spin_before_backoff_ns = unsigned(c->cp->local_size()) <= hw ? 50000 : 1000;
  c->alloc = std::make_unique<HeapAllocator>(TDIST_HEAP_RESERVED, total);
  Team world;
  world.valid = true;
  world.size = n;
  world.my_pe = s.my_pe;
  c->teams.push_back(std::move(world));
  publish(*c);
  c->cp->barrier();  // everyone mapped everything before anyone writes to a peer
  bind_fault_record(&c->state, c->transport.get());
  try {
    start_watchdog(*c->cp);  // from here a lost peer aborts every wait of this PE
  } catch (...) {
    unbind_fault_record();
    throw;
  }
  g_ctx = std::move(c);
  // registered after the transport loaded its driver, so it runs before the driver's exit handlers
  static std::once_flag exit_hook;
  std::call_once(exit_hook, [] { std::atexit(abandon_at_exit); });
}

}  // namespace

Context *context() { return g_ctx.get(); }

Context &require_context(const char *api) {
  Context *c = g_ctx.get();
  TDIST_CHECK(c, TDIST_ERR_NOT_INITED, "%s called before tdist_init or after tdist_finalize", api);
  return *c;
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace tdist

using namespace tdist;

extern "C" {

int tdist_init_attr_default(tdist_init_attr_t *attr) {
  return c_boundary("tdist_init_attr_default", [&] {
    TDIST_CHECK(attr, TDIST_ERR_INVALID_PARAM, "attr is NULL");
    std::memset(attr, 0, sizeof *attr);
    attr->my_rank = -1;
    attr->n_ranks = 0;
    attr->local_mem_size = 256ull << 20;
    attr->option_attr.data_op_engine_type = TDIST_ENGINE_MTE;
    attr->option_attr.backend = TDIST_BACKEND_AUTO;
    attr->option_attr.device_id = -1;
    attr->option_attr.shm_init_timeout_s = 120;
    attr->option_attr.control_timeout_s = 120;
    // Documented default source: TDIST_WAIT_TIMEOUT_MS (tdist-run sets it); explicit values win.
    // Without either, waits give up after TDIST_DEFAULT_WAIT_TIMEOUT_MS: a lost signal ends as a
    // timeout that names the slot, never as a hang. 0 waits forever. A malformed value leaves the
    // default here and fails this call and every tdist_init (check_environment).
    attr->option_attr.wait_timeout_ms = TDIST_DEFAULT_WAIT_TIMEOUT_MS;
    attr->option_attr.wait_timeout_ms = env_wait_timeout_ms();
  });
}

int tdist_init(const tdist_init_attr_t *attr) {
  return c_boundary("tdist_init", [&] {
    TDIST_CHECK(attr, TDIST_ERR_INVALID_PARAM, "attr is NULL");
    do_init(*attr);
  });
}

int tdist_get_uniqueid(tdist_uniqueid_t *uid) {
  return c_boundary("tdist_get_uniqueid", [&] {
    TDIST_CHECK(uid, TDIST_ERR_INVALID_PARAM, "uid is NULL");
    const char *host = std::getenv("TDIST_UID_HOST");
    std::string h = host && *host ? host : "127.0.0.1";
    // Ask the kernel for a free port.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    TDIST_CHECK(fd >= 0, TDIST_ERR_BOOTSTRAP, "socket: %s", std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    bool ok = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
              ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
    ::close(fd);
    TDIST_CHECK(ok, TDIST_ERR_BOOTSTRAP, "cannot find a free port: %s", std::strerror(errno));
    std::string url = h.find(':') != std::string::npos
                          ? strfmt("tcp6://[%s]:%d", h.c_str(), ntohs(a.sin_port))
                          : strfmt("tcp://%s:%d", h.c_str(), ntohs(a.sin_port));
    // The id also carries a fresh store secret: whoever holds the id can join, nobody else.
    std::random_device rd;
    std::string secret;
    for (int i = 0; i < 4; ++i) secret += strfmt("%08x", unsigned(rd()));
    std::memset(uid->bytes, 0, sizeof uid->bytes);
    std::string blob = "tdist-uid-v1 " + url + " " + secret;
    TDIST_CHECK(blob.size() < sizeof uid->bytes, TDIST_ERR_INVALID_PARAM, "host name too long");
    std::memcpy(uid->bytes, blob.data(), blob.size());
  });
}

int tdist_init_with_uniqueid(const tdist_uniqueid_t *uid, int rank, int n_ranks,
                             const tdist_init_attr_t *attr) {
  return c_boundary("tdist_init_with_uniqueid", [&] {
    TDIST_CHECK(uid, TDIST_ERR_INVALID_PARAM, "uid is NULL");
    TDIST_CHECK(
        memchr(uid->bytes, '\0', sizeof uid->bytes) && std::strncmp(uid->bytes, "tdist-uid-v1 ", 13) == 0,
        TDIST_ERR_INVALID_PARAM, "not a tdist unique id (made by tdist_get_uniqueid)");
    tdist_init_attr_t a;
    if (attr)
      a = *attr;
    else
      tdist_init_attr_default(&a);
    a.my_rank = rank;
    a.n_ranks = n_ranks;
    std::string rest = uid->bytes + 13, secret;
    if (auto sp = rest.find(' '); sp != std::string::npos) {  // "<url> <secret>"
      secret = rest.substr(sp + 1);
      rest.resize(sp);
    }
    TDIST_CHECK(rest.size() < sizeof a.ip_port, TDIST_ERR_INVALID_PARAM, "unique id: address too long");
    std::snprintf(a.ip_port, sizeof a.ip_port, "%s", rest.c_str());
    do_init(a, secret);
  });
}

int tdist_init_from_env(const tdist_init_attr_t *attr) {
  return c_boundary("tdist_init_from_env", [&] {
    tdist_init_attr_t a;
    if (attr)
      a = *attr;
    else
      tdist_init_attr_default(&a);
    check_environment();  // a bad TDIST_* value is named before RANK / WORLD_SIZE
    a.n_ranks = env_int("WORLD_SIZE", 1, 1 << 20);
    a.my_rank = env_int("RANK", 0, a.n_ranks - 1);
    const char *addr = std::getenv("MASTER_ADDR");
    TDIST_CHECK(addr && *addr, TDIST_ERR_INVALID_PARAM, "environment variable MASTER_ADDR is not set");
    int port;
    const char *sp = std::getenv("TDIST_STORE_PORT");
    if (sp && *sp)
      port = env_int("TDIST_STORE_PORT", 1, 65535);
    else
      port = env_int("MASTER_PORT", 1, 65534) + 1;
    std::string host = addr;
    if (host.find(':') != std::string::npos)
      std::snprintf(a.ip_port, sizeof a.ip_port, "tcp6://[%s]:%d", host.c_str(), port);
    else
      std::snprintf(a.ip_port, sizeof a.ip_port, "tcp://%s:%d", host.c_str(), port);
    do_init(a);
  });
}

int tdist_initialized(void) { return g_ctx ? 1 : 0; }

int tdist_finalize(void) {
  return c_boundary("tdist_finalize", [&] {
    std::lock_guard<std::mutex> g(g_init_mu);
    TDIST_CHECK(g_ctx, TDIST_ERR_NOT_INITED, "tdist_finalize called before tdist_init (or twice)");
    std::unique_ptr<Context> c = std::move(g_ctx);
    t_reject.clear();
    c->transport->quiet();
    std::string err;
    try {
      c->cp->barrier();  // nobody unmaps while a peer may still touch its heap
    } catch (const std::exception &e) {
      err = e.what();
    }
    stop_watchdog();  // before the state it writes and the store it watches go away
    unbind_fault_record();
    c->transport->unmap();
    try {
      c->cp->finalize();
    } catch (const std::exception &e) {
      if (err.empty()) err = e.what();
    }
    TDIST_CHECK(err.empty(), TDIST_ERR_BOOTSTRAP, "%s", err.c_str());
  });
}

void *tdist_malloc(size_t size) {
  void *p = nullptr;
  c_boundary("tdist_malloc", [&] { p = collective_alloc(kOpMalloc, size, 1, "tdist_malloc"); });
  return p;
}

void *tdist_calloc(size_t count, size_t size) {
  void *p = nullptr;
  c_boundary("tdist_calloc", [&] {
    size_t total = 0;
    // An overflow must still reach the collective so the other PEs fail too: pass SIZE_MAX.
    if (__builtin_mul_overflow(count, size, &total)) total = SIZE_MAX;
    p = collective_alloc(kOpCalloc, total, 1, "tdist_calloc");
  });
  return p;
}

void *tdist_align(size_t alignment, size_t size) {
  void *p = nullptr;
  c_boundary("tdist_align", [&] { p = collective_alloc(kOpAlign, size, alignment, "tdist_align"); });
  return p;
}

int tdist_free(void *ptr) {
  return c_boundary("tdist_free", [&] {
    Context &c = require_context("tdist_free");
    std::lock_guard<std::mutex> g(c.mu);
    CollectiveRecord rec{c.collective_seq++, kOpFree, TDIST_SUCCESS, 0, 0, -1};
    std::string why = take_reject();
    if (!why.empty()) {
      rec.status = TDIST_ERR_INVALID_PARAM;
      rec.rejected = 1;
    } else if (ptr) {
      uintptr_t p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(c.state.heap_base);
      if (p < b + TDIST_HEAP_RESERVED || p >= b + c.state.heap_size) {
        rec.status = TDIST_ERR_INVALID_PARAM;
        why = strfmt("%p is not in the symmetric heap [%p, %p)", ptr,
                     static_cast<void *>(static_cast<char *>(c.state.heap_base) + TDIST_HEAP_RESERVED),
                     static_cast<void *>(static_cast<char *>(c.state.heap_base) + c.state.heap_size));
      } else {
        rec.offset = int64_t(p - b);
        if (c.alloc->block_size(size_t(rec.offset)) == 0) {
          rec.status = TDIST_ERR_INVALID_PARAM;
          why = strfmt(
              "heap offset %lld is not a live allocation (double free, or not the start "
              "of a block)",
              (long long)rec.offset);
        } else if (c.team_blocks.count(size_t(rec.offset))) {
          rec.status = TDIST_ERR_INVALID_PARAM;
          why = strfmt("heap offset %lld is a team heap's block (it returns to the world heap at finalize)",
                       (long long)rec.offset);
        }
      }
    }
    agree(c, rec, why);
    if (ptr) c.alloc->release(size_t(rec.offset));
  });
}

int64_t tdist_heap_offset(const void *ptr) {
  int64_t off = -1;
  c_boundary("tdist_heap_offset", [&] {
    Context &c = require_context("tdist_heap_offset");
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(c.state.heap_base);
    TDIST_CHECK(p >= b && p < b + c.state.heap_size, TDIST_ERR_INVALID_PARAM,
                "%p is not in the symmetric heap", ptr);
    off = int64_t(p - b);
  });
  return off;
}

size_t tdist_heap_free_bytes(void) {
  size_t n = 0;
  c_boundary("tdist_heap_free_bytes",
             [&] { n = require_context("tdist_heap_free_bytes").alloc->largest_free(); });
  return n;
}

const tdist_device_state_t *tdist_host_device_state(void) {
  const tdist_device_state_t *s = nullptr;
  c_boundary("tdist_host_device_state", [&] { s = &require_context("tdist_host_device_state").state; });
  return s;
}

int tdist_host_barrier_all(void) {
  return c_boundary("tdist_host_barrier_all", [&] {
    Context &c = require_context("tdist_host_barrier_all");
    c.transport->quiet();
    c.transport->host_barrier(*c.cp);
  });
}

int tdist_ctrl_barrier(void) {
  return c_boundary("tdist_ctrl_barrier", [&] { require_context("tdist_ctrl_barrier").cp->barrier(); });
}

// The control plane's all-gather and broadcast carry every PE's verdict and size, so a bad call on
// one PE (a NULL buffer, a root out of range, a size or root that differs, an argument a binding
// rejected) fails on every PE with the same error instead of leaving the others waiting.
namespace {
std::vector<CtrlHeader> ctrl_agree(Context &c, CtrlHeader mine, const std::string &why,
                                   const std::string &data, std::vector<std::string> *payloads) {
  return check_ctrl(c.cp->allgather(pack_ctrl(mine, why, data), /*same_size=*/false), world_pes(), payloads);
}
}  // namespace

int tdist_ctrl_allgather(const void *in, void *out, size_t nbytes) {
  return c_boundary("tdist_ctrl_allgather", [&] {
    Context &c = require_context("tdist_ctrl_allgather");
    CtrlHeader mine{TDIST_SUCCESS, -1, nbytes, {}};
    std::string why = take_reject();
    if (!why.empty())
      mine.status = TDIST_ERR_INVALID_PARAM;
    else if (nbytes && (!in || !out))
      mine.status = TDIST_ERR_INVALID_PARAM, why = "in/out is NULL";
    else if (nbytes > kStoreMaxValue - sizeof(CtrlHeader))
      mine.status = TDIST_ERR_INVALID_PARAM,
      why = strfmt("%zu bytes exceed the control plane's limit", nbytes);
    std::string data = mine.status ? std::string() : std::string(static_cast<const char *>(in), nbytes);
    std::vector<std::string> all;
    auto h = ctrl_agree(c, mine, why, data, &all);
    for (size_t pe = 1; pe < h.size(); ++pe)
      TDIST_CHECK(h[pe].nbytes == h[0].nbytes, TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch: PE 0 contributed %llu bytes, PE %zu %llu bytes",
                  (unsigned long long)h[0].nbytes, pe, (unsigned long long)h[pe].nbytes);
    for (size_t r = 0; r < all.size(); ++r)
      std::memcpy(static_cast<char *>(out) + r * nbytes, all[r].data(), nbytes);
  });
}

int tdist_ctrl_broadcast(void *buf, size_t nbytes, int root) {
  return c_boundary("tdist_ctrl_broadcast", [&] {
    Context &c = require_context("tdist_ctrl_broadcast");
    const int n = c.cp->size();
    CtrlHeader mine{TDIST_SUCCESS, root, nbytes, {}};
    std::string why = take_reject();
    if (!why.empty())
      mine.status = TDIST_ERR_INVALID_PARAM;
    else if (nbytes && !buf)
      mine.status = TDIST_ERR_INVALID_PARAM, why = "buf is NULL";
    else if (root < 0 || root >= n)
      mine.status = TDIST_ERR_INVALID_PARAM, why = strfmt("broadcast root %d out of range [0, %d)", root, n);
    else if (nbytes > kStoreMaxValue)
      mine.status = TDIST_ERR_INVALID_PARAM,
      why = strfmt("%zu bytes exceed the control plane's limit", nbytes);
    // First every PE's root and size (one small all-gather), then the root's bytes.
    auto h = ctrl_agree(c, mine, why, "", nullptr);
    for (int pe = 1; pe < n; ++pe) {
      TDIST_CHECK(h[pe].root == h[0].root, TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch: PE 0 named root %d, PE %d named root %d", h[0].root, pe, h[pe].root);
      TDIST_CHECK(h[pe].nbytes == h[0].nbytes, TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch: PE 0 broadcasts %llu bytes, PE %d expects %llu",
                  (unsigned long long)h[0].nbytes, pe, (unsigned long long)h[pe].nbytes);
    }
    std::string v = c.cp->broadcast(std::string(static_cast<char *>(buf), nbytes), root);
    TDIST_CHECK(v.size() == nbytes, TDIST_ERR_INNER, "broadcast: root sent %zu bytes, %zu agreed", v.size(),
                nbytes);
    std::memcpy(buf, v.data(), nbytes);
  });
}

int tdist_collective_reject(const char *why) {
  return c_boundary("tdist_collective_reject", [&] {
    require_context("tdist_collective_reject");  // nothing may linger for a later job
    t_reject = why && *why ? why : "an argument was rejected on this PE";
  });
}

}  // extern "C"
