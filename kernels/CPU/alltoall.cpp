// Reverse (combine) and dispatch all-to-all: the seed's three variants (002) and a one-copy
// variant, on the CPU device ABI. Both directions move, for every (source PE r, target PE p,
// row s < S, head h < H), one D-vector:
//     in_r + p*in_rank + s*in_s + h*in_h   ->   out_p + r*out_rank + s*out_s + h*out_h
// so one set of kernels serves both; only the byte strides differ (see AllToAll::run_strided).
#include <algorithm>

#include "common.hpp"

namespace tdist::kernels::cpu {
namespace {

using detail::cdiv;
using detail::copy_rows;
using detail::notify_slot;
using detail::put_rows;
using detail::put_stable;
using detail::slot;
using detail::wait_slot;

struct A2AArgs {
  int me, W;
  int64_t S, H, D;
  int64_t es;  // element bytes
  const unsigned char *in;
  unsigned char *out;
  int64_t in_rank, in_s, in_h;     // byte strides of the input: (target PE, row, head)
  int64_t out_rank, out_s, out_h;  // byte strides of the output: (source PE, row, head)
  unsigned char *stage;            // symmetric staging memory
  int64_t *sig;                    // symmetric signal slots
  int64_t bs, bd, nbs, nbd;
  int nbuf;
  int64_t slot_rows;  // bulk, wait_notify: rows per rank slot of the staging memory
  int64_t region_b;   // wait_notify: first slot of region B
  bool stream;        // non-temporal stores into the output (working set beyond the cache)
};

// ---------------------------------------------------------------------------------------------
// pipeline (seed variant 1, "MTE"): producer/consumer pipeline, per-task signals, buffer_num buffers.
// Staging on every PE: [nbuf][bs rows][W*H][D]; row stride W*H*D elements.
// Slot of (buffer, source PE r, task t = block_d*H + h): (buf*W + r)*nbd*H + t, on the target.
// Producer: wait slot == 0 on the target (its consumer returned the credit), store the tile,
//           fence after all its tasks of the S block, then notify 1 per task.
// Consumer: wait slot == 1, copy the tile to the output, fence, notify 0 to itself.
// ---------------------------------------------------------------------------------------------
void a2a_pipeline_kernel(void *p) {
  const A2AArgs &a = *static_cast<const A2AArgs *>(p);
  const int pid = tdistx_program_id(0), n = tdistx_num_programs(0);
  const int role = pid % 2, lid = pid / 2, nr = n / 2;
  const int64_t W = a.W, H = a.H, D = a.D, es = a.es;
  const int64_t tasks = a.nbd * H * W;
  const int64_t stage_row = W * H * D * es;
  const int64_t buf_bytes = a.bs * stage_row;
  for (int64_t gs = 0; gs < a.nbs; ++gs) {
    const int64_t buf = gs % a.nbuf;
    const int64_t s0 = gs * a.bs, rows = std::min(a.bs, a.S - s0);
    int64_t *buf_sig = slot(a.sig, buf * W * a.nbd * H);
    if (role == 0) {
      for (int64_t t = lid; t < tasks; t += nr) {
        const int64_t target = (a.me + t % W) % W, tmp = t / W;
        const int64_t h = tmp % H, d0 = (tmp / H) * a.bd;
        const int64_t dn = std::min(a.bd, D - d0);
        int64_t *s = slot(buf_sig, a.me * a.nbd * H + tmp);
        auto *remote_sig = static_cast<int64_t *>(tdist_ptr(s, int(target)));
        auto *remote_stage = static_cast<unsigned char *>(tdist_ptr(a.stage, int(target)));
        wait_slot(remote_sig, 0);
        auto *dst = static_cast<unsigned char *>(tdistx_consume_token_ptr(remote_stage, 0)) +
                    buf * buf_bytes + (a.me * H + h) * D * es + d0 * es;
        const unsigned char *src = a.in + target * a.in_rank + s0 * a.in_s + h * a.in_h + d0 * es;
        copy_rows(dst, stage_row, src, a.in_s, rows, size_t(dn * es));
      }
      tdist_fence();
      for (int64_t t = lid; t < tasks; t += nr) {
        const int64_t target = (a.me + t % W) % W, tmp = t / W;
        notify_slot(slot(buf_sig, a.me * a.nbd * H + tmp), 1, int(target));
      }
    } else {
      for (int64_t t = lid; t < tasks; t += nr) {
        const int64_t r = t % W, tmp = t / W;
        const int64_t h = tmp % H, d0 = (tmp / H) * a.bd;
        const int64_t dn = std::min(a.bd, D - d0);
        wait_slot(slot(buf_sig, r * a.nbd * H + tmp), 1);
        auto *stage = static_cast<unsigned char *>(tdistx_consume_token_ptr(a.stage, 0));
        const unsigned char *src = stage + buf * buf_bytes + (r * H + h) * D * es + d0 * es;
        unsigned char *dst = a.out + r * a.out_rank + s0 * a.out_s + h * a.out_h + d0 * es;
        copy_rows(dst, a.out_s, src, stage_row, rows, size_t(dn * es), a.stream);
      }
      tdist_fence();
      for (int64_t t = lid; t < tasks; t += nr) {
        const int64_t r = t % W, tmp = t / W;
        notify_slot(slot(buf_sig, r * a.nbd * H + tmp), 0, a.me);
      }
    }
  }
}

// Role split of the bulk variants (bulk, wait_notify) (seed: "role A" senders are the producers with logical
// id < W, "role B" self-copy producers the rest). With grid/2 <= W there is no producer left for role B, so
// every producer also takes a share of the self-copy after its sends.
struct BulkRoles {
  bool sender, self_copy;
  int self_lid, self_n;
};
BulkRoles bulk_roles(int lid, int nr, int W) {
  if (nr > W) return {lid < W, lid >= W, lid - W, nr - W};
  return {true, true, lid, nr};
}

// Staging of the bulk variants: W rank slots of [slot_rows][H][D]; slot r != me receives r's
// bulk putmem, slot me holds the self-copy double buffer in its first nbuf*bs rows.
inline unsigned char *self_tile(const A2AArgs &a, int64_t buf, int64_t h, int64_t d0) {
  const int64_t row = a.H * a.D * a.es;
  return a.stage + a.me * a.slot_rows * row + buf * a.bs * row + h * a.D * a.es + d0 * a.es;
}

void self_copy_task(const A2AArgs &a, int64_t t, int64_t buf, int64_t s0, int64_t rows) {
  const int64_t h = t % a.H, d0 = (t / a.H) * a.bd, dn = std::min(a.bd, a.D - d0);
  const unsigned char *src = a.in + a.me * a.in_rank + s0 * a.in_s + h * a.in_h + d0 * a.es;
  copy_rows(self_tile(a, buf, h, d0), a.H * a.D * a.es, src, a.in_s, rows, size_t(dn * a.es));
}

void consume_task(const A2AArgs &a, int64_t r, int64_t tmp, int64_t gs, int64_t buf, int64_t s0,
                  int64_t rows) {
  const int64_t h = tmp % a.H, d0 = (tmp / a.H) * a.bd, dn = std::min(a.bd, a.D - d0);
  const int64_t row = a.H * a.D * a.es;
  const unsigned char *src =
      r == a.me ? self_tile(a, buf, h, d0)  // double-buffered self copy
                : a.stage + r * a.slot_rows * row + gs * a.bs * row + h * a.D * a.es + d0 * a.es;
  unsigned char *dst = a.out + r * a.out_rank + s0 * a.out_s + h * a.out_h + d0 * a.es;
  copy_rows(dst, a.out_s, src, row, rows, size_t(dn * a.es), a.stream);
}

// ---------------------------------------------------------------------------------------------
// bulk (seed variant 2, "UDMA"): phase 1, one bulk putmem (engine UDMA) of the whole (S, H, D) segment per
// peer, one program per peer; phase 2, tiled self copy into the double buffer; one barrier_all per S block
// covers both; then the consumers read (bulk slot for r != me, double buffer for r == me).
// buffer_num >= 2: the self copy of block s+1 overlaps the consumers of block s, and the
// barrier of block s+1 orders block s+2's copy after block s's reads.
// ---------------------------------------------------------------------------------------------
void a2a_bulk_kernel(void *p) {
  const A2AArgs &a = *static_cast<const A2AArgs *>(p);
  const int pid = tdistx_program_id(0), n = tdistx_num_programs(0);
  const int role = pid % 2, lid = pid / 2, nr = n / 2;
  const int W = a.W;
  const BulkRoles roles = bulk_roles(lid, nr, W);
  const int64_t seg = a.S * a.H * a.D * a.es;
  const int64_t slot_bytes = a.slot_rows * a.H * a.D * a.es;
  if (role == 0 && roles.sender) {
    for (int target = lid; target < W; target += (nr > W ? W : nr)) {
      if (target == a.me) continue;
      put_stable(a.stage + a.me * slot_bytes, a.in + target * a.in_rank, size_t(seg), target);
    }
  }
  const int64_t self_tasks = a.nbd * a.H;
  for (int64_t gs = 0; gs < a.nbs; ++gs) {
    const int64_t buf = gs % a.nbuf;
    const int64_t s0 = gs * a.bs, rows = std::min(a.bs, a.S - s0);
    if (role == 0 && roles.self_copy)
      for (int64_t t = roles.self_lid; t < self_tasks; t += roles.self_n) self_copy_task(a, t, buf, s0, rows);
    tdist_barrier_all();
    if (role == 1)
      for (int64_t t = lid; t < self_tasks * W; t += nr) consume_task(a, t % W, t / W, gs, buf, s0, rows);
  }
}

// ---------------------------------------------------------------------------------------------
// wait_notify (seed variant 3, "wait/notify optimisation"): bulk without the global barrier.
// Region A [nbs][W]: slot (gs, sender) is set on the receiver after the sender's putmem of S
//   block gs (putmem completes before it returns: no fence needed); written once, no credit.
// Region B [nbuf][nbd*H]: self-copy double buffer; producer waits 0, copies, fence, notifies 1;
//   the consumer waits 1, reads, fence, returns the credit with 0.
// ---------------------------------------------------------------------------------------------
void a2a_wait_notify_kernel(void *p) {
  const A2AArgs &a = *static_cast<const A2AArgs *>(p);
  const int pid = tdistx_program_id(0), n = tdistx_num_programs(0);
  const int role = pid % 2, lid = pid / 2, nr = n / 2;
  const int W = a.W;
  const BulkRoles roles = bulk_roles(lid, nr, W);
  const int64_t row = a.H * a.D * a.es;
  const int64_t slot_bytes = a.slot_rows * row;
  const int64_t tpb = a.nbd * a.H;  // self tasks per block
  int64_t *region_b = slot(a.sig, a.region_b);
  for (int64_t gs = 0; gs < a.nbs; ++gs) {
    const int64_t buf = gs % a.nbuf;
    const int64_t s0 = gs * a.bs, rows = std::min(a.bs, a.S - s0);
    if (role == 0) {
      if (roles.sender) {
        const int stride = nr > W ? W : nr;
        for (int target = lid; target < W; target += stride) {
          if (target == a.me) continue;
          put_stable(a.stage + a.me * slot_bytes + s0 * row, a.in + target * a.in_rank + s0 * a.in_s,
                     size_t(rows * row), target);
        }
        for (int target = lid; target < W; target += stride)
          if (target != a.me) notify_slot(slot(a.sig, gs * W + a.me), 1, target);
      }
      if (roles.self_copy) {
        for (int64_t t = roles.self_lid; t < tpb; t += roles.self_n) {
          wait_slot(slot(region_b, buf * tpb + t), 0);
          self_copy_task(a, t, buf, s0, rows);
        }
        tdist_fence();
        for (int64_t t = roles.self_lid; t < tpb; t += roles.self_n)
          notify_slot(slot(region_b, buf * tpb + t), 1, a.me);
      }
    } else {
      for (int64_t t = lid; t < tpb * W; t += nr) {
        const int64_t r = t % W, tmp = t / W;
        wait_slot(r == a.me ? slot(region_b, buf * tpb + tmp) : slot(a.sig, gs * W + r), 1);
        consume_task(a, r, tmp, gs, buf, s0, rows);
      }
      tdist_fence();
      for (int64_t t = lid; t < tpb * W; t += nr)
        if (t % W == a.me) notify_slot(slot(region_b, buf * tpb + t / W), 0, a.me);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One-copy variant: every program stores (target, S block) tasks straight into the target PE's
// symmetric output; targets are visited starting at me+1 so the PEs spread over the peers.
// Completion: a2a_direct_done_kernel (below) after the launch, one flag round, no host barrier.
// ---------------------------------------------------------------------------------------------
void a2a_direct_kernel(void *p) {
  const A2AArgs &a = *static_cast<const A2AArgs *>(p);
  const int pid = tdistx_program_id(0), n = tdistx_num_programs(0);
  const int64_t W = a.W, es = a.es, D = a.D, H = a.H;
  const bool heads_contiguous = a.in_h == D * es && a.out_h == D * es;
  const int64_t tasks = W * a.nbs;
  for (int64_t t = pid; t < tasks; t += n) {
    const int64_t target = (a.me + 1 + t % W) % W, gs = t / W;
    const int64_t s0 = gs * a.bs, rows = std::min(a.bs, a.S - s0);
    const unsigned char *src = a.in + target * a.in_rank + s0 * a.in_s;
    unsigned char *dst = a.out + a.me * a.out_rank + s0 * a.out_s;  // symmetric: target's copy is written
    if (heads_contiguous) {
      put_rows(dst, a.out_s, src, a.in_s, rows, size_t(H * D * es), int(target), a.stream, true);
    } else {
      for (int64_t h = 0; h < H; ++h)
        put_rows(dst + h * a.out_h, a.out_s, src + h * a.in_h, a.in_s, rows, size_t(D * es), int(target),
                 a.stream, true);
    }
  }
}

// After every program of this PE stored its tiles (the launch returned, quiet done): set flag
// (parity, me) = epoch at every PE (release), then wait for the W flags (parity, 0..W-1) here.
struct DirectDone {
  int64_t *flags;  // [2][W] slots, SLOT_I64 int64 apart
  int64_t W, me, parity;
  uint64_t epoch;
};

void a2a_direct_done_kernel(void *p) {
  const DirectDone &d = *static_cast<const DirectDone *>(p);
  auto *mine = reinterpret_cast<uint64_t *>(d.flags + (d.parity * d.W + d.me) * detail::kSlotI64);
  for (int64_t j = 0; j < d.W; ++j) tdist_signal_op(mine, d.epoch, TDIST_SIGNAL_SET, int((d.me + j) % d.W));
  for (int64_t r = 0; r < d.W; ++r)
    tdist_signal_wait_until(reinterpret_cast<uint64_t *>(d.flags + (d.parity * d.W + r) * detail::kSlotI64),
                            TDIST_CMP_EQ, d.epoch);
}

}  // namespace

const char *a2a_variant_name(A2AVariant v) {
  switch (v) {
    case A2AVariant::pipeline: return "pipeline";
    case A2AVariant::bulk: return "bulk";
    case A2AVariant::wait_notify: return "wait_notify";
    case A2AVariant::direct: return "direct";
  }
  return "?";
}

bool parse_a2a_variant(const std::string &s, A2AVariant *out) {
  for (A2AVariant v : {A2AVariant::pipeline, A2AVariant::bulk, A2AVariant::wait_notify, A2AVariant::direct}) {
    if (s == a2a_variant_name(v)) {
      *out = v;
      return true;
    }
  }
  // the former names (after the engines the seed named the variants for)
  static const struct {
    const char *name;
    A2AVariant v;
  } former[] = {{"mte", A2AVariant::pipeline},
                {"udma", A2AVariant::bulk},
                {"udma_wait_notify", A2AVariant::wait_notify},
                {"wn", A2AVariant::wait_notify}};
  for (const auto &f : former) {
    if (s == f.name) {
      *out = f.v;
      return true;
    }
  }
  return false;
}

int AllToAll::create(const AllToAllConfig &cfg_in, std::unique_ptr<AllToAll> *out) {
  using detail::fail;
  detail::clear_error();
  if (!out) return fail(TDIST_ERR_INVALID_PARAM, "AllToAll::create: out is null");
  out->reset();
  if (!tdist_initialized()) return fail(TDIST_ERR_NOT_INITED, "AllToAll::create before tdist_init");
  AllToAllConfig cfg = cfg_in;
  if (cfg.grid == 0) cfg.grid = cfg.variant == A2AVariant::direct ? 1 : 2;
  if (cfg.S < 1 || cfg.H < 1 || cfg.D < 1)
    return fail(TDIST_ERR_INVALID_PARAM, "AllToAll: S, H, D must be >= 1 (got %lld, %lld, %lld)",
                (long long)cfg.S, (long long)cfg.H, (long long)cfg.D);
  if (cfg.variant == A2AVariant::direct) {
    // No producer/consumer pairs: any grid; grid 1 runs on the calling thread (no thread start).
    if (cfg.grid < 1 || cfg.grid > TDIST_CPU_MAX_GRID)
      return fail(TDIST_ERR_INVALID_PARAM, "AllToAll: grid must be in [1, %d] for variant direct (got %d)",
                  TDIST_CPU_MAX_GRID, cfg.grid);
  } else if (cfg.grid < 2 || cfg.grid % 2 || cfg.grid > TDIST_CPU_MAX_GRID) {
    return fail(TDIST_ERR_INVALID_PARAM, "AllToAll: grid must be even, in [2, %d] (got %d)",
                TDIST_CPU_MAX_GRID, cfg.grid);
  }
  const bool bulk = cfg.variant == A2AVariant::bulk || cfg.variant == A2AVariant::wait_notify;
  if (bulk && cfg.direction != A2ADirection::reverse)
    return fail(TDIST_ERR_NOT_SUPPORTED,
                "AllToAll: variant %s needs each peer's segment contiguous: reverse direction only",
                a2a_variant_name(cfg.variant));
  if (cfg.variant == A2AVariant::pipeline && !detail::all_peers_mapped())
    return fail(
        TDIST_ERR_NOT_SUPPORTED,
        "AllToAll: variant pipeline waits on its peers' credit slots in place, which needs every peer's "
        "heap mapped here; some PE is on another host (the ROCE engine): use bulk, wait_notify or direct");
  if (cfg.buffer_num < (bulk ? 2 : 1))
    return fail(TDIST_ERR_INVALID_PARAM, "AllToAll: buffer_num must be >= %d for variant %s (got %d)",
                bulk ? 2 : 1, a2a_variant_name(cfg.variant), cfg.buffer_num);
  std::unique_ptr<AllToAll> k(new AllToAll());
  k->me_ = tdist_my_pe();
  k->world_ = tdist_n_pes();
  const int64_t W = k->world_, es = int64_t(dtype_size(cfg.dtype));
  if (cfg.block_d <= 0) cfg.block_d = std::min<int64_t>(cfg.D, 4096);
  cfg.block_d = std::min(cfg.block_d, cfg.D);
  if (cfg.block_s <= 0) {
    // About 512 KiB of staging per S block: big copies, still several blocks to pipeline.
    const int64_t row = (bulk ? 1 : W) * cfg.H * cfg.D * es;
    cfg.block_s = std::clamp<int64_t>((512 << 10) / std::max<int64_t>(row, 1), 1, cfg.S);
  }
  cfg.block_s = std::min(cfg.block_s, cfg.S);
  k->cfg_ = cfg;
  k->nbs_ = cdiv(cfg.S, cfg.block_s);
  k->nbd_ = cdiv(cfg.D, cfg.block_d);
  int64_t n_slots = 0;
  size_t stage_bytes = 0;
  switch (cfg.variant) {
    case A2AVariant::pipeline:
      stage_bytes = size_t(cfg.buffer_num) * cfg.block_s * W * cfg.H * cfg.D * es;
      n_slots = int64_t(cfg.buffer_num) * W * k->nbd_ * cfg.H;
      break;
    case A2AVariant::bulk:
    case A2AVariant::wait_notify:
      k->slot_rows_ = size_t(std::max<int64_t>(cfg.S, int64_t(cfg.buffer_num) * cfg.block_s));
      stage_bytes = size_t(W) * k->slot_rows_ * cfg.H * cfg.D * es;
      if (cfg.variant == A2AVariant::wait_notify)
        n_slots = k->nbs_ * W + int64_t(cfg.buffer_num) * k->nbd_ * cfg.H;
      break;
    case A2AVariant::direct:
      n_slots = 2 * W;  // completion flags [parity][source PE]
      break;
  }
  if (stage_bytes) {
    k->stage_ = static_cast<unsigned char *>(detail::sym_alloc(stage_bytes, "AllToAll staging"));
    if (!k->stage_) return detail::alloc_status();
  }
  if (n_slots) {
    k->signals_ = detail::sym_alloc_signals(n_slots, "AllToAll signals", &k->signal_bytes_);
    if (!k->signals_) return detail::alloc_status();
  }
  if (cfg.variant == A2AVariant::direct) {
    for (void *&b : k->direct_out_) {
      b = detail::sym_alloc(size_t(k->out_elems() * es), "AllToAll direct output");
      if (!b) return detail::alloc_status();
    }
  }
  k->sym_bytes_ = stage_bytes + k->signal_bytes_ + (k->direct_out_[0] ? 2 * size_t(k->out_elems() * es) : 0);
  *out = std::move(k);
  return TDIST_SUCCESS;
}

AllToAll::~AllToAll() {
  // Reverse order of allocation: the heap's collective sequence stays the same on every PE.
  detail::sym_free(direct_out_[1]);
  detail::sym_free(direct_out_[0]);
  detail::sym_free(signals_);
  detail::sym_free(stage_);
}

int64_t AllToAll::in_elems() const { return cfg_.S * world_ * cfg_.H * cfg_.D; }
int64_t AllToAll::out_elems() const { return in_elems(); }

int AllToAll::run(const void *in, void *out) {
  const int64_t W = world_, H = cfg_.H, D = cfg_.D;
  if (cfg_.direction == A2ADirection::reverse)  // A (S*W, H, D) -> C (S, H*W, D)
    return run_strided(in, H * D, D, out, W * H * D, D);
  return run_strided(in, W * H * D, D, out, H * D, D);  // X (S, H*W, D) -> Y (S*W, H, D)
}

int AllToAll::run_strided(const void *in, int64_t in_s, int64_t in_h, void *out, int64_t out_s,
                          int64_t out_h) {
  using detail::fail;
  detail::clear_error();
  const int64_t es = int64_t(dtype_size(cfg_.dtype)), S = cfg_.S, H = cfg_.H, D = cfg_.D;
  const bool direct = cfg_.variant == A2AVariant::direct;
  if (direct && !out) out = output_buffer();
  if (!in || !out) return fail(TDIST_ERR_INVALID_PARAM, "AllToAll::run: null input or output");
  if (direct && out != output_buffer())
    return fail(TDIST_ERR_INVALID_PARAM,
                "AllToAll::run: variant direct writes into the symmetric output_buffer() (the buffer of this "
                "call), got another pointer");
  A2AArgs a{};
  a.me = me_;
  a.W = world_;
  a.S = S;
  a.H = H;
  a.D = D;
  a.es = es;
  a.in = static_cast<const unsigned char *>(in);
  a.out = static_cast<unsigned char *>(out);
  if (cfg_.direction == A2ADirection::reverse) {
    a.in_rank = S * in_s * es;    // A rows [p*S, (p+1)*S) belong to PE p
    a.out_rank = H * out_h * es;  // C heads [r*H, (r+1)*H) come from PE r
  } else {
    a.in_rank = H * in_h * es;    // X heads [p*H, (p+1)*H) belong to PE p
    a.out_rank = S * out_s * es;  // Y rows [r*S, (r+1)*S) come from PE r
  }
  a.in_s = in_s * es;
  a.in_h = in_h * es;
  a.out_s = out_s * es;
  a.out_h = out_h * es;
  const bool bulk = cfg_.variant == A2AVariant::bulk || cfg_.variant == A2AVariant::wait_notify;
  if (bulk && (in_h != D || in_s != H * D))
    return fail(TDIST_ERR_INVALID_PARAM,
                "AllToAll::run: variant %s puts each peer's (S, H, D) segment in one call: the input "
                "must be contiguous (in_s = H*D = %lld, in_h = D = %lld; got %lld, %lld)",
                a2a_variant_name(cfg_.variant), (long long)(H * D), (long long)D, (long long)in_s,
                (long long)in_h);
  a.stage = stage_;
  a.sig = signals_;
  a.bs = cfg_.block_s;
  a.bd = cfg_.block_d;
  a.nbs = nbs_;
  a.nbd = nbd_;
  a.nbuf = cfg_.buffer_num;
  a.slot_rows = int64_t(slot_rows_);
  a.region_b = nbs_ * world_;
  a.stream = size_t(in_elems() * es) >= detail::kStreamMinBytesPerPe;
  tdist_cpu_kernel_fn fn = nullptr;
  switch (cfg_.variant) {
    case A2AVariant::pipeline: fn = a2a_pipeline_kernel; break;
    case A2AVariant::bulk: fn = a2a_bulk_kernel; break;
    case A2AVariant::wait_notify: fn = a2a_wait_notify_kernel; break;
    case A2AVariant::direct: fn = a2a_direct_kernel; break;
  }
  if (!direct)
    return detail::launch_with_protocol(a2a_variant_name(cfg_.variant), signals_, signal_bytes_, cfg_.grid,
                                        fn, &a);
  // direct: the stores, then one flag round (no reset, no host barrier; see cpu.hpp)
  const uint64_t e = epoch_ + 1;
  if (int st = tdist_cpu_launch(cfg_.grid, fn, &a); st != TDIST_SUCCESS)
    return fail(st, "direct: launch failed: %s", tdist_last_error_message());
  DirectDone d{signals_, world_, me_, int64_t(e % 2), e};
  if (int st = tdist_cpu_launch(1, a2a_direct_done_kernel, &d); st != TDIST_SUCCESS)
    return fail(st, "direct: completion flags: %s", tdist_last_error_message());
  epoch_ = e;
  return TDIST_SUCCESS;
}

}  // namespace tdist::kernels::cpu
