// Bad input to the public C API and the CPU device ABI, in one single-PE process: every bad call
// fails with INVALID_PARAM (or a launch fault) naming the problem, writes nothing, never hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "tdist/CPU/launch.h"
#include "tdist/tdist.h"

namespace {

class OnePe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tdist_uniqueid_t uid;
    ASSERT_EQ(tdist_get_uniqueid(&uid), TDIST_SUCCESS);
    tdist_init_attr_t a;
    tdist_init_attr_default(&a);
    a.local_mem_size = 1 << 20;
    a.option_attr.backend = TDIST_BACKEND_CPU;
    a.option_attr.wait_timeout_ms = 0;  // unbounded: a bad wait must return by validation alone
    ASSERT_EQ(tdist_init_with_uniqueid(&uid, 0, 1, &a), TDIST_SUCCESS) << tdist_last_error_message();
  }
  static void TearDownTestSuite() { EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS) << tdist_last_error_message(); }
  void SetUp() override { tdist_clear_error(); }

  static void expect_invalid(const char *needle) {
    EXPECT_EQ(tdist_last_error(), TDIST_ERR_INVALID_PARAM);
    std::string m = tdist_last_error_message();
    EXPECT_NE(m.find(needle), std::string::npos) << m;
    tdist_clear_error();
  }
};

double seconds_of(void (*fn)()) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_F(OnePe, PutPastTheEndOfTheHeapIsRefused) {
  const tdist_device_state_t *s = tdist_host_device_state();
  auto *buf = static_cast<uint8_t *>(tdist_malloc(4096));
  ASSERT_NE(buf, nullptr);
  std::memset(buf, 7, 4096);
  std::string big(2 << 20, 'x');  // larger than the whole heap
  tdist_putmem(buf, big.data(), big.size(), 0);
  expect_invalid("run past the end of the symmetric heap");
  EXPECT_EQ(buf[0], 7);  // nothing was written
  char *last = static_cast<char *>(s->heap_base) + s->heap_size - 8;
  tdist_getmem(big.data(), last, 16, 0);
  expect_invalid("run past the end");
  tdist_putmem_nbi(last, big.data(), 9, 0);
  expect_invalid("run past the end");
  tdist_putmem(last, big.data(), 8, 0);  // exactly to the end is fine
  EXPECT_EQ(tdist_last_error(), TDIST_SUCCESS) << tdist_last_error_message();
  tdist_putmem(buf, nullptr, 16, 0);
  expect_invalid("from NULL");
  EXPECT_EQ(tdist_free(buf), TDIST_SUCCESS);
}

TEST_F(OnePe, SignalsNeedAlignmentAndAKnownOp) {
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  tdist_signal_op(sig, 5, 3, 0);
  expect_invalid("signal op 3");
  EXPECT_EQ(sig[0], 0u);
  tdist_signal_op(reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(sig) + 4), 5, TDIST_SIGNAL_SET, 0);
  expect_invalid("not 8-byte aligned");
  char data[16] = {1};
  tdist_putmem_signal(sig + 2, data, 16, sig, 1, 0, 0);
  expect_invalid("signal op 0");
  EXPECT_EQ(sig[2], 0u);  // no data without its signal
  tdistx_notify_int32(reinterpret_cast<int32_t *>(sig), 1, 0, 9);
  expect_invalid("signal op 9");
  tdist_signal_op(sig, 5, TDIST_SIGNAL_ADD, 7);
  expect_invalid("PE 7 out of range");
  tdist_signal_op(sig, 5, TDIST_SIGNAL_ADD, 0);
  EXPECT_EQ(sig[0], 5u);
  EXPECT_EQ(tdist_free(sig), TDIST_SUCCESS);
}

TEST_F(OnePe, BadWaitsReturnAtOnce) {
  // With wait_timeout_ms = 0 these would hang forever without validation.
  EXPECT_LT(seconds_of([] { tdist_signal_wait_until(nullptr, TDIST_CMP_EQ, 1); }), 1.0);
  expect_invalid("not a 8-byte aligned");
  static uint64_t word = 0;
  EXPECT_LT(seconds_of([] { tdist_signal_wait_until(&word, 42, 1); }), 1.0);
  expect_invalid("wait comparison 42");
  EXPECT_LT(seconds_of([] { tdist_int64_wait_until(reinterpret_cast<int64_t *>(reinterpret_cast<char *>(&word) + 1), TDIST_CMP_EQ, 1); }), 1.0);
  expect_invalid("aligned");
}

TEST_F(OnePe, BadCallInsideAKernelFaultsTheLaunch) {
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  int rc = tdist_cpu_launch(2, [](void *p) { tdist_signal_op(static_cast<uint64_t *>(p), 1, 77, 0); }, sig);
  EXPECT_EQ(rc, TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("invalid device call"), std::string::npos);
  rc = tdist_cpu_launch(1, [](void *p) { tdist_signal_wait_until(static_cast<uint64_t *>(p), -1, 1); }, sig);
  EXPECT_EQ(rc, TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_cpu_launch(1, [](void *) {}, nullptr), TDIST_SUCCESS);  // reported and cleared
  EXPECT_EQ(tdist_free(sig), TDIST_SUCCESS);
}

TEST_F(OnePe, HostApiArguments) {
  EXPECT_EQ(tdist_malloc(0), nullptr);
  expect_invalid("size must be > 0");
  EXPECT_EQ(tdist_align(3, 64), nullptr);
  expect_invalid("not a power of two");
  EXPECT_EQ(tdist_align(4u << 20, 64), nullptr);
  expect_invalid("exceeds the largest supported");
  void *a = tdist_align(1u << 20, 64);  // an aligned address, not only an aligned offset
  ASSERT_NE(a, nullptr) << tdist_last_error_message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (1u << 20), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tdist_host_device_state()->heap_base) % (2u << 20), 0u);
  EXPECT_EQ(tdist_free(a), TDIST_SUCCESS);
  EXPECT_EQ(tdist_calloc(SIZE_MAX / 2, 4), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_MALLOC_FAILED);
  int local = 0;
  EXPECT_EQ(tdist_free(&local), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_heap_offset(&local), -1);
  EXPECT_EQ(tdist_ctrl_allgather(nullptr, nullptr, 8), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_ctrl_broadcast(&local, sizeof local, 3), TDIST_ERR_INVALID_PARAM);
  expect_invalid("root 3 out of range");
  tdist_team_t t;
  EXPECT_EQ(tdist_team_split_strided(TDIST_TEAM_WORLD, 0, 0, 1, &t), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_team_destroy(TDIST_TEAM_WORLD), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_team_my_pe(99), -1);
  EXPECT_EQ(tdist_cpu_launch(TDIST_CPU_MAX_GRID + 1, [](void *) {}, nullptr), TDIST_ERR_INVALID_PARAM);
}
