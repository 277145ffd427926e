// libFuzzer target for the bootstrap store's request handling (runtime/bootstrap/store_state.*):
// what the server does with every frame once it is decoded, before and after authentication.
//
// The input is a script of events on up to 6 connections of a 3-rank store with secret "s": open,
// close, and frames whose op, key and value come from the input (keys mostly from a dictionary of
// ranks and control-plane round keys, so the round collector and the waiters are exercised), at a
// clock the input advances. Invariants checked (a violation aborts, which libFuzzer reports):
//   - nothing is ever sent to a connection that is not open;
//   - a connection that has not authenticated receives only errors, but for the OK of its own
//     HELLO / WATCH (a stranger never reads a key, a counter or a failure's details beyond "no"),
//     and that OK only for the secret;
//   - every reply fits the frame limits;
//   - a heartbeat overdue report names only ranks whose watchdog joined and is still connected;
//   - once every rank has finalized, no control-plane round is held;
//   - handle() never throws.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "bootstrap/store_state.hpp"

using namespace tdist;

namespace {

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "store handler invariant violated: %s\n", what);
    std::abort();
  }
}

struct Input {
  const uint8_t *p;
  size_t n;
  uint8_t byte() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  std::string bytes(size_t k) {
    k = std::min(k, n);
    std::string s(reinterpret_cast<const char *>(p), k);
    p += k;
    n -= k;
    return s;
  }
};

const StoreOp kOps[] = {StoreOp::kHello,     StoreOp::kSet,     StoreOp::kGet,       StoreOp::kAdd,
                        StoreOp::kDel,       StoreOp::kCheck,   StoreOp::kFinalize,  StoreOp::kWatch,
                        StoreOp::kHeartbeat, StoreOp::kReplyOk, StoreOp::kReplyError};

std::string key_of(Input &in) {
  uint8_t k = in.byte();
  uint8_t seq = in.byte() % 8;
  switch (k % 10) {
    case 0: return std::to_string(k / 10 % 4);  // a rank (3 is out of range)
    case 1: return "bar/" + std::to_string(seq);
    case 2: return "bar/" + std::to_string(seq) + "/go";
    case 3: return "ag/" + std::to_string(seq) + "/" + std::to_string(k / 10 % 3);
    case 4: return "bc/" + std::to_string(seq);
    case 5: return "job_id";
    case 6: return "";
    default: return in.bytes(in.byte() % 24);
  }
}

std::string value_of(Input &in) {
  uint8_t v = in.byte();
  switch (v % 6) {
    case 0: return "s";  // the secret
    case 1: return "1";
    case 2: return "-9223372036854775808";
    case 3: return "";
    default: return in.bytes(v % 40);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in{data, size};
  std::set<int> open;
  std::map<int, bool> authed;       // as the replies show it
  std::map<int, int> watcher_rank;  // connection -> rank of an accepted WATCH
  std::set<int> finalized_ranks;
  std::map<int, int> rank_conn;  // rank -> its accepted HELLO connection
  int handling = -1;
  StoreOp handling_op{};
  std::string handling_key, handling_value;
  StoreState st(3, "s", [&](int c, StoreOp op, const std::string &k, const std::string &v) {
    check(open.count(c), "a reply to a connection that is not open");
    check(k.size() <= kStoreMaxKey && v.size() <= kStoreMaxValue, "a reply beyond the frame limits");
    if (!authed[c]) {
      const bool own_ok = c == handling && op == StoreOp::kReplyOk &&
                          (handling_op == StoreOp::kHello || handling_op == StoreOp::kWatch) &&
                          k == handling_key;
      check(op == StoreOp::kReplyError || own_ok, "an unauthenticated connection got data");
      check(!own_ok || handling_value == "s", "a connection joined without the secret");
      if (own_ok) authed[c] = true;
    }
  });
  st.set_heartbeat_timeout_ms(1000);
  uint64_t now = 0;
  while (in.n) {
    uint8_t ev = in.byte();
    int conn = ev % 6;
    now += (ev >> 3) * 37;
    switch ((ev >> 6) & 3) {
      case 0:
        if (!open.count(conn)) {
          open.insert(conn);
          authed[conn] = false;
          st.open(conn);
        }
        break;
      case 1:
        if (open.count(conn)) {
          st.close(conn, "closed", in.byte() & 1);
          open.erase(conn);
          watcher_rank.erase(conn);
          for (auto it = rank_conn.begin(); it != rank_conn.end();)
            it = it->second == conn ? rank_conn.erase(it) : std::next(it);
        }
        break;
      default: {
        if (!open.count(conn)) break;
        Frame f{kOps[in.byte() % (sizeof kOps / sizeof kOps[0])], key_of(in), value_of(in)};
        handling = conn;
        handling_op = f.op;
        handling_key = f.key;
        handling_value = f.value;
        const bool was = authed[conn];
        const StoreOp op = f.op;
        const std::string key = f.key;
        bool keep = st.handle(conn, f, now);
        handling = -1;
        if (!was && authed[conn]) {
          if (op == StoreOp::kWatch)
            watcher_rank[conn] = std::atoi(key.c_str());
          else
            rank_conn[std::atoi(key.c_str())] = conn;
        }
        if (authed[conn] && op == StoreOp::kFinalize && was && !watcher_rank.count(conn))
          for (auto &[r, c] : rank_conn)
            if (c == conn) finalized_ranks.insert(r);
        if (!keep) {
          st.close(conn, "dropped", false);
          open.erase(conn);
          watcher_rank.erase(conn);
          for (auto it = rank_conn.begin(); it != rank_conn.end();)
            it = it->second == conn ? rank_conn.erase(it) : std::next(it);
        }
      }
    }
    for (int r : st.overdue(now)) {
      bool watched = false;
      for (auto &[c, wr] : watcher_rank) watched |= wr == r;
      check(watched, "an overdue rank whose watchdog is not connected");
    }
    if (finalized_ranks.size() == 3) check(st.rounds_held() == 0, "a round held after every rank finalized");
  }
  return 0;
}
