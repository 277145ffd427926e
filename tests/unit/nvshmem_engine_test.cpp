// The NVIDIA backend's NVSHMEM engine where no GPU is needed: TDIST_ROCE_PEERS is parsed strictly,
// and a library that cannot be loaded makes the engine unavailable with a reason naming it (what a
// job across hosts then reports at init). Built with the NVIDIA backend only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "NVIDIA/nvshmem_engine.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace {

using tdist::RocePeers;

struct Env {
  Env(const char *k, const char *v) : key(k) {
    if (const char *o = std::getenv(k)) old = o, had = true;
    if (v)
      ::setenv(k, v, 1);
    else
      ::unsetenv(k);
  }
  ~Env() {
    if (had)
      ::setenv(key.c_str(), old.c_str(), 1);
    else
      ::unsetenv(key.c_str());
  }
  std::string key, old;
  bool had = false;
};

TEST(NvshmemEngine, RocePeersParsedStrictly) {
  {
    Env e("TDIST_ROCE_PEERS", nullptr);
    EXPECT_EQ(tdist::env_roce_peers(), RocePeers::kRemote);
  }
  {
    Env e("TDIST_ROCE_PEERS", "remote");
    EXPECT_EQ(tdist::env_roce_peers(), RocePeers::kRemote);
  }
  {
    Env e("TDIST_ROCE_PEERS", "all");
    EXPECT_EQ(tdist::env_roce_peers(), RocePeers::kAll);
  }
  {
    Env e("TDIST_ROCE_PEERS", "none");
    EXPECT_EQ(tdist::env_roce_peers(), RocePeers::kNone);
  }
  Env e("TDIST_ROCE_PEERS", "everyone");
  try {
    tdist::env_roce_peers();
    FAIL() << "a bad TDIST_ROCE_PEERS was accepted";
  } catch (const tdist::Error &err) {
    EXPECT_EQ(err.code(), TDIST_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(err.what()).find("'everyone'"), std::string::npos) << err.what();
  }
}

// The availability is decided once per process (the library is opened once): this is the only test
// of this binary that asks.
TEST(NvshmemEngine, UnloadableLibraryIsNamed) {
  Env e("TDIST_NVSHMEM_LIB", "/nonexistent/libnvshmem_host.so.3");
  std::string why;
  EXPECT_FALSE(tdist::nv::nvshmem_available(&why));
  // built against NVSHMEM's headers: the path it could not open; without them: that it was built so
  const bool named = why.find("/nonexistent/libnvshmem_host.so.3") != std::string::npos ||
                     why.find("built without NVSHMEM's headers") != std::string::npos;
  EXPECT_TRUE(named) << why;
  EXPECT_TRUE(tdist::nv::NvshmemEngine::device_bitcode().empty());
}

}  // namespace
