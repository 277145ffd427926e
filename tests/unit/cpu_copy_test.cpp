// tdisti_cpu_copy (include/tdist/CPU/copy.h), the CPU backend's one byte copy: exact at every
// distance between destination and source modulo 4 KiB (the SSE2 loop's and memcpy's), for sizes
// on both sides of the loop's range and with ragged tails; nothing outside the destination range
// is written.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tdist/CPU/copy.h"

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kGuard = 256;  // poisoned bytes checked on each side of the destination range
constexpr unsigned char kPoison = 0xA5;

struct PageBuffer {
  explicit PageBuffer(size_t bytes) : size((bytes + kPage - 1) / kPage * kPage) {
    p = static_cast<unsigned char *>(std::aligned_alloc(kPage, size));
  }
  ~PageBuffer() { std::free(p); }
  PageBuffer(const PageBuffer &) = delete;
  PageBuffer &operator=(const PageBuffer &) = delete;
  size_t size;
  unsigned char *p;
};

std::vector<size_t> distances() {
  std::vector<size_t> d;
  for (size_t i = 0; i <= 130; ++i) d.push_back(i);
  for (size_t i = 4090; i <= 4100; ++i) d.push_back(i % kPage);
  return d;
}

const size_t kSizes[] = {0, 1, 15, 16, 17, 4095, 4096, 65536 + 3, 262144};
const size_t kSrcOffsets[] = {0, 5};  // page-aligned and odd sources
constexpr size_t kMaxSize = 262144;

TEST(CpuCopy, ExactAtEveryDistance) {
  std::mt19937_64 rng(12345);
  // separate allocations: source and destination never overlap
  PageBuffer src(kGuard + kPage + kMaxSize);
  PageBuffer dst(kGuard + 2 * kPage + kMaxSize);
  ASSERT_NE(src.p, nullptr);
  ASSERT_NE(dst.p, nullptr);
  for (size_t i = 0; i < src.size; i += 8) {
    uint64_t v = rng();
    std::memcpy(src.p + i, &v, 8);
  }
  size_t looped = 0;
  for (size_t so : kSrcOffsets) {
    const unsigned char *s = src.p + kGuard + so;
    for (size_t dist : distances()) {
      // (d - s) mod 4096 == dist; both buffers are page-aligned
      unsigned char *d = dst.p + kPage + (kGuard + so + dist) % kPage;
      ASSERT_EQ((reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(s)) % kPage, dist);
      for (size_t n : kSizes) {
        std::memset(dst.p, kPoison, dst.size);
        looped += tdisti_cpu_copy_uses_loop(d, s, n) ? 1 : 0;
        tdisti_cpu_copy(d, s, n);
        ASSERT_EQ(std::memcmp(d, s, n), 0) << "n=" << n << " distance=" << dist << " src offset=" << so;
        size_t lo = size_t(d - dst.p), hi = lo + n;
        for (size_t i = 0; i < dst.size; ++i) {
          if (i >= lo && i < hi) continue;
          ASSERT_EQ(dst.p[i], kPoison)
              << "byte " << int64_t(i) - int64_t(lo) << " from the destination, n=" << n
              << " distance=" << dist << " src offset=" << so;
        }
      }
    }
  }
#if defined(__x86_64__)
  // distances 1..63, and 4097..4100 (1..4 again), at 4095, 4096, 65539 and 262144 bytes, for
  // both source offsets
  EXPECT_EQ(looped, size_t(2 * (63 + 4) * 4));
#else
  EXPECT_EQ(looped, size_t(0));
#endif
}

TEST(CpuCopy, LoopRange) {
  // addresses only (nothing is copied): a source at 1 MiB
  auto at = [](uintptr_t a) { return reinterpret_cast<const void *>(a); };
  const uintptr_t s0 = uintptr_t(1) << 20;
  for (size_t dist : {size_t(0), size_t(64), size_t(100), size_t(4032), size_t(4095)})
    EXPECT_FALSE(tdisti_cpu_copy_uses_loop(at(s0 + dist), at(s0), 65536)) << dist;
  EXPECT_FALSE(tdisti_cpu_copy_uses_loop(at(s0 + 16), at(s0), TDISTI_CPU_COPY_LOOP_MIN - 1));
  EXPECT_FALSE(tdisti_cpu_copy_uses_loop(at(s0 + 16), at(s0), TDISTI_CPU_COPY_LOOP_MAX));
#if defined(__x86_64__)
  for (size_t dist : {size_t(1), size_t(16), size_t(63)}) {
    EXPECT_TRUE(tdisti_cpu_copy_uses_loop(at(s0 + dist), at(s0), TDISTI_CPU_COPY_LOOP_MIN)) << dist;
    EXPECT_TRUE(tdisti_cpu_copy_uses_loop(at(s0 + dist), at(s0), TDISTI_CPU_COPY_LOOP_MAX - 1)) << dist;
    // destination below the source: 4096 - 4080 = 16 modulo 4 KiB
    EXPECT_TRUE(tdisti_cpu_copy_uses_loop(at(s0 + dist), at(s0 + dist + 4080), 65536)) << dist;
  }
#endif
}

}  // namespace
