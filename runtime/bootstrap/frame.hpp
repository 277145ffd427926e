// The bootstrap store's wire format (docs/CONTRACT.md section 5) and its incremental decoder.
// Kept free of sockets and OpenSSL so the decoder can be fuzzed on its own (fuzz/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tdist {

constexpr uint32_t kStoreMagic = 0x564b4454u;  // "TDKV" little-endian
constexpr uint32_t kStoreMaxKey = 4096;
constexpr uint32_t kStoreMaxValue = 64u << 20;
// Before a connection has authenticated (HELLO / WATCH), no frame may carry more than this: a
// stranger cannot make the server buffer megabytes.
constexpr uint32_t kStoreMaxUnauthFrame = 2 * kStoreMaxKey;

enum class StoreOp : uint32_t {
  kHello = 1,  // key = "<rank>", value = job secret; binds the connection to a rank
  kSet = 2,
  kGet = 3,  // blocks (server side) until the key exists
  kAdd = 4,  // value = decimal delta; reply = new value
  kDel = 5,
  kCheck = 6,      // reply "1"/"0"
  kFinalize = 7,   // this rank leaves cleanly
  kWatch = 8,      // key = "<rank>", value = secret: a rank's watchdog connection (no requests);
                   // the server answers OK (value = its heartbeat timeout in ms, "0": none), and
                   // later one REPLY_ERROR (key = lost rank) on failure
  kHeartbeat = 9,  // watch connections only: "this rank is alive"; answered OK
  kReplyOk = 100,
  kReplyError = 101,  // value = message (e.g. a lost rank)
};

struct FrameHeader {
  uint32_t magic;
  uint32_t op;
  uint32_t key_len;
  uint32_t val_len;
};
static_assert(sizeof(FrameHeader) == 16);

// Validates a received header; returns an empty string when acceptable, else why not.
// Every length is checked here before anything is allocated.
std::string validate_frame_header(const FrameHeader &h);

// Serialises one frame (no checks: callers check lengths first).
std::string encode_frame(StoreOp op, const std::string &key, const std::string &value);

struct Frame {
  StoreOp op{};
  std::string key, value;
};

// Splits one connection's byte stream into frames. Bytes are appended as they arrive; next()
// returns frames in order. After an error the stream is unusable (the peer must be dropped).
class FrameDecoder {
 public:
  enum Result { kNeedMore, kFrame, kError };
  explicit FrameDecoder(uint32_t max_frame_payload = kStoreMaxKey + kStoreMaxValue)
      : max_payload_(max_frame_payload) {}
  void append(const char *p, size_t n);
  // kFrame: *out holds the next frame. kError: *why says what was wrong.
  Result next(Frame *out, std::string *why);
  // Bound on key + value of any later frame (lowered before authentication).
  void set_max_payload(uint32_t n) { max_payload_ = n; }
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint32_t max_payload_;
  bool failed_ = false;
};

// Parses a HELLO / WATCH rank ("0" .. "n_ranks-1", decimal, no sign or spaces); -1 if invalid.
int parse_rank_key(const std::string &key, int n_ranks);
// Parses an ADD delta (optional '-', decimal, fits int64); false if invalid.
bool parse_add_delta(const std::string &val, int64_t *out);
// The control plane's round keys ("bar/<seq>", "ag/<seq>/<rank>", "bc/<seq>", each optionally
// followed by "/..."; seq decimal without leading zeros): true with the round in *seq. The store
// deletes a round's keys once every rank is past it (bootstrap/store_state.hpp).
bool parse_round_key(const std::string &key, uint64_t *seq);
// A team collective's round keys ("tm/<index>.<start>.<stride>.<size>/<seq>", optionally followed
// by "/..."; every number decimal without leading zeros; the team's members are the world ranks
// start + i * stride, i < size, size and stride >= 1): true with the team's id ("<index>.<start>.
// <stride>.<size>"), its geometry and the round. Each team numbers its own rounds; the store deletes
// a team round's keys once every member of that team is past it (bootstrap/store_state.hpp).
struct TeamRoundKey {
  std::string team;  // "<index>.<start>.<stride>.<size>"
  uint64_t start = 0, stride = 1, size = 0;
  uint64_t seq = 0;
};
bool parse_team_round_key(const std::string &key, TeamRoundKey *out);
// Constant-time comparison of a presented secret.
bool secret_matches(const std::string &presented, const std::string &secret);

}  // namespace tdist
