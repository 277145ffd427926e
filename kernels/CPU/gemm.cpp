// AllGather+GEMM and GEMM+ReduceScatter with per-tile signals and swizzled tile order (seed 003),
// on the CPU device ABI. The GEMM itself is a plain row-times-matrix loop in the accumulation type
// (float; double for f64): these kernels show the overlap structure, not a tuned BLAS.
#include <algorithm>
#include <vector>

#include "common.hpp"

namespace tdist::kernels::cpu {
namespace {

using detail::cdiv;
using detail::notify_slot;
using detail::slot;
using detail::wait_slot;

/** out[r][j] = sum_kk a[r][kk] * b[kk][j] for `rows` rows of A (row stride k), B in acc type. */
template <class E>
void gemm_rows(const typename E::storage *a, int64_t rows, int64_t k, const typename E::acc *b, int64_t n,
               typename E::acc *out) {
  using A = typename E::acc;
  for (int64_t r = 0; r < rows; ++r) {
    A *o = out + r * n;
    std::fill(o, o + n, A(0));
    for (int64_t kk = 0; kk < k; ++kk) {
      const A av = E::load(a + r * k, size_t(kk));
      const A *brow = b + kk * n;
      for (int64_t j = 0; j < n; ++j) o[j] += av * brow[j];
    }
  }
}

template <class E>
void b_to_acc(const void *b, int64_t count, std::vector<unsigned char> *out) {
  using A = typename E::acc;
  out->resize(size_t(count) * sizeof(A));
  A *dst = reinterpret_cast<A *>(out->data());
  const auto *src = static_cast<const typename E::storage *>(b);
  for (int64_t i = 0; i < count; ++i) dst[i] = E::load(src, size_t(i));
}

inline size_t acc_size(DType t) { return t == DType::f64 ? 8 : 4; }

// ------------------------------------------ AG+GEMM ------------------------------------------
struct AgArgs {
  int me, W, producers;
  DType dtype;
  int64_t m, n, k, bm, tpr, es;
  const unsigned char *a;   // (m, k) local
  const unsigned char *b;   // (k, n) in the accumulation type
  unsigned char *c;         // (W*m, n)
  unsigned char *gathered;  // symmetric (W*m, k)
  int64_t *sig;             // [W][tpr] on every PE
};

void ag_gemm_kernel(void *p) {
  const AgArgs &a = *static_cast<const AgArgs *>(p);
  const int pid = tdistx_program_id(0), grid = tdistx_num_programs(0);
  const int64_t row = a.k * a.es;
  if (pid < a.producers) {
    // Tile-major over the peers (tile 0 to every peer first), peers from me+1 on.
    const int64_t tasks = (a.W - 1) * a.tpr;
    for (int64_t j = pid; j < tasks; j += a.producers) {
      const int64_t t = j / (a.W - 1);
      const int target = int((a.me + 1 + j % (a.W - 1)) % a.W);
      const int64_t r0 = t * a.bm, rows = std::min(a.bm, a.m - r0);
      tdist_putmem(a.gathered + (a.me * a.m + r0) * row, a.a + r0 * row, size_t(rows * row), target);
      tdist_fence();
      notify_slot(slot(a.sig, a.me * a.tpr + t), 1, target);
    }
    return;
  }
  const int lid = pid - a.producers, nc = grid - a.producers;
  const int64_t total = a.W * a.tpr;
  dispatch_dtype(a.dtype, [&](auto e) {
    using E = decltype(e);
    using S = typename E::storage;
    using A = typename E::acc;
    std::vector<A> acc(size_t(a.bm * a.n));
    for (int64_t j = lid; j < total; j += nc) {
      const int64_t g = (j + a.me * a.tpr) % total;  // swizzle: this PE's own rows first
      const int src = int(g / a.tpr);
      const int64_t t = g % a.tpr, r0 = t * a.bm, rows = std::min(a.bm, a.m - r0);
      const unsigned char *tile;
      if (src == a.me) {
        tile = a.a + r0 * row;  // local data: no wait
      } else {
        wait_slot(slot(a.sig, src * a.tpr + t), 1);
        tile = static_cast<unsigned char *>(tdistx_consume_token_ptr(a.gathered, 0)) + (src * a.m + r0) * row;
      }
      gemm_rows<E>(reinterpret_cast<const S *>(tile), rows, a.k, reinterpret_cast<const A *>(a.b), a.n,
                   acc.data());
      S *c = reinterpret_cast<S *>(a.c) + (src * a.m + r0) * a.n;
      for (int64_t i = 0; i < rows * a.n; ++i) c[i] = E::from(acc[size_t(i)]);
    }
  });
}

// ------------------------------------------ GEMM+RS ------------------------------------------
struct RsArgs {
  int me, W, consumers;
  DType dtype;
  int64_t m, n, k, bm, tpr, es, acc_es;
  const unsigned char *a;  // (W*m, k)
  const unsigned char *b;  // (k, n) in the accumulation type
  unsigned char *c;        // (m, n)
  unsigned char *staging;  // symmetric [W][m][n], accumulation type
  int64_t *sig;            // [W][tpr]
};

void gemm_rs_kernel(void *p) {
  const RsArgs &a = *static_cast<const RsArgs *>(p);
  const int pid = tdistx_program_id(0), grid = tdistx_num_programs(0);
  const int producers = grid - a.consumers;
  dispatch_dtype(a.dtype, [&](auto e) {
    using E = decltype(e);
    using S = typename E::storage;
    using A = typename E::acc;
    if (pid < producers) {
      std::vector<A> acc(size_t(a.bm * a.n));
      const int64_t tasks = a.W * a.tpr;
      for (int64_t j = pid; j < tasks; j += producers) {
        const int seg = int((a.me + j / a.tpr) % a.W);  // swizzle: own segment first
        const int64_t t = j % a.tpr, r0 = t * a.bm, rows = std::min(a.bm, a.m - r0);
        const S *arows = reinterpret_cast<const S *>(a.a) + (seg * a.m + r0) * a.k;
        gemm_rows<E>(arows, rows, a.k, reinterpret_cast<const A *>(a.b), a.n, acc.data());
        tdist_putmem(a.staging + (a.me * a.m + r0) * a.n * a.acc_es, acc.data(),
                     size_t(rows * a.n * a.acc_es), seg);
        tdist_fence();
        notify_slot(slot(a.sig, a.me * a.tpr + t), 1, seg);
      }
      return;
    }
    const int lid = pid - producers;
    std::vector<A> sum(size_t(a.bm * a.n));
    for (int64_t t = lid; t < a.tpr; t += a.consumers) {
      const int64_t r0 = t * a.bm, rows = std::min(a.bm, a.m - r0);
      for (int i = 0; i < a.W; ++i) wait_slot(slot(a.sig, ((a.me + i) % a.W) * a.tpr + t), 1);
      const A *st = reinterpret_cast<const A *>(tdistx_consume_token_ptr(a.staging, 0));
      std::fill(sum.begin(), sum.end(), A(0));
      for (int r = 0; r < a.W; ++r) {  // PE order: the result does not depend on arrival order
        const A *part = st + (r * a.m + r0) * a.n;
        for (int64_t i = 0; i < rows * a.n; ++i) sum[size_t(i)] += part[i];
      }
      S *c = reinterpret_cast<S *>(a.c) + r0 * a.n;
      for (int64_t i = 0; i < rows * a.n; ++i) c[i] = E::from(sum[size_t(i)]);
    }
  });
}

int64_t default_block_m(int64_t m, int64_t n, int64_t k) {
  // ~64 KiB of A or C per tile, at least 4 tiles when m allows.
  int64_t bm = std::max<int64_t>(1, (64 << 10) / std::max<int64_t>(1, 4 * std::max(n, k)));
  bm = std::min(bm, std::max<int64_t>(1, cdiv(m, 4)));
  return std::min(bm, m);
}

}  // namespace

int AgGemm::create(const AgGemmConfig &cfg_in, std::unique_ptr<AgGemm> *out) {
  using detail::fail;
  detail::clear_error();
  if (!out) return fail(TDIST_ERR_INVALID_PARAM, "AgGemm::create: out is null");
  out->reset();
  if (!tdist_initialized()) return fail(TDIST_ERR_NOT_INITED, "AgGemm::create before tdist_init");
  AgGemmConfig cfg = cfg_in;
  if (cfg.m < 1 || cfg.n < 1 || cfg.k < 1)
    return fail(TDIST_ERR_INVALID_PARAM, "AgGemm: m, n, k must be >= 1 (got %lld, %lld, %lld)",
                (long long)cfg.m, (long long)cfg.n, (long long)cfg.k);
  if (cfg.grid < 2 || cfg.grid > TDIST_CPU_MAX_GRID || cfg.producers < 1 || cfg.producers >= cfg.grid)
    return fail(TDIST_ERR_INVALID_PARAM,
                "AgGemm: need 2 <= grid <= %d and 1 <= producers < grid (got %d, %d)", TDIST_CPU_MAX_GRID,
                cfg.grid, cfg.producers);
  if (cfg.block_m <= 0) cfg.block_m = default_block_m(cfg.m, cfg.n, cfg.k);
  cfg.block_m = std::min(cfg.block_m, cfg.m);
  std::unique_ptr<AgGemm> k(new AgGemm());
  k->cfg_ = cfg;
  k->me_ = tdist_my_pe();
  k->world_ = tdist_n_pes();
  const int64_t es = int64_t(dtype_size(cfg.dtype));
  k->gathered_ = static_cast<unsigned char *>(
      detail::sym_alloc(size_t(k->world_ * cfg.m * cfg.k * es), "AgGemm gathered A"));
  if (!k->gathered_) return detail::alloc_status();
  k->signals_ =
      detail::sym_alloc_signals(k->world_ * cdiv(cfg.m, cfg.block_m), "AgGemm signals", &k->signal_bytes_);
  if (!k->signals_) return detail::alloc_status();
  *out = std::move(k);
  return TDIST_SUCCESS;
}

AgGemm::~AgGemm() {
  detail::sym_free(signals_);
  detail::sym_free(gathered_);
}

int AgGemm::run(const void *a, const void *b, void *c) {
  using detail::fail;
  detail::clear_error();
  if (!a || !b || !c) return fail(TDIST_ERR_INVALID_PARAM, "AgGemm::run: null operand");
  std::vector<unsigned char> bacc;
  dispatch_dtype(cfg_.dtype, [&](auto e) { b_to_acc<decltype(e)>(b, cfg_.k * cfg_.n, &bacc); });
  AgArgs g{};
  g.me = me_;
  g.W = world_;
  g.producers = cfg_.producers;
  g.dtype = cfg_.dtype;
  g.m = cfg_.m;
  g.n = cfg_.n;
  g.k = cfg_.k;
  g.bm = cfg_.block_m;
  g.tpr = cdiv(cfg_.m, cfg_.block_m);
  g.es = int64_t(dtype_size(cfg_.dtype));
  g.a = static_cast<const unsigned char *>(a);
  g.b = bacc.data();
  g.c = static_cast<unsigned char *>(c);
  g.gathered = gathered_;
  g.sig = signals_;
  return detail::launch_with_protocol("ag_gemm", signals_, signal_bytes_, cfg_.grid, ag_gemm_kernel, &g);
}

int GemmRs::create(const GemmRsConfig &cfg_in, std::unique_ptr<GemmRs> *out) {
  using detail::fail;
  detail::clear_error();
  if (!out) return fail(TDIST_ERR_INVALID_PARAM, "GemmRs::create: out is null");
  out->reset();
  if (!tdist_initialized()) return fail(TDIST_ERR_NOT_INITED, "GemmRs::create before tdist_init");
  GemmRsConfig cfg = cfg_in;
  if (cfg.m < 1 || cfg.n < 1 || cfg.k < 1)
    return fail(TDIST_ERR_INVALID_PARAM, "GemmRs: m, n, k must be >= 1 (got %lld, %lld, %lld)",
                (long long)cfg.m, (long long)cfg.n, (long long)cfg.k);
  if (cfg.grid < 2 || cfg.grid > TDIST_CPU_MAX_GRID || cfg.consumers < 1 || cfg.consumers >= cfg.grid)
    return fail(TDIST_ERR_INVALID_PARAM,
                "GemmRs: need 2 <= grid <= %d and 1 <= consumers < grid (got %d, %d)", TDIST_CPU_MAX_GRID,
                cfg.grid, cfg.consumers);
  if (cfg.block_m <= 0) cfg.block_m = default_block_m(cfg.m, cfg.n, cfg.k);
  cfg.block_m = std::min(cfg.block_m, cfg.m);
  std::unique_ptr<GemmRs> k(new GemmRs());
  k->cfg_ = cfg;
  k->me_ = tdist_my_pe();
  k->world_ = tdist_n_pes();
  k->staging_ = static_cast<unsigned char *>(
      detail::sym_alloc(size_t(k->world_ * cfg.m * cfg.n) * acc_size(cfg.dtype), "GemmRs staging"));
  if (!k->staging_) return detail::alloc_status();
  k->signals_ =
      detail::sym_alloc_signals(k->world_ * cdiv(cfg.m, cfg.block_m), "GemmRs signals", &k->signal_bytes_);
  if (!k->signals_) return detail::alloc_status();
  *out = std::move(k);
  return TDIST_SUCCESS;
}

GemmRs::~GemmRs() {
  detail::sym_free(signals_);
  detail::sym_free(staging_);
}

int GemmRs::run(const void *a, const void *b, void *c) {
  using detail::fail;
  detail::clear_error();
  if (!a || !b || !c) return fail(TDIST_ERR_INVALID_PARAM, "GemmRs::run: null operand");
  std::vector<unsigned char> bacc;
  dispatch_dtype(cfg_.dtype, [&](auto e) { b_to_acc<decltype(e)>(b, cfg_.k * cfg_.n, &bacc); });
  RsArgs g{};
  g.me = me_;
  g.W = world_;
  g.consumers = cfg_.consumers;
  g.dtype = cfg_.dtype;
  g.m = cfg_.m;
  g.n = cfg_.n;
  g.k = cfg_.k;
  g.bm = cfg_.block_m;
  g.tpr = cdiv(cfg_.m, cfg_.block_m);
  g.es = int64_t(dtype_size(cfg_.dtype));
  g.acc_es = int64_t(acc_size(cfg_.dtype));
  g.a = static_cast<const unsigned char *>(a);
  g.b = bacc.data();
  g.c = static_cast<unsigned char *>(c);
  g.staging = staging_;
  g.sig = signals_;
  return detail::launch_with_protocol("gemm_rs", signals_, signal_bytes_, cfg_.grid, gemm_rs_kernel, &g);
}

}  // namespace tdist::kernels::cpu
