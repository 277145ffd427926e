// The bootstrap store's request handling (docs/CONTRACT.md section 5), free of sockets and clocks
// so it can be fuzzed on its own (fuzz/store_handler_fuzz.cpp): connections are small integers,
// every reply goes through the send callback, time is passed in. StoreServer (store.cpp) owns the
// sockets, TLS and the event loop and feeds this one frames.
//
// Memory stays flat over a long job: the control plane's keys are numbered by round
// ("bar/<seq>", "ag/<seq>/<rank>", "bc/<seq>...", parse_round_key), every request names the round
// its rank is in, and a rank asks for round s only after it finished every earlier round; so once
// every rank has named a round past s (or finalized), nobody can read a key of round s any more
// and the store deletes them. A team collective's keys ("tm/<team>/<seq>...", parse_team_round_key)
// are numbered by that team's own rounds, which only its members take part in: the store keeps the
// progress of each team's members (the members follow from the key) and deletes a team round's keys
// once every member of the team has named a later round of it (or finalized).
//
// Liveness: a rank's watch connection sends HEARTBEAT frames; with a heartbeat timeout set, a rank
// whose watchdog has been silent that long (stopped, frozen, its host gone) is reported by
// overdue() and the server fails the job naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/frame.hpp"

namespace tdist {

class StoreState {
 public:
  using SendFn = std::function<void(int conn, StoreOp op, const std::string &key, const std::string &value)>;
  // `secret` "" accepts any HELLO / WATCH; `send` delivers one reply (best effort; a failed send
  // is the caller's to notice and close).
  StoreState(int n_ranks, std::string secret, SendFn send);

  void open(int conn);
  // The connection is gone. A rank's request connection that goes before its FINALIZE fails the
  // job ("rank R lost (<why> before finalize)") unless `stopping`.
  void close(int conn, const std::string &why, bool stopping);
  // One complete frame from `conn`, received at `now_ms` (any monotonic clock); false when the
  // connection must be dropped.
  bool handle(int conn, Frame &f, uint64_t now_ms = 0);
  // 0: no heartbeat expected. Told to every watchdog when it joins.
  void set_heartbeat_timeout_ms(uint64_t ms) { heartbeat_ms_ = ms; }
  // Ranks whose watchdog joined and has sent nothing for longer than the heartbeat timeout.
  std::vector<int> overdue(uint64_t now_ms) const;
  // The connections of `rank` (its requests and its watchdog).
  std::vector<int> conns_of(int rank) const;
  // Fails the job: every GET waiter and watcher hears `why` at once, later requests are refused.
  void fail_all(const std::string &why, int lost_rank);

  bool authenticated(int conn) const;
  bool failed() const { return !failure_.empty(); }
  // Ranks that have not sent HELLO, in order.
  std::vector<int> missing_ranks() const;
  // Every rank that joined has finalized or gone: the server may stop. Thread-safe.
  bool all_done() const;

  // What the store holds, for tests and the fuzzer.
  size_t keys() const { return kv_.size(); }
  size_t waiting() const;
  size_t rounds_held() const { return round_keys_.size(); }
  // Team rounds whose keys the store still holds, over every team.
  size_t team_rounds_held() const;

 private:
  struct Peer {
    int rank = -1;  // -1 until HELLO / WATCH
    bool watcher = false;
    bool finalized = false;
  };
  bool authenticate(int conn, Peer &p, const Frame &f, uint64_t now_ms);
  void store(const std::string &key, std::string value);
  // `rank` is now in round `seq` (UINT64_MAX: finalized): delete the rounds nobody can read.
  void advance(int rank, uint64_t seq);
  void collect();
  // The rounds of one team (keyed by its id, parse_team_round_key): its members' progress.
  struct TeamRounds {
    uint64_t start = 0, stride = 1;
    std::vector<uint64_t> progress;  // per member: the latest round it named (UINT64_MAX: finalized)
    uint64_t low = 0;                // min(progress)
    size_t at_low = 0;               // members whose progress is low
    std::map<uint64_t, std::vector<std::string>> keys;  // round -> its keys in kv_
  };
  // The team of a team round key; nullptr when its members do not fit the job (not a team key).
  TeamRounds *team_of(const TeamRoundKey &k);
  // Member `m` of `t` is now in round `seq` (UINT64_MAX: finalized).
  void advance_team(TeamRounds &t, size_t m, uint64_t seq);
  void collect_team(TeamRounds &t);

  int n_ranks_;
  std::string secret_;
  SendFn send_;
  std::map<int, Peer> peers_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::vector<int>> waiters_;  // key -> connections blocked in GET
  std::set<int> watchers_;
  std::set<int> watched_ranks_;
  std::string failure_;
  int failure_rank_ = -1;
  uint64_t heartbeat_ms_ = 0;
  std::map<int, uint64_t> last_beat_;  // rank -> when its watchdog last spoke
  // Garbage collection of the control plane's rounds.
  std::vector<uint64_t> progress_;                           // per rank: the latest round it named
  uint64_t low_ = 0;                                         // min(progress_)
  size_t at_low_ = 0;                                        // ranks whose progress is low_
  std::map<uint64_t, std::vector<std::string>> round_keys_;  // round -> its keys in kv_
  std::map<std::string, TeamRounds> teams_;                  // team id -> its rounds
  mutable std::mutex mu_;  // guards the three sets below (read by the server's destructor)
  std::set<int> finalized_ranks_, seen_ranks_, gone_ranks_;
};

}  // namespace tdist
