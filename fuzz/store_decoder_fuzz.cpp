// libFuzzer target for the bootstrap store's protocol decoder (runtime/bootstrap/frame.*): the
// code that reads bytes from the network before anything is authenticated.
//
// The input is split into chunks (the first byte picks chunk sizes, as TCP may split a stream
// anywhere) and fed to a FrameDecoder with the server's pre-authentication limit; each decoded
// frame then goes through the same parsers the server applies (rank key, ADD delta, secret).
// Invariants checked (a violation aborts, which libFuzzer reports):
//   - no frame is ever larger than the limit in force when it was decoded;
//   - the decoder never returns a frame after an error;
//   - re-encoding a decoded frame and decoding it again gives the same frame;
//   - the parsers accept only canonical values (rank in range, delta round-trips).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/frame.hpp"

using namespace tdist;

namespace {
void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "store decoder invariant violated: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  FrameDecoder dec(kStoreMaxUnauthFrame);
  uint32_t limit = kStoreMaxUnauthFrame;
  bool failed = false;
  size_t pos = 0, step = 1 + (mode & 31);
  while (pos < size) {
    size_t n = std::min(step, size - pos);
    dec.append(reinterpret_cast<const char *>(data + pos), n);
    pos += n;
    Frame f;
    std::string why;
    while (true) {
      auto r = dec.next(&f, &why);
      if (r == FrameDecoder::kNeedMore) break;
      if (r == FrameDecoder::kError) {
        check(!why.empty(), "an error without a reason");
        failed = true;
        break;
      }
      check(!failed, "a frame after an error");
      check(f.key.size() + f.value.size() <= limit, "frame larger than the limit");
      check(f.key.size() <= kStoreMaxKey && f.value.size() <= kStoreMaxValue, "field too long");
      // Round trip through the encoder.
      std::string enc = encode_frame(f.op, f.key, f.value);
      FrameDecoder again;
      again.append(enc.data(), enc.size());
      Frame g;
      std::string why2;
      check(again.next(&g, &why2) == FrameDecoder::kFrame, "re-encoded frame does not decode");
      check(g.op == f.op && g.key == f.key && g.value == f.value, "round trip changed the frame");
      // The parsers the server applies.
      int rank = parse_rank_key(f.key, 1 << 20);
      if (rank >= 0) check(std::to_string(rank) == f.key, "non-canonical rank accepted");
      int64_t d;
      if (parse_add_delta(f.value, &d))
        check(std::to_string(d) == f.value || f.value[0] == '0' || f.value.rfind("-0", 0) == 0,
              "ADD delta does not round-trip");
      (void)secret_matches(f.value, "secret");
      // After a HELLO the server raises the limit (mode bit 7 simulates that).
      if ((mode & 0x80) && f.op == StoreOp::kHello) {
        limit = kStoreMaxKey + kStoreMaxValue;
        dec.set_max_payload(limit);
      }
    }
    if (failed) break;
  }
  return 0;
}
