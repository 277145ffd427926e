// C host API: teams (docs/CONTRACT.md section 8): the world-collective splits, team heaps and the
// team collectives, which only a team's members take part in.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <tuple>

#include "core/collective.hpp"
#include "core/context.hpp"
#include "core/error.hpp"

namespace tdist {

namespace {

constexpr size_t kSyncBytes = TDIST_TEAM_SYNC_BYTES;

// "world PEs 1, 3, 5" (up to 8 of them), else "world PEs 1, 3, ..., 127 (start 1, stride 2, 64 PEs)".
std::string members_text(int start, int stride, int size) {
  std::string s = "world PEs ";
  if (size <= 8) {
    for (int i = 0; i < size; ++i) s += strfmt("%s%d", i ? ", " : "", start + i * stride);
    return s;
  }
  return s + strfmt("%d, %d, ..., %d (start %d, stride %d, %d PEs)", start, start + stride,
                    start + (size - 1) * stride, start, stride, size);
}

std::string label(int index, const Team &t) {
  if (!t.known) return strfmt("team %d", index);
  return strfmt("team %d (%s)", index, members_text(t.start, t.stride, t.size).c_str());
}

// A rejection that a call failing on this PE alone takes with it.
std::string with_reject(const std::string &msg, const std::string &rejected) {
  return rejected.empty()
             ? msg
             : msg + strfmt(" (and this PE's binding rejected an argument: %s)", rejected.c_str());
}

// The team `index` as this PE holds it; a call that cannot take part fails here, on this PE alone
// (an unknown or destroyed team, a PE outside it, a team without a heap when `need_heap`).
Team &team_for_call(Context &c, tdist_team_t index, bool need_heap, const std::string &rejected) {
  TDIST_CHECK(index >= 0 && size_t(index) < c.teams.size(), TDIST_ERR_INVALID_PARAM, "%s",
              with_reject(strfmt("team %d does not exist", index), rejected).c_str());
  Team &t = c.teams[size_t(index)];
  TDIST_CHECK(t.valid, TDIST_ERR_INVALID_PARAM, "%s",
              with_reject(strfmt("team %d was destroyed", index), rejected).c_str());
  TDIST_CHECK(t.my_pe >= 0, TDIST_ERR_INVALID_PARAM, "%s",
              with_reject(strfmt("this PE (world PE %d) is not a member of %s: only members take part in its "
                                 "collectives",
                                 c.state.my_pe, label(index, t).c_str()),
                          rejected)
                  .c_str());
  TDIST_CHECK(
      !need_heap || t.heap, TDIST_ERR_INVALID_PARAM, "%s",
      with_reject(strfmt("%s has no team heap (split it with a tdist_team_config_t whose heap_bytes > 0)",
                         label(index, t).c_str()),
                  rejected)
          .c_str());
  return t;
}

// An entry the queries read (members or not); its members must be known.
const Team &team_for_query(Context &c, tdist_team_t index) {
  TDIST_CHECK(index >= 0 && size_t(index) < c.teams.size() && c.teams[size_t(index)].valid,
              TDIST_ERR_INVALID_PARAM, "team %d does not exist", index);
  const Team &t = c.teams[size_t(index)];
  TDIST_CHECK(t.known, TDIST_ERR_INVALID_PARAM,
              "team %d: this PE took part in its split from outside the parent team and does not know its "
              "members",
              index);
  return t;
}

// The next control-plane round of team `index` (this PE a member).
TeamScope next_round(int index, Team &t) {
  TeamScope s;
  s.prefix = ControlPlane::team_prefix(index, t.start, t.stride, t.size);
  for (int i = 0; i < t.size; ++i) s.members.push_back(t.start + i * t.stride);
  s.seq = t.round++;
  s.label = label(index, t);
  return s;
}

Participants team_members(const TeamScope &s) {
  Participants p;
  std::vector<int> m = s.members;
  p.who = [m](size_t i) { return strfmt("member %zu (PE %d)", i, m[i]); };
  p.scope = " in " + s.label;
  p.everyone = "every member";
  p.calls = "team call";
  return p;
}

// The team all-gather of `mine`; throws the same error on every member when the calls differ or any
// member's verdict is an error.
std::vector<CollectiveRecord> team_agree(Context &c, int index, Team &t, const CollectiveRecord &mine,
                                         const std::string &why) {
  TeamScope s = next_round(index, t);
  return check_records(c.cp->team_allgather(s, pack_record(mine, why)), team_members(s));
}

// heap_bytes rounded up to 256 (saturating: a request too large for any heap stays too large).
uint64_t round_heap(uint64_t b) {
  return b > UINT64_MAX - (kSyncBytes - 1) ? UINT64_MAX & ~uint64_t(kSyncBytes - 1)
                                           : (b + kSyncBytes - 1) / kSyncBytes * kSyncBytes;
}

// ---- splits ----

struct SplitArgs {
  uint32_t op;  // kOpSplit, kOpSplit2d
  tdist_team_t parent;
  int start, stride, size;  // split_2d: start = xrange
  const tdist_team_config_t *config[2];
  tdist_team_t *out[2];
  int nout;
};

// The parent's members as this PE knows them, and whether it is one.
struct ParentView {
  bool known = false, member = false;
  int start = 0, stride = 1, size = 0, my_index = -1;
};

void split(const SplitArgs &a, const char *api) {
  Context &c = require_context(api);
  for (int k = 0; k < a.nout; ++k)
    if (a.out[k]) *a.out[k] = TDIST_TEAM_INVALID;
  std::lock_guard<std::mutex> g(c.mu);
  CollectiveRecord rec{c.collective_seq++, a.op, TDIST_SUCCESS, 0, 0, -1};
  rec.parent = a.parent;
  rec.start = a.start;
  rec.stride = a.stride;
  rec.count = a.size;
  for (int k = 0; k < a.nout; ++k) rec.heap[k] = a.config[k] ? round_heap(a.config[k]->heap_bytes) : 0;
  // This PE's view of the parent: every PE's view travels with the records, so every PE can check
  // that the PEs of each parent agree about it (below).
  ParentView pv;
  const bool parent_exists =
      a.parent >= 0 && size_t(a.parent) < c.teams.size() && c.teams[size_t(a.parent)].valid;
  if (parent_exists && c.teams[size_t(a.parent)].known) {
    const Team &p = c.teams[size_t(a.parent)];
    pv = {true, p.my_pe >= 0, p.start, p.stride, p.size, p.my_pe};
    rec.pstart = p.start;
    rec.pstride = p.stride;
    rec.psize = p.size;
    rec.pmember = pv.member;
  }
  std::string why = take_reject();
  auto refuse = [&](int code, std::string w) {
    if (rec.status == TDIST_SUCCESS) rec.status = code, why = std::move(w);
  };
  if (!why.empty()) {
    rec.status = TDIST_ERR_INVALID_PARAM;
    rec.rejected = 1;
  }
  for (int k = 0; k < a.nout; ++k)
    if (!a.out[k])
      refuse(TDIST_ERR_INVALID_PARAM, a.nout == 1 ? "new_team is NULL"
                                      : k == 0    ? "xteam is NULL"
                                                  : "yteam is NULL");
  if (a.parent != TDIST_TEAM_INVALID && !parent_exists)
    refuse(TDIST_ERR_INVALID_PARAM, strfmt("parent team %d does not exist", a.parent));
  if (pv.known && a.op == kOpSplit &&
      (a.start < 0 || a.stride < 1 || a.size < 1 ||
       int64_t(a.start) + int64_t(a.stride) * (a.size - 1) >= pv.size))
    refuse(TDIST_ERR_INVALID_PARAM, strfmt("start %d, stride %d, size %d do not fit a parent team of %d PEs",
                                           a.start, a.stride, a.size, pv.size));
  if (pv.known && a.op == kOpSplit2d && (a.start < 1 || a.start > pv.size || pv.size % a.start != 0))
    refuse(TDIST_ERR_INVALID_PARAM,
           strfmt("xrange %d does not divide the parent team's %d PEs into x-teams", a.start, pv.size));
  // The team heaps: world heap blocks planned like a collective malloc (the same offsets on every
  // PE, members or not), their sync words zeroed before the agreement round, so no member's first
  // team barrier (after its split returned, so after this PE's record arrived) meets a stale epoch.
  std::optional<HeapAllocator> plan;
  for (int k = 0; k < a.nout && rec.status == TDIST_SUCCESS; ++k) {
    if (!rec.heap[k]) continue;
    if (rec.heap[k] > c.state.heap_size - TDIST_HEAP_RESERVED) {
      refuse(TDIST_ERR_MALLOC_FAILED, strfmt("a team heap of %llu bytes asked for, the world heap holds %llu",
                                             (unsigned long long)rec.heap[k],
                                             (unsigned long long)(c.state.heap_size - TDIST_HEAP_RESERVED)));
      break;
    }
    if (!plan) plan = *c.alloc;
    std::optional<size_t> off = plan->plan(size_t(rec.heap[k]), kSyncBytes);
    if (!off) {
      refuse(TDIST_ERR_MALLOC_FAILED,
             strfmt("world heap exhausted: a team heap of %llu bytes asked for, largest free block %zu bytes",
                    (unsigned long long)rec.heap[k], plan->largest_free()));
      break;
    }
    plan->commit(*off, size_t(rec.heap[k]));
    rec.block[k] = int64_t(*off);
  }
  if (rec.status == TDIST_SUCCESS)
    for (int k = 0; k < a.nout; ++k)
      if (rec.block[k] >= 0) c.transport->zero(size_t(rec.block[k]), kSyncBytes);

  auto recs = check_records(c.cp->allgather(pack_record(rec, why)), world_pes());
  // Every PE has every PE's view of the parent, so these verdicts are the same everywhere.
  const int32_t parent = [&] {
    for (const auto &r : recs)
      if (r.parent != TDIST_TEAM_INVALID) return r.parent;
    return TDIST_TEAM_INVALID;
  }();
  TDIST_CHECK(parent != TDIST_TEAM_INVALID, TDIST_ERR_INVALID_PARAM,
              "every PE passed TDIST_TEAM_INVALID as the parent team (no PE is in it)");
  bool anyone_inside = false;
  std::set<std::tuple<int32_t, int32_t, int32_t>> checked;
  for (size_t pe = 0; pe < recs.size(); ++pe) {
    const CollectiveRecord &r = recs[pe];
    if (!r.pmember) continue;
    anyone_inside = true;
    if (!checked.insert({r.pstart, r.pstride, r.psize}).second) continue;
    for (int i = 0; i < r.psize; ++i) {
      const int q = r.pstart + i * r.pstride;
      TDIST_CHECK(q >= 0 && size_t(q) < recs.size(), TDIST_ERR_INNER, "parent team member %d out of range",
                  q);
      const CollectiveRecord &o = recs[size_t(q)];
      TDIST_CHECK(o.parent == r.parent && o.pmember && o.pstart == r.pstart && o.pstride == r.pstride &&
                      o.psize == r.psize,
                  TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch: PE %zu splits team %d (%s) with PE %d in it, but PE %d %s", pe,
                  r.parent, members_text(r.pstart, r.pstride, r.psize).c_str(), q, q,
                  o.parent == TDIST_TEAM_INVALID
                      ? "passed TDIST_TEAM_INVALID (every member of the parent must pass its handle)"
                  : !o.pmember || o.psize == 0
                      ? strfmt("is not a member of the team %d it passed", o.parent).c_str()
                      : strfmt("knows parent team %d as %s", o.parent,
                               members_text(o.pstart, o.pstride, o.psize).c_str())
                            .c_str());
    }
  }
  TDIST_CHECK(anyone_inside, TDIST_ERR_INVALID_PARAM, "no PE is a member of the parent team %d", parent);
  for (size_t pe = 0; pe < recs.size(); ++pe)
    for (int k = 0; k < 2; ++k)
      TDIST_CHECK(recs[pe].block[k] == rec.block[k], TDIST_ERR_INNER,
                  "heaps diverged: PE %zu reserved a team heap at offset %lld, PE %d at %lld", pe,
                  (long long)recs[pe].block[k], c.state.my_pe, (long long)rec.block[k]);

  // Agreed: reserve the blocks and make the teams (the same indices on every PE).
  for (int k = 0; k < a.nout; ++k)
    if (rec.block[k] >= 0) {
      c.alloc->commit(size_t(rec.block[k]), size_t(rec.heap[k]));
      c.team_blocks.insert(size_t(rec.block[k]));
    }
  Team made[2];
  if (a.op == kOpSplit) {
    Team &t = made[0];
    if (pv.known) {
      t.start = pv.start + a.start * pv.stride;
      t.stride = pv.stride * a.stride;
      t.size = a.size;
      const int rel = c.state.my_pe - t.start;
      t.my_pe = (rel >= 0 && rel % t.stride == 0 && rel / t.stride < t.size) ? rel / t.stride : -1;
    } else {
      t.known = false;
    }
  } else if (pv.member) {
    const int xr = a.start, i = pv.my_index;
    made[0].start = pv.start + (i / xr) * xr * pv.stride;
    made[0].stride = pv.stride;
    made[0].size = xr;
    made[0].my_pe = i % xr;
    made[1].start = pv.start + (i % xr) * pv.stride;
    made[1].stride = pv.stride * xr;
    made[1].size = pv.size / xr;
    made[1].my_pe = i / xr;
  } else {
    made[0].known = made[1].known = false;  // outside the parent: in no x- or y-team
  }
  for (int k = 0; k < a.nout; ++k) {
    Team &t = made[k];
    t.valid = true;
    if (rec.block[k] >= 0) {
      t.heap_off = size_t(rec.block[k]);
      t.heap_bytes = size_t(rec.heap[k]);
      if (t.my_pe >= 0) t.heap.emplace(t.heap_off + kSyncBytes, t.heap_off + t.heap_bytes);
    }
    const bool mine = t.my_pe >= 0;
    c.teams.push_back(std::move(t));
    if (mine) *a.out[k] = tdist_team_t(c.teams.size() - 1);
  }
}

// ---- team heap ----

void *team_alloc(tdist_team_t team, uint32_t op, size_t size, size_t align, const char *api) {
  Context &c = require_context(api);
  std::lock_guard<std::mutex> g(c.mu);
  std::string why = take_reject();
  Team &t = team_for_call(c, team, /*need_heap=*/true, why);
  HeapAllocator &h = *t.heap;
  CollectiveRecord rec{t.alloc_seq++, op, TDIST_SUCCESS, size, align, -1};
  const size_t usable = t.heap_bytes - kSyncBytes;
  std::optional<size_t> off;
  if (!check_alloc_args(rec, why, size, align)) {  // rec.status and why say what was wrong
  } else if (size > usable || !(off = h.plan(size, align))) {
    rec.status = TDIST_ERR_MALLOC_FAILED;
    why = strfmt(
        "team %d's heap exhausted: %zu bytes requested; it holds %zu bytes after its %zu sync bytes, %zu "
        "free (largest free block %zu)",
        team, size, usable, kSyncBytes, h.free_total(), h.largest_free());
  } else {
    rec.offset = int64_t(*off);
  }
  auto recs = team_agree(c, team, t, rec, why);
  for (size_t m = 0; m < recs.size(); ++m)
    TDIST_CHECK(recs[m].offset == rec.offset, TDIST_ERR_INNER,
                "team heaps diverged: member %zu got offset %lld, member %d got %lld", m,
                (long long)recs[m].offset, t.my_pe, (long long)rec.offset);
  h.commit(*off, size);
  return static_cast<char *>(c.state.heap_base) + *off;
}

}  // namespace

TeamSync team_sync(int32_t team, const char *api) {
  Context &c = require_context(api);
  std::lock_guard<std::mutex> g(c.mu);
  const Team &t = team_for_call(c, team, /*need_heap=*/false, "");
  TDIST_CHECK(
      t.heap_bytes, TDIST_ERR_INVALID_PARAM,
      "%s has no team heap, where its device barrier's epoch lives (split it with a tdist_team_config_t "
      "whose heap_bytes > 0)",
      label(team, t).c_str());
  return TeamSync{t.heap_off + TDIST_TEAM_SYNC_DEVICE_BARRIER_OFF, t.start, t.stride, t.size, t.my_pe};
}

}  // namespace tdist

using namespace tdist;

extern "C" {

int tdist_team_my_pe(tdist_team_t team) {
  int r = -1;
  c_boundary("tdist_team_my_pe", [&] {
    Context &c = require_context("tdist_team_my_pe");
    TDIST_CHECK(team >= 0 && size_t(team) < c.teams.size() && c.teams[size_t(team)].valid,
                TDIST_ERR_INVALID_PARAM, "team %d does not exist", team);
    r = c.teams[size_t(team)].my_pe;
  });
  return r;
}

int tdist_team_n_pes(tdist_team_t team) {
  int r = -1;
  c_boundary("tdist_team_n_pes", [&] { r = team_for_query(require_context("tdist_team_n_pes"), team).size; });
  return r;
}

int tdist_team_translate_pe(tdist_team_t src, int src_pe, tdist_team_t dst) {
  int r = -1;
  c_boundary("tdist_team_translate_pe", [&] {
    Context &c = require_context("tdist_team_translate_pe");
    const Team &s = team_for_query(c, src), &d = team_for_query(c, dst);
    TDIST_CHECK(src_pe >= 0 && src_pe < s.size, TDIST_ERR_INVALID_PARAM,
                "PE %d out of range for a team of %d", src_pe, s.size);
    int world = s.start + src_pe * s.stride;
    int rel = world - d.start;
    r = (rel >= 0 && rel % d.stride == 0 && rel / d.stride < d.size) ? rel / d.stride : -1;
  });
  return r;
}

int tdist_team_world_pes(tdist_team_t team, int *start, int *stride, int *size) {
  return c_boundary("tdist_team_world_pes", [&] {
    const Team &t = team_for_query(require_context("tdist_team_world_pes"), team);
    if (start) *start = t.start;
    if (stride) *stride = t.stride;
    if (size) *size = t.size;
  });
}

int tdist_team_split_strided_ex(tdist_team_t parent, int start, int stride, int size,
                                const tdist_team_config_t *config, tdist_team_t *new_team) {
  return c_boundary("tdist_team_split_strided_ex", [&] {
    split({kOpSplit, parent, start, stride, size, {config, nullptr}, {new_team, nullptr}, 1},
          "tdist_team_split_strided_ex");
  });
}

int tdist_team_split_strided(tdist_team_t parent, int start, int stride, int size, tdist_team_t *new_team) {
  return c_boundary("tdist_team_split_strided", [&] {
    split({kOpSplit, parent, start, stride, size, {nullptr, nullptr}, {new_team, nullptr}, 1},
          "tdist_team_split_strided");
  });
}

int tdist_team_split_2d(tdist_team_t parent, int xrange, const tdist_team_config_t *xconfig,
                        tdist_team_t *xteam, const tdist_team_config_t *yconfig, tdist_team_t *yteam) {
  return c_boundary("tdist_team_split_2d", [&] {
    split({kOpSplit2d, parent, xrange, 0, 0, {xconfig, yconfig}, {xteam, yteam}, 2}, "tdist_team_split_2d");
  });
}

int tdist_team_destroy(tdist_team_t team) {
  return c_boundary("tdist_team_destroy", [&] {
    Context &c = require_context("tdist_team_destroy");
    std::lock_guard<std::mutex> g(c.mu);
    TDIST_CHECK(team > 0 && size_t(team) < c.teams.size() && c.teams[size_t(team)].valid,
                TDIST_ERR_INVALID_PARAM,
                "team %d cannot be destroyed (unknown, already destroyed, or the world)", team);
    Team &t = c.teams[size_t(team)];
    TDIST_CHECK(!t.heap || t.heap->live_blocks() == 0, TDIST_ERR_INVALID_PARAM,
                "%s cannot be destroyed: its heap still holds %zu live allocation(s) (tdist_team_free them "
                "first)",
                label(team, t).c_str(), t.heap ? t.heap->live_blocks() : size_t(0));
    t.valid = false;
    t.heap.reset();  // the block itself stays reserved in the world heap until finalize
  });
}

void *tdist_team_malloc(tdist_team_t team, size_t size) {
  void *p = nullptr;
  c_boundary("tdist_team_malloc", [&] { p = team_alloc(team, kOpTeamMalloc, size, 1, "tdist_team_malloc"); });
  return p;
}

void *tdist_team_align(tdist_team_t team, size_t alignment, size_t size) {
  void *p = nullptr;
  c_boundary("tdist_team_align",
             [&] { p = team_alloc(team, kOpTeamAlign, size, alignment, "tdist_team_align"); });
  return p;
}

int tdist_team_free(tdist_team_t team, void *ptr) {
  return c_boundary("tdist_team_free", [&] {
    Context &c = require_context("tdist_team_free");
    std::lock_guard<std::mutex> g(c.mu);
    std::string why = take_reject();
    Team &t = team_for_call(c, team, /*need_heap=*/true, why);
    CollectiveRecord rec{t.alloc_seq++, kOpTeamFree, TDIST_SUCCESS, 0, 0, -1};
    if (!why.empty()) {
      rec.status = TDIST_ERR_INVALID_PARAM;
      rec.rejected = 1;
    } else if (ptr) {
      const uintptr_t p = reinterpret_cast<uintptr_t>(ptr),
                      b = reinterpret_cast<uintptr_t>(c.state.heap_base);
      const uintptr_t lo = b + t.heap_off + kSyncBytes, hi = b + t.heap_off + t.heap_bytes;
      if (p < lo || p >= hi) {
        rec.status = TDIST_ERR_INVALID_PARAM;
        why = strfmt("%p is not in team %d's heap [%p, %p)", ptr, team, reinterpret_cast<void *>(lo),
                     reinterpret_cast<void *>(hi));
      } else {
        rec.offset = int64_t(p - b);
        if (t.heap->block_size(size_t(rec.offset)) == 0) {
          rec.status = TDIST_ERR_INVALID_PARAM;
          why = strfmt(
              "heap offset %lld is not a live allocation of team %d's heap (double free, or not the "
              "start of a block)",
              (long long)rec.offset, team);
        }
      }
    }
    team_agree(c, team, t, rec, why);
    if (ptr) t.heap->release(size_t(rec.offset));
  });
}

size_t tdist_team_heap_free_bytes(tdist_team_t team) {
  size_t n = 0;
  c_boundary("tdist_team_heap_free_bytes", [&] {
    Context &c = require_context("tdist_team_heap_free_bytes");
    std::lock_guard<std::mutex> g(c.mu);
    n = team_for_call(c, team, /*need_heap=*/true, "").heap->largest_free();
  });
  return n;
}

int tdist_team_barrier(tdist_team_t team) {
  return c_boundary("tdist_team_barrier", [&] {
    Context &c = require_context("tdist_team_barrier");
    std::lock_guard<std::mutex> g(c.mu);
    Team &t = team_for_call(c, team, /*need_heap=*/false, "");
    // As a SHMEM barrier: this PE's earlier puts are complete before any member leaves.
    c.transport->quiet();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    c.cp->team_barrier(next_round(team, t));
  });
}

int tdist_team_ctrl_allgather(tdist_team_t team, const void *in, void *out, size_t nbytes) {
  return c_boundary("tdist_team_ctrl_allgather", [&] {
    Context &c = require_context("tdist_team_ctrl_allgather");
    std::lock_guard<std::mutex> g(c.mu);
    std::string why = take_reject();
    Team &t = team_for_call(c, team, /*need_heap=*/false, why);
    CtrlHeader mine{TDIST_SUCCESS, -1, nbytes, {}};
    if (!why.empty())
      mine.status = TDIST_ERR_INVALID_PARAM;
    else if (nbytes && (!in || !out))
      mine.status = TDIST_ERR_INVALID_PARAM, why = "in/out is NULL";
    else if (nbytes > kStoreMaxValue - sizeof(CtrlHeader))
      mine.status = TDIST_ERR_INVALID_PARAM,
      why = strfmt("%zu bytes exceed the control plane's limit", nbytes);
    const std::string data = mine.status ? std::string() : std::string(static_cast<const char *>(in), nbytes);
    TeamScope s = next_round(team, t);
    const Participants who = team_members(s);
    std::vector<std::string> all;
    auto h = check_ctrl(c.cp->team_allgather(s, pack_ctrl(mine, why, data), /*same_size=*/false), who, &all);
    for (size_t m = 1; m < h.size(); ++m)
      TDIST_CHECK(h[m].nbytes == h[0].nbytes, TDIST_ERR_COLLECTIVE_MISMATCH,
                  "collective mismatch%s: %s contributed %llu bytes, %s %llu bytes", who.scope.c_str(),
                  who.who(0).c_str(), (unsigned long long)h[0].nbytes, who.who(m).c_str(),
                  (unsigned long long)h[m].nbytes);
    for (size_t m = 0; m < all.size(); ++m)
      std::memcpy(static_cast<char *>(out) + m * nbytes, all[m].data(), nbytes);
  });
}

}  // extern "C"
