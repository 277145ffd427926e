// Bootstrap key-value store (docs/CONTRACT.md section 5). Rank 0 runs StoreServer; every rank
// (rank 0 included) talks to it through a StoreClient.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace tdist {

constexpr uint32_t kStoreMagic = 0x564b4454u;  // "TDKV" little-endian
constexpr uint32_t kStoreMaxKey = 4096;
constexpr uint32_t kStoreMaxValue = 64u << 20;

enum class StoreOp : uint32_t {
  kHello = 1,     // key = "<rank>", value = job secret; binds the connection to a rank
  kSet = 2,
  kGet = 3,       // blocks (server side) until the key exists
  kAdd = 4,       // value = decimal delta; reply = new value
  kDel = 5,
  kCheck = 6,     // reply "1"/"0"
  kFinalize = 7,  // this rank leaves cleanly
  kReplyOk = 100,
  kReplyError = 101,  // value = message (e.g. a lost rank)
};

struct FrameHeader {
  uint32_t magic;
  uint32_t op;
  uint32_t key_len;
  uint32_t val_len;
};

// Validates a received header; returns an empty string when acceptable, else why not.
// Every length is checked here before anything is allocated.
std::string validate_frame_header(const FrameHeader &h);

// Parsed "tcp://host:port" / "tcp6://[host]:port".
struct StoreAddress {
  bool ipv6 = false;
  std::string host;
  int port = 0;
};
StoreAddress parse_store_address(const std::string &url);  // throws INVALID_PARAM

class StoreServer {
 public:
  // Binds and listens at once (so a bad/used port fails here), serves on a thread.
  StoreServer(const StoreAddress &addr, int n_ranks, std::string secret);
  ~StoreServer();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

class StoreClient {
 public:
  StoreClient(const StoreAddress &addr, int rank, const std::string &secret, double connect_timeout_s,
              double op_timeout_s);
  ~StoreClient();
  void set(const std::string &key, const std::string &value);
  std::string get(const std::string &key);  // waits up to op_timeout for the key
  int64_t add(const std::string &key, int64_t delta);
  bool check(const std::string &key);
  void del(const std::string &key);
  // Leave the job cleanly; with wait_for_close, return once the server has shut down.
  void finalize(bool wait_for_close = false);

 private:
  std::string request(StoreOp op, const std::string &key, const std::string &value);
  int fd_ = -1;
  int rank_;
  double op_timeout_s_;
};

}  // namespace tdist
