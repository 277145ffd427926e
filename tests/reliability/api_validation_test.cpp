// Bad input to the public C API and the CPU device ABI, in one single-PE process: every bad call
// fails with INVALID_PARAM (or a launch fault) naming the problem, writes nothing, never hangs.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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
  static void TearDownTestSuite() {
    EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS) << tdist_last_error_message();
  }
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
  EXPECT_LT(seconds_of([] {
              tdist_int64_wait_until(reinterpret_cast<int64_t *>(reinterpret_cast<char *>(&word) + 1),
                                     TDIST_CMP_EQ, 1);
            }),
            1.0);
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

// Numeric environment variables are parsed strictly: a malformed value fails tdist_init (and
// tdist_init_attr_default) naming the variable and the value, even when an explicit attribute
// would override it; nothing falls back to "unbounded" or wraps around.
namespace {

struct EnvVar {
  const char *name;
  EnvVar(const char *n, const char *v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name); }
};

int init_one_pe(uint64_t wait_timeout_ms = TDIST_DEFAULT_WAIT_TIMEOUT_MS) {
  tdist_uniqueid_t uid;
  if (tdist_get_uniqueid(&uid) != TDIST_SUCCESS) return tdist_last_error();
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 1 << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  a.option_attr.wait_timeout_ms = wait_timeout_ms;
  tdist_clear_error();
  return tdist_init_with_uniqueid(&uid, 0, 1, &a);
}

}  // namespace

TEST(Environment, MalformedWaitTimeoutFailsInitNamingIt) {
  ASSERT_FALSE(tdist_initialized());
  for (const char *bad :
       {"5s", "abc", "-1", "18446744073710", " 5", "+5", "1e3", "0x10", "99999999999999999999999"}) {
    EnvVar e("TDIST_WAIT_TIMEOUT_MS", bad);
    tdist_init_attr_t a;
    EXPECT_EQ(tdist_init_attr_default(&a), TDIST_ERR_INVALID_PARAM) << bad;
    EXPECT_EQ(a.option_attr.wait_timeout_ms, uint64_t(TDIST_DEFAULT_WAIT_TIMEOUT_MS))
        << bad;                                                   // never unbounded
    EXPECT_EQ(init_one_pe(100), TDIST_ERR_INVALID_PARAM) << bad;  // explicit value: still refused
    std::string m = tdist_last_error_message();
    EXPECT_NE(m.find("TDIST_WAIT_TIMEOUT_MS"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
    EXPECT_FALSE(tdist_initialized());
    if (tdist_initialized()) tdist_finalize();
  }
}

TEST(Environment, WellFormedWaitTimeoutIsTheDefault) {
  {
    EnvVar e("TDIST_WAIT_TIMEOUT_MS", "18446744073709");  // the largest that fits in nanoseconds
    tdist_init_attr_t a;
    EXPECT_EQ(tdist_init_attr_default(&a), TDIST_SUCCESS);
    EXPECT_EQ(a.option_attr.wait_timeout_ms, 18446744073709ull);
  }
  EnvVar e("TDIST_WAIT_TIMEOUT_MS", "250");
  tdist_init_attr_t a;
  ASSERT_EQ(tdist_init_attr_default(&a), TDIST_SUCCESS);
  EXPECT_EQ(a.option_attr.wait_timeout_ms, 250u);
  ASSERT_EQ(init_one_pe(a.option_attr.wait_timeout_ms), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(tdist_host_device_state()->wait_timeout_ns, 250000000ull);
  EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS);
}

TEST(Environment, ExplicitTimeoutThatOverflowsIsRefused) {
  EXPECT_EQ(init_one_pe(18446744073710ull), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("wait_timeout_ms 18446744073710"), std::string::npos)
      << tdist_last_error_message();
  EXPECT_FALSE(tdist_initialized());
}

TEST(Environment, OtherNumericVariables) {
  {
    EnvVar e("TDIST_DEBUG", "yes");
    EXPECT_EQ(init_one_pe(), TDIST_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(tdist_last_error_message()).find("TDIST_DEBUG='yes'"), std::string::npos)
        << tdist_last_error_message();
  }
  {
    EnvVar e("TDIST_STORE_PORT", "80x");
    EXPECT_EQ(init_one_pe(), TDIST_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(tdist_last_error_message()).find("TDIST_STORE_PORT='80x'"), std::string::npos)
        << tdist_last_error_message();
  }
  EnvVar r("RANK", "0"), w("WORLD_SIZE", "1x"), h("MASTER_ADDR", "127.0.0.1"), p("MASTER_PORT", "23456");
  EXPECT_EQ(tdist_init_from_env(nullptr), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("WORLD_SIZE='1x'"), std::string::npos)
      << tdist_last_error_message();
  EnvVar w2("WORLD_SIZE", "2"), r2("RANK", "2");
  EXPECT_EQ(tdist_init_from_env(nullptr), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("RANK='2'"), std::string::npos)
      << tdist_last_error_message();
  EXPECT_FALSE(tdist_initialized());
}

// Host-side waits (outside a launch) report through the status and the message, and a timeout
// does not poison the next wait.
TEST(HostWaits, TimeoutIsReportedAndTheNextWaitWaitsAgain) {
  ASSERT_EQ(init_one_pe(200), TDIST_SUCCESS) << tdist_last_error_message();
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  for (int round = 0; round < 2; ++round) {
    tdist_clear_error();
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(tdist_signal_wait_until(sig, TDIST_CMP_EQ, 1), 0u);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(s, 0.19) << "round " << round << ": the wait returned without waiting";
    EXPECT_LT(s, 5.0);
    EXPECT_EQ(tdist_last_error(), TDIST_ERR_TIMEOUT) << "round " << round;
    std::string m = tdist_last_error_message();
    EXPECT_NE(m.find("tdist_signal_wait_until"), std::string::npos) << m;
    EXPECT_NE(m.find("timed out"), std::string::npos) << m;
    EXPECT_NE(m.find("heap offset"), std::string::npos) << m;
  }
  tdist_clear_error();
  tdist_int64_wait_until(reinterpret_cast<int64_t *>(sig + 1), TDIST_CMP_GT, 0);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_TIMEOUT);
  tdist_clear_error();
  tdist_signal_op(sig, 1, TDIST_SIGNAL_SET, 0);
  EXPECT_EQ(tdist_signal_wait_until(sig, TDIST_CMP_EQ, 1), 1u);
  EXPECT_EQ(tdist_last_error(), TDIST_SUCCESS) << tdist_last_error_message();
  // Nothing is left for the next launch either.
  EXPECT_EQ(tdist_cpu_launch(1, [](void *) {}, nullptr), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(tdist_free(sig), TDIST_SUCCESS);
  EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS);
}

// After tdist_finalize the heap is unmapped: a wait on a heap signal must say so, not fault.
TEST(HostWaits, WaitAfterFinalizeIsNotInitialised) {
  ASSERT_EQ(init_one_pe(200), TDIST_SUCCESS) << tdist_last_error_message();
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  ASSERT_EQ(tdist_finalize(), TDIST_SUCCESS);
  tdist_clear_error();
  EXPECT_EQ(tdist_signal_wait_until(sig, TDIST_CMP_EQ, 1), 0u);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
  EXPECT_NE(std::string(tdist_last_error_message()).find("after tdist_finalize"), std::string::npos)
      << tdist_last_error_message();
  tdist_clear_error();
  EXPECT_EQ(tdist_signal_fetch(sig), 0u);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
  tdist_clear_error();
  tdist_uint64_wait_until(sig, TDIST_CMP_EQ, 1);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
  tdist_clear_error();
  EXPECT_EQ(tdistx_wait_int64(reinterpret_cast<int64_t *>(sig), 2, 1), 0);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
}

// A unique id carries a fresh store secret: a stranger who finds the store's port is refused.
TEST(UniqueId, CarriesAStoreSecret) {
  tdist_uniqueid_t uid, uid2;
  ASSERT_EQ(tdist_get_uniqueid(&uid), TDIST_SUCCESS);
  ASSERT_EQ(tdist_get_uniqueid(&uid2), TDIST_SUCCESS);
  std::string blob = uid.bytes;
  auto sp = blob.rfind(' ');
  ASSERT_NE(sp, std::string::npos);
  std::string secret = blob.substr(sp + 1);
  EXPECT_EQ(secret.size(), 32u) << blob;
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos) << blob;
  EXPECT_NE(secret, std::string(uid2.bytes).substr(std::string(uid2.bytes).rfind(' ') + 1));
  int port = std::atoi(blob.substr(blob.rfind(':') + 1, sp - blob.rfind(':') - 1).c_str());
  ASSERT_GT(port, 1024) << blob;

  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 1 << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  ASSERT_EQ(tdist_init_with_uniqueid(&uid, 0, 1, &a), TDIST_SUCCESS) << tdist_last_error_message();
  // A stranger's WATCH for rank 0 without the secret (the header is magic, op, key and value length).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  uint32_t hdr[4] = {0x564b4454u, 8, 1, 0};
  char frame[17];
  std::memcpy(frame, hdr, 16);
  frame[16] = '0';
  ASSERT_EQ(::send(fd, frame, sizeof frame, 0), ssize_t(sizeof frame));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char buf[256];
  for (ssize_t k; (k = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, size_t(k));
  ::close(fd);
  ASSERT_GE(reply.size(), 16u);
  uint32_t rh[4];
  std::memcpy(rh, reply.data(), 16);
  EXPECT_EQ(rh[1], 101u);  // REPLY_ERROR
  EXPECT_NE(reply.find("authentication failed"), std::string::npos) << reply.substr(16);
  EXPECT_EQ(tdist_ctrl_barrier(), TDIST_SUCCESS) << tdist_last_error_message();  // the job is unaffected
  EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS) << tdist_last_error_message();
}

// A heap larger than the host can back is refused at init, not accepted to fault when touched.
TEST(HeapCapacity, TooLargeForThisHostIsRefusedAtInit) {
  uint64_t total_kb = 0;
  std::FILE *f = std::fopen("/proc/meminfo", "r");
  ASSERT_NE(f, nullptr);
  char key[64];
  unsigned long long kb;
  while (std::fscanf(f, "%63s %llu kB\n", key, &kb) == 2)
    if (!std::strcmp(key, "MemTotal:") || !std::strcmp(key, "SwapTotal:")) total_kb += kb;
  std::fclose(f);
  const uint64_t want = std::max<uint64_t>(200ull << 30, 2 * (total_kb << 10));  // 200 GiB, the case
  if (want > (1ull << 40)) GTEST_SKIP() << "this host has more than 512 GiB of memory and swap";
  tdist_uniqueid_t uid;
  ASSERT_EQ(tdist_get_uniqueid(&uid), TDIST_SUCCESS);
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = want;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  EXPECT_EQ(tdist_init_with_uniqueid(&uid, 0, 1, &a), TDIST_ERR_SMEM);
  std::string m = tdist_last_error_message();
  EXPECT_NE(m.find("more than it can back"), std::string::npos) << m;
  EXPECT_FALSE(tdist_initialized());
  if (tdist_initialized()) tdist_finalize();
  // What fits still initialises.
  a.local_mem_size = 64u << 20;
  ASSERT_EQ(tdist_get_uniqueid(&uid), TDIST_SUCCESS);
  EXPECT_EQ(tdist_init_with_uniqueid(&uid, 0, 1, &a), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS);
}
