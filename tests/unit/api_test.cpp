// C API behaviour in a single process, no peers needed.
#include <gtest/gtest.h>

#include <cstring>

#include "core/transport.hpp"
#include "tdist/CPU/launch.h"
#include "tdist/tdist.h"

TEST(Api, CallsBeforeInitFailClearly) {
  ASSERT_FALSE(tdist_initialized());
  EXPECT_EQ(tdist_malloc(64), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
  EXPECT_NE(std::string(tdist_last_error_message()).find("before tdist_init"), std::string::npos);
  EXPECT_EQ(tdist_free(nullptr), TDIST_ERR_NOT_INITED);
  EXPECT_EQ(tdist_host_barrier_all(), TDIST_ERR_NOT_INITED);
  EXPECT_EQ(tdist_finalize(), TDIST_ERR_NOT_INITED);
  EXPECT_EQ(tdist_cpu_launch(1, [](void *) {}, nullptr), TDIST_ERR_NOT_INITED);
  EXPECT_EQ(tdist_my_pe(), -1);
  EXPECT_EQ(tdist_ptr(reinterpret_cast<void *>(0x1000), 0), nullptr);
  EXPECT_EQ(tdist_last_error(), TDIST_ERR_NOT_INITED);
}

TEST(Api, AttrValidation) {
  tdist_init_attr_t a;
  ASSERT_EQ(tdist_init_attr_default(&a), TDIST_SUCCESS);
  EXPECT_EQ(a.option_attr.data_op_engine_type, uint32_t(TDIST_ENGINE_MTE));
  EXPECT_EQ(tdist_init(nullptr), TDIST_ERR_INVALID_PARAM);
  a.n_ranks = 2;
  a.my_rank = 2;
  std::strcpy(a.ip_port, "tcp://127.0.0.1:29555");
  EXPECT_EQ(tdist_init(&a), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("my_rank 2 out of range"), std::string::npos);
  a.my_rank = 0;
  a.option_attr.data_op_engine_type = 0x30;
  EXPECT_EQ(tdist_init(&a), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("data_op_engine_type"), std::string::npos);
  a.option_attr.data_op_engine_type = TDIST_ENGINE_ROCE;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  EXPECT_EQ(tdist_init(&a), TDIST_ERR_NOT_SUPPORTED);
  a.option_attr.data_op_engine_type = TDIST_ENGINE_MTE;
  a.local_mem_size = 0;
  EXPECT_EQ(tdist_init(&a), TDIST_ERR_INVALID_PARAM);
  a.local_mem_size = 1 << 20;
  std::strcpy(a.ip_port, "tcp://127.0.0.1:80");
  EXPECT_EQ(tdist_init(&a), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("port must be > 1024"), std::string::npos);
  EXPECT_FALSE(tdist_initialized());
}

TEST(Api, SingleRankLifecycleWithUniqueId) {
  tdist_uniqueid_t uid;
  ASSERT_EQ(tdist_get_uniqueid(&uid), TDIST_SUCCESS);
  EXPECT_EQ(std::strncmp(uid.bytes, "tdist-uid-v1 tcp://", 19), 0);
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 1 << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  ASSERT_EQ(tdist_init_with_uniqueid(&uid, 0, 1, &a), TDIST_SUCCESS) << tdist_last_error_message();
  EXPECT_EQ(tdist_my_pe(), 0);
  EXPECT_EQ(tdist_n_pes(), 1);
  void *p = tdist_malloc(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(tdist_ptr(p, 0), p);
  EXPECT_EQ(tdist_free(p), TDIST_SUCCESS);
  EXPECT_EQ(tdist_finalize(), TDIST_SUCCESS) << tdist_last_error_message();
  tdist_uniqueid_t junk{};
  std::strcpy(junk.bytes, "hello");
  EXPECT_EQ(tdist_init_with_uniqueid(&junk, 0, 1, &a), TDIST_ERR_INVALID_PARAM);
}

TEST(Api, StatusNames) {
  EXPECT_STREQ(tdist_status_name(TDIST_ERR_TIMEOUT), "TDIST_ERR_TIMEOUT");
  EXPECT_STREQ(tdist_status_name(TDIST_ERR_COLLECTIVE_MISMATCH), "TDIST_ERR_COLLECTIVE_MISMATCH");
  EXPECT_STREQ(tdist_status_name(12345), "TDIST_ERR_UNKNOWN");
}

TEST(DeviceSelection, OnePePerGpuOrShared) {
  using tdist::select_device;
  // 8 local PEs on 8 GPUs: one each; on 1 GPU: all share device 0; on 2: alternate.
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(select_device(-1, r, 8), r);
    EXPECT_EQ(select_device(-1, r, 1), 0);
    EXPECT_EQ(select_device(-1, r, 2), r % 2);
  }
  EXPECT_EQ(select_device(3, 0, 4), 3);  // explicit device_id wins
  try {
    select_device(4, 0, 4);
    ADD_FAILURE() << "accepted device 4 of 4";
  } catch (const tdist::Error &e) {
    EXPECT_EQ(e.code(), TDIST_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
  }
  try {
    select_device(-1, 0, 0);
    ADD_FAILURE() << "selected a device with none visible";
  } catch (const tdist::Error &e) {
    EXPECT_EQ(e.code(), TDIST_ERR_NOT_SUPPORTED);
  }
}
