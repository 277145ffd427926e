#include "bootstrap/frame.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace tdist {

std::string validate_frame_header(const FrameHeader &h) {
  if (h.magic != kStoreMagic) return strfmt("bad magic 0x%08x", h.magic);
  if (h.key_len > kStoreMaxKey) return strfmt("key length %u exceeds %u", h.key_len, kStoreMaxKey);
  if (h.val_len > kStoreMaxValue) return strfmt("value length %u exceeds %u", h.val_len, kStoreMaxValue);
  switch (static_cast<StoreOp>(h.op)) {
    case StoreOp::kHello:
    case StoreOp::kSet:
    case StoreOp::kGet:
    case StoreOp::kAdd:
    case StoreOp::kDel:
    case StoreOp::kCheck:
    case StoreOp::kFinalize:
    case StoreOp::kWatch:
    case StoreOp::kHeartbeat:
    case StoreOp::kReplyOk:
    case StoreOp::kReplyError: return {};
  }
  return strfmt("unknown op %u", h.op);
}

std::string encode_frame(StoreOp op, const std::string &key, const std::string &value) {
  FrameHeader h{kStoreMagic, uint32_t(op), uint32_t(key.size()), uint32_t(value.size())};
  std::string buf(sizeof h + key.size() + value.size(), '\0');
  std::memcpy(buf.data(), &h, sizeof h);
  std::memcpy(buf.data() + sizeof h, key.data(), key.size());
  std::memcpy(buf.data() + sizeof h + key.size(), value.data(), value.size());
  return buf;
}

void FrameDecoder::append(const char *p, size_t n) {
  if (failed_ || n == 0) return;
  // Compact consumed bytes before growing, so a long-lived connection does not accumulate them.
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= 65536)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(p, n);
}

FrameDecoder::Result FrameDecoder::next(Frame *out, std::string *why) {
  if (failed_) {
    *why = "stream already failed";
    return kError;
  }
  if (buffered() < sizeof(FrameHeader)) return kNeedMore;
  FrameHeader h;
  std::memcpy(&h, buf_.data() + pos_, sizeof h);
  std::string bad = validate_frame_header(h);
  if (bad.empty() && uint64_t(h.key_len) + h.val_len > max_payload_)
    bad = strfmt("frame payload %llu bytes exceeds %u allowed on this connection",
                 (unsigned long long)(uint64_t(h.key_len) + h.val_len), max_payload_);
  if (!bad.empty()) {
    failed_ = true;
    *why = bad;
    return kError;
  }
  size_t need = sizeof h + size_t(h.key_len) + size_t(h.val_len);
  if (buffered() < need) return kNeedMore;
  out->op = static_cast<StoreOp>(h.op);
  out->key.assign(buf_, pos_ + sizeof h, h.key_len);
  out->value.assign(buf_, pos_ + sizeof h + h.key_len, h.val_len);
  pos_ += need;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return kFrame;
}

int parse_rank_key(const std::string &key, int n_ranks) {
  if (key.empty() || key.size() > 9) return -1;
  long r = 0;
  for (char ch : key) {
    if (ch < '0' || ch > '9') return -1;
    r = r * 10 + (ch - '0');
  }
  if (key.size() > 1 && key[0] == '0') return -1;  // one spelling per rank
  return r < n_ranks ? int(r) : -1;
}

bool parse_add_delta(const std::string &val, int64_t *out) {
  if (val.empty() || val.size() > 20 || std::memchr(val.data(), '\0', val.size())) return false;
  errno = 0;
  char *end = nullptr;
  long long d = std::strtoll(val.c_str(), &end, 10);
  if (errno == ERANGE || !end || *end || !(val[0] == '-' || (val[0] >= '0' && val[0] <= '9'))) return false;
  *out = d;
  return true;
}

namespace {
// A decimal number without leading zeros at key[*i] (fits 64 bits); advances *i past it.
bool parse_decimal(const std::string &key, size_t *i, uint64_t *out) {
  size_t start = *i;
  uint64_t v = 0;
  while (*i < key.size() && key[*i] >= '0' && key[*i] <= '9') {
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, uint64_t(key[*i] - '0'), &v))
      return false;
    ++*i;
  }
  if (*i == start || (*i - start > 1 && key[start] == '0')) return false;
  *out = v;
  return true;
}
}  // namespace

bool parse_round_key(const std::string &key, uint64_t *seq) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return false;
  const std::string kind = key.substr(0, slash);
  if (kind != "bar" && kind != "ag" && kind != "bc") return false;
  size_t i = slash + 1;
  uint64_t v = 0;
  if (!parse_decimal(key, &i, &v)) return false;
  if (i != key.size() && key[i] != '/') return false;
  *seq = v;
  return true;
}

bool parse_team_round_key(const std::string &key, TeamRoundKey *out) {
  if (key.compare(0, 3, "tm/") != 0) return false;
  size_t i = 3;
  uint64_t index = 0, start = 0, stride = 0, size = 0, seq = 0;
  if (!parse_decimal(key, &i, &index) || i >= key.size() || key[i++] != '.') return false;
  if (!parse_decimal(key, &i, &start) || i >= key.size() || key[i++] != '.') return false;
  if (!parse_decimal(key, &i, &stride) || i >= key.size() || key[i++] != '.') return false;
  if (!parse_decimal(key, &i, &size)) return false;
  const size_t team_end = i;
  if (i >= key.size() || key[i++] != '/') return false;
  if (!parse_decimal(key, &i, &seq)) return false;
  if (i != key.size() && key[i] != '/') return false;
  if (stride < 1 || size < 1) return false;
  (void)index;
  out->team = key.substr(3, team_end - 3);
  out->start = start;
  out->stride = stride;
  out->size = size;
  out->seq = seq;
  return true;
}

bool secret_matches(const std::string &presented, const std::string &secret) {
  // Length is not secret (it leaks through timing of the read anyway); contents are compared
  // without an early exit.
  if (presented.size() != secret.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < secret.size(); ++i) diff |= unsigned(uint8_t(presented[i] ^ secret[i]));
  return diff == 0;
}

}  // namespace tdist
