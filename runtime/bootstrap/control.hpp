// Control plane over the bootstrap store: what every backend uses for rendezvous.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"

namespace tdist {

class StoreClient;
class StoreServer;

// One round of a team collective (core/context.cpp's teams): who takes part and under which keys.
struct TeamScope {
  std::string prefix;        // ControlPlane::team_prefix: the team's index and members
  std::vector<int> members;  // world ranks in team order; the calling rank is one of them
  uint64_t seq = 0;          // the team's own round number
  std::string label;         // names the team in errors: "team 3 (world PEs 1, 3)"
};

struct BootstrapConfig {
  int rank = -1;
  int n_ranks = 0;
  std::string address;  // "tcp://host:port" / "tcp6://[host]:port"
  // The store's shared secret: this one when given (a unique id carries one), else
  // TDIST_STORE_SECRET (tdist-run sets a fresh one per job), else none.
  std::string secret;
  double connect_timeout_s = 120;
  double op_timeout_s = 120;
};

class ControlPlane {
 public:
  // Collective: rank 0 starts the store server, everyone connects and checks in.
  explicit ControlPlane(const BootstrapConfig &cfg);
  ~ControlPlane();
  ControlPlane(const ControlPlane &) = delete;
  ControlPlane &operator=(const ControlPlane &) = delete;

  int rank() const { return cfg_.rank; }
  int size() const { return cfg_.n_ranks; }
  // A string unique to this job (same on every rank), e.g. for socket names.
  const std::string &job_id() const { return job_id_; }
  // Number of ranks on this host and this rank's index among them (by hostname exchange).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // World ranks on this host, in order.
  const std::vector<int> &local_ranks() const { return local_ranks_; }
  // Process id of every rank (as that rank sees itself), exchanged through the authenticated
  // store at construction: what a local peer's credentials (SO_PEERCRED) are checked against.
  int pid_of(int rank) const { return pids_[size_t(rank)]; }
  // The host of every rank (its hostname; ranks on one host share it), and which ranks are where,
  // e.g. "ranks 0-1 on node-a, ranks 2-3 on node-b": what an error about a job that spans hosts names.
  const std::string &host_of(int rank) const { return hosts_[size_t(rank)]; }
  int n_hosts() const { return n_hosts_; }
  std::string hosts_summary() const;
  // The bound of one control-plane operation, also used for every other bootstrap step.
  double op_timeout_s() const { return cfg_.op_timeout_s; }

  void barrier();
  // Every rank contributes `in` (same size everywhere, checked unless !same_size); returns all,
  // rank order.
  std::vector<std::string> allgather(const std::string &in, bool same_size = true);
  // Root's `data` is returned on every rank.
  std::string broadcast(const std::string &data, int root);

  // Team collectives: only the team's members take part, under keys "<prefix>/<seq>/..." that name
  // the team's index, its members and its own round (so teams that share no member run theirs at
  // the same time, and ranks outside the team never touch them; the store deletes a round's keys
  // once every member is past it). Each wait is bounded by the control timeout; an expiry names the
  // team and the member waited for.
  static std::string team_prefix(int index, int start, int stride, int size);
  void team_barrier(const TeamScope &t);
  // Every member contributes `in` (same size everywhere unless !same_size); returns all, member order.
  std::vector<std::string> team_allgather(const TeamScope &t, const std::string &in, bool same_size = true);
  // Tell the store this rank finished cleanly (so closing the connection is not a loss).
  void finalize();
  // A second, watch-only connection for this rank (same address, secret and TLS): the store
  // reports a lost rank on it at once (core/watchdog).
  std::unique_ptr<StoreClient> connect_watcher() const;

 private:
  // client_->get(key); a timeout names `what` was waited for instead of the key alone.
  std::string get_or_name(const std::string &key, const std::string &what);
  // client_->get(key) for a team collective: an expiry is TDIST_ERR_TIMEOUT saying `what` was
  // waited for, any other failure keeps its status and gains the team's label.
  std::string team_get(const TeamScope &t, const std::string &key, const std::string &what);
  BootstrapConfig cfg_;
  StoreAddress addr_;
  std::string secret_;
  StoreTlsConfig tls_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  // Set by the watchdog's client when the store stops answering; fails this rank's requests.
  std::shared_ptr<std::atomic<bool>> store_lost_ = std::make_shared<std::atomic<bool>>(false);
  uint64_t seq_ = 0;
  std::string job_id_;
  int local_rank_ = 0, local_size_ = 1;
  std::vector<int> local_ranks_;
  std::vector<int> pids_;
  std::vector<std::string> hosts_;
  std::vector<int> host_index_;  // rank -> index of its host identity, in order of first rank
  int n_hosts_ = 1;
};

}  // namespace tdist
