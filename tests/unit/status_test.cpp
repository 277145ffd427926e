// The one status table (include/tdist/status.def) against the C enum, the ABI's frozen values and
// tdist_status_name(). The Python layers are checked against the same file by
// tests/python/test_status_table.py.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tdist/tdist.h"

namespace {

struct Row {
  int enumerator;     // TDIST_<name>, as the enum in tdist.h has it
  int value;          // the table's value
  const char *name;   // "TDIST_<name>"
  const char *shmem;  // aclshmem's name
};

constexpr Row kTable[] = {
#define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) \
  {TDIST_##name, (value), "TDIST_" #name, #shmem},
#include "tdist/status.def"
#undef TDIST_STATUS
};

// The values are ABI (compiled programs and the Python package carry them): a table edit that
// renumbers, drops or renames one fails to compile here.
static_assert(TDIST_SUCCESS == 0, "ABI");
static_assert(TDIST_ERR_INVALID_PARAM == -1, "ABI");
static_assert(TDIST_ERR_INVALID_VALUE == -2, "ABI");
static_assert(TDIST_ERR_SMEM == -3, "ABI");
static_assert(TDIST_ERR_INNER == -4, "ABI");
static_assert(TDIST_ERR_NOT_INITED == -5, "ABI");
static_assert(TDIST_ERR_BOOTSTRAP == -6, "ABI");
static_assert(TDIST_ERR_TIMEOUT == -7, "ABI");
static_assert(TDIST_ERR_MALLOC_FAILED == -8, "ABI");
static_assert(TDIST_ERR_COLLECTIVE_MISMATCH == -9, "ABI");
static_assert(TDIST_ERR_NOT_SUPPORTED == -100, "ABI");
static_assert(
    sizeof(kTable) / sizeof(kTable[0]) == 11,
    "a status was added or removed: extend the ABI checks above and tests/python/test_status_table.py");

TEST(StatusTable, ValuesAndNamesAreUnique) {
  std::set<int> values;
  std::set<std::string> names, shmem;
  for (const Row &r : kTable) {
    EXPECT_TRUE(values.insert(r.value).second) << "value " << r.value << " twice";
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " twice";
    EXPECT_TRUE(shmem.insert(r.shmem).second) << r.shmem << " twice";
  }
}

TEST(StatusTable, SuccessIsZeroAndErrorsAreNegative) {
  EXPECT_STREQ(kTable[0].name, "TDIST_SUCCESS");
  EXPECT_EQ(kTable[0].value, 0);
  for (size_t i = 1; i < sizeof(kTable) / sizeof(kTable[0]); ++i)
    EXPECT_LT(kTable[i].value, 0) << kTable[i].name << ": every error is negative (the C API's contract)";
}

TEST(StatusTable, StatusNameFollowsTheTable) {
  for (const Row &r : kTable) EXPECT_STREQ(tdist_status_name(r.value), r.name);
  EXPECT_STREQ(tdist_status_name(-10), "TDIST_ERR_UNKNOWN");
  EXPECT_STREQ(tdist_status_name(1), "TDIST_ERR_UNKNOWN");
}

}  // namespace
