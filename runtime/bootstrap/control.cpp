#include "bootstrap/control.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "bootstrap/store.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace tdist {

namespace {
std::string host_identity() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  std::string id = name;
  // Containers may share a hostname across machines; the boot id tells hosts apart.
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string b;
  if (boot && std::getline(boot, b)) id += "/" + b;
  return id;
}
}  // namespace

ControlPlane::ControlPlane(const BootstrapConfig &cfg) : cfg_(cfg) {
  TDIST_CHECK(cfg.n_ranks >= 1, TDIST_ERR_INVALID_PARAM, "n_ranks must be >= 1 (got %d)", cfg.n_ranks);
  TDIST_CHECK(cfg.rank >= 0 && cfg.rank < cfg.n_ranks, TDIST_ERR_INVALID_PARAM,
              "my_rank %d out of range [0, %d)", cfg.rank, cfg.n_ranks);
  StoreAddress addr = parse_store_address(cfg.address);
  TDIST_CHECK(addr.port > 1024, TDIST_ERR_INVALID_PARAM, "store port must be > 1024 (got %d in '%s')",
              addr.port, cfg.address.c_str());
  const char *sec = std::getenv("TDIST_STORE_SECRET");
  addr_ = addr;
  secret_ = !cfg.secret.empty() ? cfg.secret : sec ? sec : "";
  tls_ = store_tls_config();
  if (cfg.rank == 0) {
    StoreServerOptions so;
    so.secret = secret_;
    so.tls = tls_;
    // A rank that never shows up fails the job, naming it, instead of every GET timing out.
    so.join_timeout_s = cfg.connect_timeout_s;
    // A frozen rank (SIGSTOP, a debugger) keeps its connections open: its watchdog's heartbeats
    // are what stop.
    so.heartbeat_timeout_ms = env_heartbeat_timeout_ms();
    server_ = std::make_unique<StoreServer>(addr, cfg.n_ranks, std::move(so));
  }
  client_ =
      std::make_unique<StoreClient>(addr, cfg.rank, secret_, cfg.connect_timeout_s, cfg.op_timeout_s, tls_);
  client_->share_store_lost(store_lost_);
  // Until every rank has joined (the all-gather below), a wait may be for a rank that never
  // starts: the store fails the job naming it at its join deadline, so no request of ours may
  // give up first (and blame whichever rank then leaves).
  client_->set_op_timeout(std::max(cfg.op_timeout_s, cfg.connect_timeout_s + 10));
  if (cfg.rank == 0) {
    std::random_device rd;
    job_id_ = strfmt("%08x%08x", rd(), rd());
    client_->set("job_id", job_id_);
  } else {
    job_id_ = client_->get("job_id");
  }
  // One fixed-size record per rank (host names differ in length): pid, then the host identity.
  struct Who {
    int32_t pid;
    char host[300];
  } me{};
  me.pid = int32_t(::getpid());
  std::string id = host_identity();
  std::memcpy(me.host, id.data(), std::min(id.size(), sizeof me.host - 1));
  auto all = allgather(std::string(reinterpret_cast<const char *>(&me), sizeof me));
  pids_.resize(size());
  hosts_.resize(size());
  host_index_.resize(size());
  std::vector<std::string> ids;
  for (int r = 0; r < size(); ++r) {
    Who w;
    std::memcpy(&w, all[r].data(), sizeof w);
    w.host[sizeof w.host - 1] = '\0';
    pids_[r] = w.pid;
    const std::string id = w.host;
    hosts_[r] = id.substr(0, id.find('/'));
    size_t h = 0;
    while (h < ids.size() && ids[h] != id) ++h;
    if (h == ids.size()) ids.push_back(id);
    host_index_[r] = int(h);
    if (std::strcmp(w.host, me.host) == 0) {
      if (r == rank()) local_rank_ = int(local_ranks_.size());
      local_ranks_.push_back(r);
    }
  }
  local_size_ = int(local_ranks_.size());
  n_hosts_ = int(ids.size());
  client_->set_op_timeout(cfg.op_timeout_s);
}

std::string ControlPlane::hosts_summary() const {
  // One entry per host, in order of its first rank; consecutive ranks shown as a range.
  std::string out;
  for (int h = 0; h < n_hosts_; ++h) {
    std::vector<int> rs;
    for (int r = 0; r < size(); ++r)
      if (host_index_[size_t(r)] == h) rs.push_back(r);
    std::string list;
    for (size_t i = 0; i < rs.size();) {
      size_t j = i;
      while (j + 1 < rs.size() && rs[j + 1] == rs[j] + 1) ++j;
      if (!list.empty()) list += ",";
      list += j == i ? strfmt("%d", rs[i]) : strfmt("%d-%d", rs[i], rs[j]);
      i = j + 1;
    }
    if (!out.empty()) out += "; ";
    out +=
        strfmt("%s %s on %s", rs.size() == 1 ? "rank" : "ranks", list.c_str(), hosts_[size_t(rs[0])].c_str());
  }
  return out;
}

ControlPlane::~ControlPlane() = default;

std::string ControlPlane::get_or_name(const std::string &key, const std::string &what) {
  try {
    return client_->get(key);
  } catch (const Error &e) {
    if (e.code() != TDIST_ERR_TIMEOUT) throw;
    TDIST_THROW(TDIST_ERR_TIMEOUT, "rank %d: %s within %.0f s (store key '%s')", rank(), what.c_str(),
                client_->op_timeout(), key.c_str());
  }
}

void ControlPlane::barrier() {
  const unsigned long long seq = seq_++;
  std::string key = strfmt("bar/%llu", seq);
  int64_t n = client_->add(key, 1);
  if (n == size()) client_->set(key + "/go", "1");
  get_or_name(key + "/go", strfmt("control barrier #%llu: not every rank arrived (this rank came %lld of %d)",
                                  seq, (long long)n, size()));
}

std::vector<std::string> ControlPlane::allgather(const std::string &in, bool same_size) {
  const unsigned long long seq = seq_++;
  std::string base = strfmt("ag/%llu/", seq);
  client_->set(base + std::to_string(rank()), in);
  std::vector<std::string> out(size());
  for (int r = 0; r < size(); ++r)
    out[r] = r == rank() ? in
                         : get_or_name(base + std::to_string(r),
                                       strfmt("all-gather #%llu: rank %d did not contribute", seq, r));
  for (int r = 0; r < size() && same_size; ++r)
    TDIST_CHECK(out[r].size() == in.size(), TDIST_ERR_COLLECTIVE_MISMATCH,
                "allgather: rank %d contributed %zu bytes, rank %d contributed %zu", r, out[r].size(), rank(),
                in.size());
  return out;
}

std::string ControlPlane::broadcast(const std::string &data, int root) {
  TDIST_CHECK(root >= 0 && root < size(), TDIST_ERR_INVALID_PARAM, "broadcast root %d out of range [0, %d)",
              root, size());
  std::string key = strfmt("bc/%llu", (unsigned long long)seq_++);
  if (rank() == root) {
    client_->set(key, data);
    return data;
  }
  return get_or_name(key, strfmt("broadcast: root rank %d sent nothing", root));
}

// ---- team collectives ----
//
// Keys of round `seq` of a team: "tm/<index>.<start>.<stride>.<size>/<seq>/..." (bootstrap/frame.hpp,
// parse_team_round_key). The barrier counts arrivals in counters of 63 members each, one bit per
// member (ADD of 1 << bit: the sum is the set of members that arrived); the member that completes a
// counter adds one to the round's total when there are several, and the member that completes the
// last one releases the round ("go"). Two round trips for most members, like the world barrier. A
// store request that expires leaves its connection unusable, so what an expiry names is known before
// the wait: the members that had not arrived when this one did (the ADD's answer). The all-gather is
// the world's: each member sets its key, then reads the others' in member order, so an expiry names
// the member whose key it waited for.
namespace {
constexpr size_t kBarrierGroup = 63;  // members per arrival counter (bits of a positive int64)

size_t member_index(const TeamScope &t, int rank) {
  auto it = std::find(t.members.begin(), t.members.end(), rank);
  TDIST_CHECK(it != t.members.end(), TDIST_ERR_INNER, "%s: rank %d is not a member", t.label.c_str(), rank);
  return size_t(it - t.members.begin());
}
}  // namespace

std::string ControlPlane::team_prefix(int index, int start, int stride, int size) {
  return strfmt("tm/%d.%d.%d.%d", index, start, stride, size);
}

std::string ControlPlane::team_get(const TeamScope &t, const std::string &key, const std::string &what) {
  try {
    return client_->get(key);
  } catch (const Error &e) {
    if (e.code() != TDIST_ERR_TIMEOUT) TDIST_THROW(e.code(), "%s: %s", t.label.c_str(), e.what());
    TDIST_THROW(TDIST_ERR_TIMEOUT, "rank %d: %s within %.0f s (store key '%s')", rank(), what.c_str(),
                client_->op_timeout(), key.c_str());
  }
}

void ControlPlane::team_barrier(const TeamScope &t) {
  const size_t n = t.members.size(), me = member_index(t, rank());
  const std::string base = strfmt("%s/%llu", t.prefix.c_str(), (unsigned long long)t.seq);
  const size_t groups = (n + kBarrierGroup - 1) / kBarrierGroup, g = me / kBarrierGroup;
  auto full = [&](size_t grp) {  // every member of counter `grp` arrived
    return int64_t((uint64_t(1) << std::min(kBarrierGroup, n - grp * kBarrierGroup)) - 1);
  };
  std::vector<int64_t> seen(groups, 0);  // what this member knows of each counter
  bool last = false;
  try {
    seen[g] = client_->add(strfmt("%s/b/%zu", base.c_str(), g), int64_t(1) << (me % kBarrierGroup));
    if (seen[g] == full(g)) last = groups == 1 || client_->add(base + "/b", 1) == int64_t(groups);
    if (last) {
      client_->set(base + "/go", "1");
      return;
    }
    // With several counters, what the others held when this member arrived (for the message only).
    for (size_t o = 0; o < groups; ++o)
      if (o != g && client_->check(strfmt("%s/b/%zu", base.c_str(), o)))
        parse_add_delta(client_->get(strfmt("%s/b/%zu", base.c_str(), o)), &seen[o]);
  } catch (const Error &e) {
    TDIST_THROW(e.code(), "%s: %s", t.label.c_str(), e.what());
  }
  std::string who;
  size_t missing = 0;
  for (size_t m = 0; m < n; ++m)
    if (!(uint64_t(seen[m / kBarrierGroup]) >> (m % kBarrierGroup) & 1) && ++missing <= 8)
      who += strfmt("%smember %zu (world PE %d)", who.empty() ? "" : ", ", m, t.members[m]);
  if (missing > 8) who += strfmt(" and %zu more", missing - 8);
  team_get(t, base + "/go",
           strfmt("%s barrier #%llu: not every member arrived (when this one, member %zu, did, %s had not)",
                  t.label.c_str(), (unsigned long long)t.seq, me, who.c_str()));
}

std::vector<std::string> ControlPlane::team_allgather(const TeamScope &t, const std::string &in,
                                                      bool same_size) {
  const size_t n = t.members.size(), me = member_index(t, rank());
  const std::string base = strfmt("%s/%llu", t.prefix.c_str(), (unsigned long long)t.seq);
  try {
    client_->set(strfmt("%s/ag/%zu", base.c_str(), me), in);
  } catch (const Error &e) {
    TDIST_THROW(e.code(), "%s: %s", t.label.c_str(), e.what());
  }
  std::vector<std::string> out(n);
  for (size_t m = 0; m < n; ++m)
    out[m] = m == me ? in
                     : team_get(t, strfmt("%s/ag/%zu", base.c_str(), m),
                                strfmt("%s all-gather #%llu: member %zu (world PE %d) did not contribute",
                                       t.label.c_str(), (unsigned long long)t.seq, m, t.members[m]));
  for (size_t m = 0; m < n && same_size; ++m)
    TDIST_CHECK(
        out[m].size() == in.size(), TDIST_ERR_COLLECTIVE_MISMATCH,
        "%s all-gather #%llu: member %zu (world PE %d) contributed %zu bytes, member %zu (world PE %d) "
        "%zu",
        t.label.c_str(), (unsigned long long)t.seq, m, t.members[m], out[m].size(), me, rank(), in.size());
  return out;
}

std::unique_ptr<StoreClient> ControlPlane::connect_watcher() const {
  auto w = std::make_unique<StoreClient>(addr_, cfg_.rank, secret_, cfg_.connect_timeout_s, cfg_.op_timeout_s,
                                         tls_, StoreClient::Role::kWatcher);
  w->share_store_lost(store_lost_);
  return w;
}

void ControlPlane::finalize() {
  if (!client_) return;
  client_->finalize(/*wait_for_close=*/rank() != 0);
  client_.reset();
  server_.reset();  // rank 0: waits (bounded) for every rank to finalize
}

}  // namespace tdist
