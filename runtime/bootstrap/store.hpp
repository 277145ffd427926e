// Bootstrap key-value store (docs/CONTRACT.md section 5). Rank 0 runs StoreServer; every rank
// (rank 0 included) talks to it through a StoreClient, plus one watch-only StoreClient per rank
// (core/watchdog) that hears about a lost rank at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "bootstrap/frame.hpp"
#include "bootstrap/tls.hpp"

namespace tdist {

// Parsed "tcp://host:port" / "tcp6://[host]:port".
struct StoreAddress {
  bool ipv6 = false;
  std::string host;
  int port = 0;
};
StoreAddress parse_store_address(const std::string &url);  // throws INVALID_PARAM

struct StoreServerOptions {
  std::string secret;  // every HELLO / WATCH must present it ("" = none required)
  StoreTlsConfig tls;  // TLS when tls.enable
  // Fail the job naming the missing ranks if not every rank has joined by then (0: never).
  double join_timeout_s = 0;
  // A connection that has not authenticated within this time is dropped.
  double hello_timeout_s = 10;
  // A rank whose watchdog has sent no heartbeat for this long is lost (0: no heartbeat).
  uint64_t heartbeat_timeout_ms = 0;
};

class StoreServer {
  static StoreServerOptions with_secret(std::string s) {
    StoreServerOptions o;
    o.secret = std::move(s);
    return o;
  }

 public:
  // Binds exactly the address given and listens at once (so a bad/used port fails here),
  // serves on a thread.
  StoreServer(const StoreAddress &addr, int n_ranks, StoreServerOptions opts);
  StoreServer(const StoreAddress &addr, int n_ranks, std::string secret)
      : StoreServer(addr, n_ranks, with_secret(std::move(secret))) {}
  ~StoreServer();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

class StoreClient {
 public:
  enum class Role { kRank, kWatcher };
  StoreClient(const StoreAddress &addr, int rank, const std::string &secret, double connect_timeout_s,
              double op_timeout_s, const StoreTlsConfig &tls = {}, Role role = Role::kRank);
  ~StoreClient();
  void set(const std::string &key, const std::string &value);
  std::string get(const std::string &key);  // waits up to op_timeout for the key
  int64_t add(const std::string &key, int64_t delta);
  bool check(const std::string &key);
  void del(const std::string &key);
  // Leave the job cleanly; with wait_for_close, return once the server has shut down (skipped
  // once the job is known to have failed).
  void finalize(bool wait_for_close = false);
  // Watcher role: blocks until the job fails or `stop_fd` becomes readable, sending the store a
  // heartbeat at a quarter of the timeout it announced. Returns false on stop; true with the lost
  // rank (-1 if unknown) and the server's message on failure. A closed store connection, or one
  // that has not answered for the heartbeat timeout, is a failure naming rank 0 (the store's host).
  bool wait_for_failure(int stop_fd, int *lost_rank, std::string *message);
  // True once the store has reported the job failed (a lost rank) to this client.
  bool job_failed() const { return job_failed_; }
  // Set (by the watchdog's client, which shares it) once the store is known to be gone or frozen:
  // a request in progress or made later fails at once naming rank 0 instead of running to its
  // timeout.
  void share_store_lost(std::shared_ptr<std::atomic<bool>> flag) { store_lost_ = std::move(flag); }
  // The bound of each later request (while ranks may still be joining, the control plane
  // lengthens it past the store's join deadline, so the store names the missing rank first).
  void set_op_timeout(double s) { op_timeout_s_ = s; }
  double op_timeout() const { return op_timeout_s_; }

 private:
  std::string request(StoreOp op, const std::string &key, const std::string &value);
  Frame read_frame(double timeout_s, const std::string &what);
  Channel ch_;
  FrameDecoder dec_;
  int rank_;
  double op_timeout_s_;
  bool job_failed_ = false;
  bool joined_ = false;        // HELLO / WATCH accepted
  uint64_t heartbeat_ms_ = 0;  // watcher: the store's heartbeat timeout (0: none)
  std::shared_ptr<std::atomic<bool>> store_lost_;
};

}  // namespace tdist
