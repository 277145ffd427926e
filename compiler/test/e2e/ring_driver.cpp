// End-to-end CPU test of the compiler: runs the ring-exchange kernel (ring_exchange.mlir,
// compiled by tdist-opt --tdist-pipeline=cpu + mlir-translate + clang-19) on every PE and checks
// the data exactly. Started by ctest as `tdist-run -n 4 -- compiler_e2e_ring`; exits non-zero on
// any mismatch, so tdist-run fails the job if any rank fails.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "tdist/CPU/launch.h"
#include "tdist/abi.h"
#include "tdist/tdist.h"

extern "C" void ring_exchange(void *buf);  // from ring_exchange.mlir

namespace {
// Layout of ring_exchange.mlir (keep in sync with its header comment).
constexpr int kGrid = 4;        // programs per PE (the kernel supports up to 8)
constexpr int64_t kWords = 64;  // i64 words per program
constexpr size_t kSlotBase = 64, kSlotStride = 64;
constexpr size_t kInboxWord = 72, kOutWord = 584;
constexpr size_t kBytes = (kOutWord + 8 * kWords) * sizeof(int64_t);
constexpr int64_t kMult = 1000003;

#define CHECK_OK(call)                                                                         \
  do {                                                                                         \
    int rc_ = (call);                                                                          \
    if (rc_ != TDIST_SUCCESS) {                                                                \
      std::fprintf(stderr, "ring_driver: %s failed: %s (%s)\n", #call, tdist_status_name(rc_), \
                   tdist_last_error_message());                                                \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)
}  // namespace

int main() {
  CHECK_OK(tdist_init_from_env(nullptr));
  const int me = tdist_my_pe(), n = tdist_n_pes();
  const int prev = (me - 1 + n) % n;

  auto *buf = static_cast<int64_t *>(tdist_malloc(kBytes));
  if (!buf) {
    std::fprintf(stderr, "ring_driver: tdist_malloc(%zu) failed: %s\n", kBytes, tdist_last_error_message());
    return 1;
  }
  // Fresh salt per run (from PE 0), poisoned inbox/out so a missed write cannot pass.
  int64_t salt = static_cast<int64_t>(std::random_device{}() & 0x7fffffff) << 16;
  CHECK_OK(tdist_ctrl_broadcast(&salt, sizeof salt, 0));
  std::memset(buf, 0, kBytes);
  buf[0] = salt;
  for (size_t w = kInboxWord; w < kOutWord + kGrid * kWords; ++w) buf[w] = INT64_C(-0x5a5a5a5a5a5a5a5b);
  CHECK_OK(tdist_host_barrier_all());  // every PE's buffer is initialised before anyone writes

  CHECK_OK(tdist_cpu_launch(kGrid, ring_exchange, buf));
  CHECK_OK(tdist_host_barrier_all());

  int errors = 0;
  auto *bytes = reinterpret_cast<unsigned char *>(buf);
  for (int p = 0; p < kGrid; ++p) {
    int32_t slot;
    std::memcpy(&slot, bytes + kSlotBase + p * kSlotStride, sizeof slot);
    if (slot != 1 && errors++ < 8)
      std::fprintf(stderr, "ring_driver[pe %d]: slot %d = %d, expected 1\n", me, p, slot);
  }
  for (int64_t idx = 0; idx < kGrid * kWords; ++idx) {
    const int64_t want = salt + prev * kMult + idx;
    const int64_t in = buf[kInboxWord + idx], out = buf[kOutWord + idx];
    if ((in != want || out != want + 1) && errors++ < 8)
      std::fprintf(stderr,
                   "ring_driver[pe %d]: word %" PRId64 ": inbox %" PRId64 " out %" PRId64
                   ", expected %" PRId64 " / %" PRId64 " (from pe %d)\n",
                   me, idx, in, out, want, want + 1, prev);
  }
  CHECK_OK(tdist_free(buf));
  CHECK_OK(tdist_finalize());
  if (errors) {
    std::fprintf(stderr, "ring_driver[pe %d]: FAILED with %d errors\n", me, errors);
    return 1;
  }
  std::printf("ring_driver[pe %d of %d]: %d programs x %" PRId64 " words from pe %d OK\n", me, n, kGrid,
              kWords, prev);
  return 0;
}
