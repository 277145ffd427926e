// What the collective calls of the host API share (core/context.cpp: world allocation and control
// collectives; core/teams.cpp: team splits, team heaps, team collectives): the record every
// participant all-gathers, its comparison, and the bindings' rejections (tdist_collective_reject).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/context.hpp"

namespace tdist {

enum : uint32_t {
  kOpMalloc = 1,
  kOpCalloc = 2,
  kOpAlign = 3,
  kOpFree = 4,
  kOpSplit = 5,  // team_split_strided(_ex)
  kOpSplit2d = 6,
  kOpTeamMalloc = 7,
  kOpTeamAlign = 8,
  kOpTeamFree = 9,
};

// One record per collective heap call, all-gathered so every participant can compare every
// participant's call. No padding: it travels as bytes.
struct CollectiveRecord {
  uint64_t seq;  // the caller's count of such calls (world: every PE's; team: the team's own)
  uint32_t op;
  int32_t status;  // this participant's local verdict
  uint64_t size;
  uint64_t align;
  int64_t offset;
  uint32_t rejected = 0;  // a binding could not convert this PE's arguments: only the call counts
  uint32_t pad = 0;
  // Team splits: the arguments (split_2d: start = xrange), the team heaps asked for (rounded; x and y
  // for split_2d) and the world heap blocks planned for them, then the parent as this PE knows it.
  int32_t parent = 0;  // TDIST_TEAM_INVALID: this PE is outside the parent
  int32_t start = 0, stride = 0, count = 0;
  uint64_t heap[2] = {0, 0};
  int64_t block[2] = {-1, -1};
  int32_t pstart = 0, pstride = 0, psize = 0;  // psize 0: this PE does not know the parent's members
  int32_t pmember = 0;                         // this PE is a member of the parent
};
static_assert(sizeof(CollectiveRecord) == 112, "CollectiveRecord travels as bytes: no padding");

// The rejection a binding left for this thread's next collective call ("" if none), taken.
std::string take_reject();

// Heaps are whole pages of this size, so their bases are aligned to it and no larger alignment exists.
constexpr size_t kHeapGranule = 2u << 20;

// The checks every collective allocation (world or team heap) makes of its own arguments, in this
// order: a binding's rejection (`why` not empty), a zero size, an alignment that is not a power of
// two or exceeds kHeapGranule. The first that fails sets rec.status (and `why`, or rec.rejected);
// returns whether all passed, leaving the capacity checks to the caller.
bool check_alloc_args(CollectiveRecord &rec, std::string &why, size_t size, size_t align);

// "malloc(4096)", "team_free(heap offset 65536)", "team_split_2d(parent 0, xrange 2, ...)".
std::string describe(const CollectiveRecord &r);

// Who took part in a collective and how its errors name them.
struct Participants {
  std::function<std::string(size_t)> who;  // participant i: "PE 3", "member 1 (PE 3)"
  std::string scope;                       // "" or " in team 3 (world PEs 1, 3)"
  const char *everyone = "every PE";       // "every member"
  const char *calls = "collective call";   // "team call"
};

// Every world PE, "PE 3".
const Participants &world_pes();

// Compares the gathered records (each a CollectiveRecord and this participant's 200-byte reason) and
// throws the same error on every participant when the calls differ or any participant's verdict is
// an error. `mine` packs a record and its reason for the all-gather.
std::string pack_record(const CollectiveRecord &mine, const std::string &why);
std::vector<CollectiveRecord> check_records(const std::vector<std::string> &all, const Participants &p);

// The control collectives' header (tdist_ctrl_allgather / broadcast and the team all-gather): every
// participant's verdict and size travel first, so a bad call on one fails on every one.
struct CtrlHeader {
  int32_t status;
  int32_t root;
  uint64_t nbytes;
  char why[200];
};
std::string pack_ctrl(CtrlHeader mine, const std::string &why, const std::string &data);
std::vector<CtrlHeader> check_ctrl(const std::vector<std::string> &all, const Participants &p,
                                   std::vector<std::string> *payloads);

}  // namespace tdist
