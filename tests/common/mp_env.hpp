// Shared set-up for multi-process GoogleTest suites run under tdist-run: every rank runs the same
// binary; tdist is initialised once per process from the environment.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tdist/tdist.h"

namespace tdist_test {

inline tdist_init_attr_t default_attr(uint32_t engines = TDIST_ENGINE_MTE) {
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 64ull << 20;
  a.option_attr.data_op_engine_type = engines;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  a.option_attr.wait_timeout_ms = 20000;  // a stuck wait fails the test instead of hanging it
  a.option_attr.control_timeout_s = 60;
  return a;
}

class MpEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    tdist_init_attr_t a = default_attr();
    int rc = tdist_init_from_env(&a);
    ASSERT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
  }
  void TearDown() override {
    // After a failure the peers may be anywhere: leave without the collective finalize so the
    // launcher sees this rank's failure at once and stops the job.
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    if (tdist_initialized()) {
      int rc = tdist_finalize();
      EXPECT_EQ(rc, TDIST_SUCCESS) << tdist_last_error_message();
    }
  }
};

// Same seed on every PE when `shared`, else different per PE; fresh per run unless TDIST_TEST_SEED.
inline uint64_t run_seed() {
  static uint64_t seed = [] {
    uint64_t s = std::random_device{}();
    if (const char *e = std::getenv("TDIST_TEST_SEED")) s = std::strtoull(e, nullptr, 10);
    // agree on one seed so every PE can compute every other PE's data
    tdist_ctrl_broadcast(&s, sizeof s, 0);
    return s;
  }();
  return seed;
}

// Deterministic pseudo-random byte for (pe, index): every PE can recompute any PE's data.
inline uint8_t pattern(int pe, size_t i, uint64_t salt = 0) {
  uint64_t x = run_seed() ^ (uint64_t(pe + 1) * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull) ^ salt;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return uint8_t(x);
}

}  // namespace tdist_test

#define TDIST_TEST_MAIN()                                               \
  int main(int argc, char **argv) {                                     \
    ::testing::InitGoogleTest(&argc, argv);                             \
    /* a failing rank leaves at once, so peers never wait on it */      \
    GTEST_FLAG_SET(fail_fast, true);                                    \
    ::testing::AddGlobalTestEnvironment(new tdist_test::MpEnvironment); \
    return RUN_ALL_TESTS();                                             \
  }
