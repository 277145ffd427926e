#include "bootstrap/store_state.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tdist {

StoreState::StoreState(int n_ranks, std::string secret, SendFn send)
    : n_ranks_(n_ranks),
      secret_(std::move(secret)),
      send_(std::move(send)),
      progress_(size_t(n_ranks), 0),
      at_low_(size_t(n_ranks)) {}

void StoreState::open(int conn) { peers_[conn] = Peer{}; }

bool StoreState::authenticated(int conn) const {
  auto it = peers_.find(conn);
  return it != peers_.end() && it->second.rank >= 0;
}

std::vector<int> StoreState::missing_ranks() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<int> out;
  for (int r = 0; r < n_ranks_; ++r)
    if (!seen_ranks_.count(r)) out.push_back(r);
  return out;
}

bool StoreState::all_done() const {
  std::lock_guard<std::mutex> g(mu_);
  for (int r : seen_ranks_)
    if (!finalized_ranks_.count(r) && !gone_ranks_.count(r)) return false;
  return true;
}

size_t StoreState::waiting() const {
  size_t n = 0;
  for (auto &[k, fds] : waiters_) n += fds.size();
  return n;
}

void StoreState::fail_all(const std::string &why, int lost_rank) {
  if (!failure_.empty()) return;
  failure_ = why;
  failure_rank_ = lost_rank;
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto &[key, conns] : waiters)
    for (int c : conns) send_(c, StoreOp::kReplyError, key, failure_);
  for (int c : watchers_) send_(c, StoreOp::kReplyError, std::to_string(lost_rank), failure_);
}

void StoreState::close(int conn, const std::string &why, bool stopping) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  Peer p = it->second;
  peers_.erase(it);
  for (auto w = waiters_.begin(); w != waiters_.end();) {
    std::erase(w->second, conn);
    w = w->second.empty() ? waiters_.erase(w) : std::next(w);
  }
  watchers_.erase(conn);
  if (p.watcher) last_beat_.erase(p.rank);  // it left (finalize stops the watchdog first)
  if (p.rank < 0 || p.watcher) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    gone_ranks_.insert(p.rank);
  }
  if (!p.finalized && !stopping)
    fail_all(strfmt("rank %d lost (%s before finalize)", p.rank, why.c_str()), p.rank);
}

std::vector<int> StoreState::overdue(uint64_t now_ms) const {
  std::vector<int> out;
  if (heartbeat_ms_ == 0) return out;
  for (auto &[rank, t] : last_beat_)
    if (now_ms > t && now_ms - t > heartbeat_ms_) out.push_back(rank);
  return out;
}

std::vector<int> StoreState::conns_of(int rank) const {
  std::vector<int> out;
  for (auto &[c, p] : peers_)
    if (p.rank == rank) out.push_back(c);
  return out;
}

bool StoreState::authenticate(int conn, Peer &p, const Frame &f, uint64_t now_ms) {
  const bool watch = f.op == StoreOp::kWatch;
  if (!secret_matches(f.value, secret_)) {
    send_(conn, StoreOp::kReplyError, f.key, "authentication failed");
    return false;
  }
  int r = parse_rank_key(f.key, n_ranks_);
  if (r < 0) {
    send_(conn, StoreOp::kReplyError, f.key,
          strfmt("rank '%.32s' out of range [0, %d)", f.key.c_str(), n_ranks_));
    return false;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    std::set<int> &seen = watch ? watched_ranks_ : seen_ranks_;
    if (seen.count(r)) {
      send_(conn, StoreOp::kReplyError, f.key,
            strfmt(watch ? "rank %d's watchdog joined twice" : "rank %d joined twice", r));
      return false;
    }
    seen.insert(r);
  }
  p.rank = r;
  p.watcher = watch;
  send_(conn, StoreOp::kReplyOk, f.key, watch ? std::to_string(heartbeat_ms_) : std::string());
  if (watch) {
    watchers_.insert(conn);
    last_beat_[r] = now_ms;
    if (!failure_.empty()) send_(conn, StoreOp::kReplyError, std::to_string(failure_rank_), failure_);
  }
  return true;
}

void StoreState::store(const std::string &key, std::string value) {
  auto [it, fresh] = kv_.insert_or_assign(key, std::move(value));
  uint64_t seq;
  TeamRoundKey tk;
  if (fresh && parse_round_key(key, &seq)) {
    round_keys_[seq].push_back(key);
    if (seq < low_) collect();  // a round already over (a confused client): not kept either
  } else if (fresh && parse_team_round_key(key, &tk)) {
    if (TeamRounds *t = team_of(tk)) {
      t->keys[tk.seq].push_back(key);
      if (tk.seq < t->low) collect_team(*t);
    }
  }
}

StoreState::TeamRounds *StoreState::team_of(const TeamRoundKey &k) {
  const uint64_t n = uint64_t(n_ranks_);
  if (k.start >= n || (k.size - 1) > (n - 1 - k.start) / k.stride) return nullptr;
  auto [it, fresh] = teams_.try_emplace(k.team);
  TeamRounds &t = it->second;
  if (fresh) {
    t.start = k.start;
    t.stride = k.stride;
    t.progress.assign(size_t(k.size), 0);
    {
      std::lock_guard<std::mutex> g(mu_);
      for (size_t m = 0; m < t.progress.size(); ++m)
        if (finalized_ranks_.count(int(k.start + m * k.stride))) t.progress[m] = UINT64_MAX;
    }
    t.low = *std::min_element(t.progress.begin(), t.progress.end());
    t.at_low = size_t(std::count(t.progress.begin(), t.progress.end(), t.low));
  }
  return &t;
}

void StoreState::advance_team(TeamRounds &t, size_t m, uint64_t seq) {
  uint64_t &p = t.progress[m];
  if (seq <= p) return;
  const bool was_low = p == t.low;
  p = seq;
  if (!was_low || --t.at_low > 0) return;
  t.low = *std::min_element(t.progress.begin(), t.progress.end());
  t.at_low = size_t(std::count(t.progress.begin(), t.progress.end(), t.low));
  collect_team(t);
}

void StoreState::collect_team(TeamRounds &t) {
  while (!t.keys.empty() && t.keys.begin()->first < t.low) {
    for (const std::string &k : t.keys.begin()->second) kv_.erase(k);
    t.keys.erase(t.keys.begin());
  }
}

size_t StoreState::team_rounds_held() const {
  size_t n = 0;
  for (auto &[id, t] : teams_) n += t.keys.size();
  return n;
}

void StoreState::advance(int rank, uint64_t seq) {
  uint64_t &p = progress_[size_t(rank)];
  if (seq <= p) return;
  const bool was_low = p == low_;
  p = seq;
  if (!was_low || --at_low_ > 0) return;
  low_ = *std::min_element(progress_.begin(), progress_.end());
  at_low_ = size_t(std::count(progress_.begin(), progress_.end(), low_));
  collect();
}

void StoreState::collect() {
  while (!round_keys_.empty() && round_keys_.begin()->first < low_) {
    for (const std::string &k : round_keys_.begin()->second) kv_.erase(k);
    round_keys_.erase(round_keys_.begin());
  }
}

bool StoreState::handle(int conn, Frame &f, uint64_t now_ms) {
  auto pit = peers_.find(conn);
  if (pit == peers_.end()) return false;
  Peer &p = pit->second;
  if (p.rank < 0) {
    if (f.op == StoreOp::kHello || f.op == StoreOp::kWatch) return authenticate(conn, p, f, now_ms);
    send_(conn, StoreOp::kReplyError, f.key, "first message must be HELLO");
    return false;
  }
  if (p.watcher && f.op == StoreOp::kHeartbeat) {
    last_beat_[p.rank] = std::max(last_beat_[p.rank], now_ms);
    send_(conn, StoreOp::kReplyOk, f.key, "");
    return true;
  }
  if (p.watcher) {
    send_(conn, StoreOp::kReplyError, f.key, "a watch connection sends no requests");
    return false;
  }
  if (!failure_.empty() && f.op != StoreOp::kFinalize) {
    send_(conn, StoreOp::kReplyError, f.key, failure_);
    return true;
  }
  if (uint64_t seq; parse_round_key(f.key, &seq)) {
    advance(p.rank, seq);
  } else if (TeamRoundKey tk; parse_team_round_key(f.key, &tk)) {
    // Only a member's requests move its team on (a non-member never takes part in its rounds).
    const uint64_t r = uint64_t(p.rank);
    if (TeamRounds *t = team_of(tk); t && r >= t->start && (r - t->start) % t->stride == 0 &&
                                     (r - t->start) / t->stride < t->progress.size())
      advance_team(*t, size_t((r - t->start) / t->stride), tk.seq);
  }
  switch (f.op) {
    case StoreOp::kSet: {
      if (auto w = waiters_.find(f.key); w != waiters_.end()) {
        auto conns = std::move(w->second);
        waiters_.erase(w);
        for (int c : conns) send_(c, StoreOp::kReplyOk, f.key, f.value);
      }
      std::string key = f.key;
      store(key, std::move(f.value));
      send_(conn, StoreOp::kReplyOk, key, "");
      return true;
    }
    case StoreOp::kGet: {
      auto it = kv_.find(f.key);
      if (it != kv_.end())
        send_(conn, StoreOp::kReplyOk, f.key, it->second);
      else
        waiters_[f.key].push_back(conn);
      return true;
    }
    case StoreOp::kAdd: {
      int64_t d = 0, cur = 0;
      if (!parse_add_delta(f.value, &d)) {
        send_(conn, StoreOp::kReplyError, f.key, "ADD needs a decimal delta");
        return true;
      }
      if (auto it = kv_.find(f.key); it != kv_.end() && !parse_add_delta(it->second, &cur)) {
        send_(conn, StoreOp::kReplyError, f.key, "ADD on a key that does not hold a number");
        return true;
      }
      if (__builtin_add_overflow(cur, d, &cur)) {
        send_(conn, StoreOp::kReplyError, f.key, "ADD overflows int64");
        return true;
      }
      std::string s = std::to_string(cur);
      store(f.key, s);
      if (auto w = waiters_.find(f.key); w != waiters_.end()) {
        auto conns = std::move(w->second);
        waiters_.erase(w);
        for (int c : conns) send_(c, StoreOp::kReplyOk, f.key, s);
      }
      send_(conn, StoreOp::kReplyOk, f.key, s);
      return true;
    }
    case StoreOp::kDel:
      kv_.erase(f.key);
      send_(conn, StoreOp::kReplyOk, f.key, "");
      return true;
    case StoreOp::kCheck: send_(conn, StoreOp::kReplyOk, f.key, kv_.count(f.key) ? "1" : "0"); return true;
    case StoreOp::kFinalize: {
      p.finalized = true;
      {
        std::lock_guard<std::mutex> g(mu_);
        finalized_ranks_.insert(p.rank);
      }
      send_(conn, StoreOp::kReplyOk, f.key, "");
      advance(p.rank, UINT64_MAX);    // names no round again
      for (auto &[id, t] : teams_) {  // nor a round of any of its teams
        const uint64_t r = uint64_t(p.rank);
        if (r >= t.start && (r - t.start) % t.stride == 0 && (r - t.start) / t.stride < t.progress.size())
          advance_team(t, size_t((r - t.start) / t.stride), UINT64_MAX);
      }
      return true;
    }
    case StoreOp::kHello:
    case StoreOp::kWatch:
      send_(conn, StoreOp::kReplyError, f.key, "connection already authenticated");
      return false;
    default: send_(conn, StoreOp::kReplyError, f.key, "op not valid in a request"); return false;
  }
}

}  // namespace tdist
