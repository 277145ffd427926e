// Sum all-reduce on the CPU device ABI: one-shot, two-shot, and the ring of seed 003 done
// correctly (the seed's sketch reuses one signal per step for every rank and tile and lets every
// program but one skip the send; here each program owns a slice of every chunk and has its own
// signal per (phase, step)).
#include <algorithm>
#include <vector>

#include "common.hpp"

namespace tdist::kernels::cpu {
namespace {

using detail::notify_slot;
using detail::slot;
using detail::wait_slot;

constexpr int kAutoGridMax = 2;

struct ArArgs {
  int me, W;
  int64_t n, es;
  DType dtype;
  const unsigned char *in;
  unsigned char *out;
  unsigned char *work;  // symmetric, n elements (capacity max_elems)
  unsigned char *recv;  // symmetric, ring only: (W-1) receive slots of chunk_cap elements
  int64_t chunk_cap;
  int64_t *sig;
};

struct Range {
  int64_t lo, hi;
  int64_t size() const { return hi - lo; }
};
/** Part `i` of `parts` of [0, n): sizes differ by at most one. */
inline Range split(int64_t n, int64_t i, int64_t parts) {
  const int64_t q = n / parts, r = n % parts;
  const int64_t lo = i * q + std::min(i, r);
  return {lo, lo + q + (i < r ? 1 : 0)};
}
/** Slice of chunk `c` (chunks: W parts of n) owned by program `pid` of `grid`. */
inline Range chunk_slice(const ArArgs &a, int64_t c, int pid, int grid) {
  const Range ch = split(a.n, c, a.W);
  const Range part = split(ch.size(), pid, grid);
  return {ch.lo + part.lo, ch.lo + part.hi};
}

/** dst[i] = sum over r in [0, W) of srcs[r][i], in PE order, through the accumulation type. */
template <class E>
void sum_into(typename E::storage *dst, const typename E::storage *const *srcs, int W, int64_t n) {
  using A = typename E::acc;
  constexpr int64_t kBlock = 1024;
  A acc[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int64_t i = 0; i < m; ++i) acc[i] = E::load(srcs[0], b + i);
    for (int r = 1; r < W; ++r) {
      const typename E::storage *s = srcs[r] + b;
      for (int64_t i = 0; i < m; ++i) acc[i] += E::load(s, i);
    }
    for (int64_t i = 0; i < m; ++i) dst[b + i] = E::from(acc[i]);
  }
}

/** dst[i] += src[i]. */
template <class E>
void add_into(typename E::storage *dst, const typename E::storage *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = E::from(E::load(dst, i) + E::load(src, i));
}

void sum_peers(const ArArgs &a, unsigned char *dst, int64_t lo, int64_t len) {
  if (len <= 0) return;
  const unsigned char *srcs[TDIST_CPU_MAX_GRID];  // W <= what a launch may reach
  std::vector<unsigned char> fetched;             // the slices of peers behind the ROCE engine
  for (int r = 0; r < a.W; ++r) {
    if (const unsigned char *p = detail::mapped(a.work, r)) {
      srcs[r] = p + lo * a.es;
      continue;
    }
    if (fetched.empty()) fetched.resize(size_t(a.W * len * a.es));
    unsigned char *f = fetched.data() + size_t(r * len * a.es);
    detail::get_bytes(f, a.work + lo * a.es, size_t(len * a.es), r);
    srcs[r] = f;
  }
  dispatch_dtype(a.dtype, [&](auto e) {
    using E = decltype(e);
    using S = typename E::storage;
    sum_into<E>(reinterpret_cast<S *>(dst), reinterpret_cast<const S *const *>(srcs), a.W, len);
  });
}

void ar_one_shot_kernel(void *p) {
  const ArArgs &a = *static_cast<const ArArgs *>(p);
  const int pid = tdistx_program_id(0), grid = tdistx_num_programs(0);
  const Range mine = split(a.n, pid, grid);
  std::memcpy(a.work + mine.lo * a.es, a.in + mine.lo * a.es, size_t(mine.size() * a.es));
  tdist_barrier_all();  // every PE's input is in its work buffer
  sum_peers(a, a.out + mine.lo * a.es, mine.lo, mine.size());
}

void ar_two_shot_kernel(void *p) {
  const ArArgs &a = *static_cast<const ArArgs *>(p);
  const int pid = tdistx_program_id(0), grid = tdistx_num_programs(0);
  for (int c = 0; c < a.W; ++c) {
    const Range s = chunk_slice(a, c, pid, grid);
    std::memcpy(a.work + s.lo * a.es, a.in + s.lo * a.es, size_t(s.size() * a.es));
  }
  tdist_barrier_all();
  // Reduce-scatter in place: chunk `me` of this PE's work buffer is read only by this PE here
  // (peers read their own chunks), and each element is read from every PE before it is written.
  const Range own = chunk_slice(a, a.me, pid, grid);
  sum_peers(a, a.work + own.lo * a.es, own.lo, own.size());
  tdist_barrier_all();
  for (int c = 0; c < a.W; ++c) {
    const Range s = chunk_slice(a, c, pid, grid);
    detail::get_bytes(a.out + s.lo * a.es, a.work + s.lo * a.es, size_t(s.size() * a.es), c);
  }
}

// Ring. Reduce-scatter step k (0..W-2): send the partial of chunk (me-k) to next's receive slot
// k, notify rs[k][pid] there; wait for our rs[k][pid], add the received partial of chunk
// (me-k-1). After it, chunk (me+1) is fully reduced here. All-gather step k: store chunk
// (me+1-k) into next's work buffer, notify ag[k][pid]; wait for ours (chunk (me-k) arrived).
// No credits are needed: every (phase, step) has its own slot and receive buffer, and next has
// finished reading a work chunk before we overwrite it (the reduced value we hold for that chunk
// already contains next's contribution, sent after its last read of it).
void ar_ring_kernel(void *p) {
  const ArArgs &a = *static_cast<const ArArgs *>(p);
  const int pid = tdistx_program_id(0), grid = tdistx_num_programs(0);
  const int W = a.W, me = a.me, next = (me + 1) % W;
  auto mod = [W](int64_t x) { return int((x % W + W) % W); };
  for (int c = 0; c < W; ++c) {
    const Range s = chunk_slice(a, c, pid, grid);
    std::memcpy(a.work + s.lo * a.es, a.in + s.lo * a.es, size_t(s.size() * a.es));
  }
  int64_t *rs = a.sig;
  int64_t *ag = slot(a.sig, int64_t(std::max(W - 1, 0)) * grid);

  for (int k = 0; k < W - 1; ++k) {
    const int cs = mod(me - k), cr = mod(me - k - 1);
    const Range ss = chunk_slice(a, cs, pid, grid), sr = chunk_slice(a, cr, pid, grid);
    const int64_t off_s = ss.lo - split(a.n, cs, W).lo, off_r = sr.lo - split(a.n, cr, W).lo;
    detail::put_rows(a.recv + (k * a.chunk_cap + off_s) * a.es, 0, a.work + ss.lo * a.es, 0, 1,
                     size_t(ss.size() * a.es), next);
    tdist_fence();
    notify_slot(slot(rs, int64_t(k) * grid + pid), 1, next);
    wait_slot(slot(rs, int64_t(k) * grid + pid), 1);
    const unsigned char *got =
        static_cast<unsigned char *>(tdistx_consume_token_ptr(a.recv, 0)) + (k * a.chunk_cap + off_r) * a.es;
    dispatch_dtype(a.dtype, [&](auto e) {
      using E = decltype(e);
      using S = typename E::storage;
      add_into<E>(reinterpret_cast<S *>(a.work + sr.lo * a.es), reinterpret_cast<const S *>(got), sr.size());
    });
  }
  for (int k = 0; k < W - 1; ++k) {
    const Range ss = chunk_slice(a, mod(me + 1 - k), pid, grid);
    detail::put_rows(a.work + ss.lo * a.es, 0, a.work + ss.lo * a.es, 0, 1, size_t(ss.size() * a.es), next);
    tdist_fence();
    notify_slot(slot(ag, int64_t(k) * grid + pid), 1, next);
    wait_slot(slot(ag, int64_t(k) * grid + pid), 1);
  }
  for (int c = 0; c < W; ++c) {
    const Range s = chunk_slice(a, c, pid, grid);
    std::memcpy(a.out + s.lo * a.es, a.work + s.lo * a.es, size_t(s.size() * a.es));
  }
}

}  // namespace

int auto_grid(int64_t bytes) { return bytes < (int64_t(1) << 20) ? 1 : kAutoGridMax; }

const char *allreduce_algo_name(AllReduceAlgo a) {
  switch (a) {
    case AllReduceAlgo::one_shot: return "one_shot";
    case AllReduceAlgo::two_shot: return "two_shot";
    case AllReduceAlgo::ring: return "ring";
  }
  return "?";
}

bool parse_allreduce_algo(const std::string &s, AllReduceAlgo *out) {
  for (AllReduceAlgo a : {AllReduceAlgo::one_shot, AllReduceAlgo::two_shot, AllReduceAlgo::ring}) {
    if (s == allreduce_algo_name(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

int AllReduce::create(const AllReduceConfig &cfg, std::unique_ptr<AllReduce> *out) {
  using detail::fail;
  detail::clear_error();
  if (!out) return fail(TDIST_ERR_INVALID_PARAM, "AllReduce::create: out is null");
  out->reset();
  if (!tdist_initialized()) return fail(TDIST_ERR_NOT_INITED, "AllReduce::create before tdist_init");
  if (cfg.max_elems < 1)
    return fail(TDIST_ERR_INVALID_PARAM, "AllReduce: max_elems must be >= 1 (got %lld)",
                (long long)cfg.max_elems);
  if (cfg.grid < 0 || cfg.grid > TDIST_CPU_MAX_GRID)
    return fail(TDIST_ERR_INVALID_PARAM, "AllReduce: grid must be in [1, %d] (got %d)", TDIST_CPU_MAX_GRID,
                cfg.grid);
  std::unique_ptr<AllReduce> k(new AllReduce());
  k->cfg_ = cfg;
  k->me_ = tdist_my_pe();
  k->world_ = tdist_n_pes();
  if (k->world_ > TDIST_CPU_MAX_GRID)
    return fail(TDIST_ERR_NOT_SUPPORTED, "AllReduce: at most %d PEs (got %d)", TDIST_CPU_MAX_GRID, k->world_);
  const int64_t W = k->world_, es = int64_t(dtype_size(cfg.dtype));
  const int64_t chunk_cap = (cfg.max_elems + W - 1) / W;
  size_t bytes = size_t(cfg.max_elems * es);
  if (cfg.algo == AllReduceAlgo::ring) bytes += size_t((W - 1) * chunk_cap * es);
  k->work_ = static_cast<unsigned char *>(detail::sym_alloc(bytes, "AllReduce work buffer"));
  if (!k->work_) return detail::alloc_status();
  if (cfg.algo == AllReduceAlgo::ring && W > 1) {
    k->signals_ = detail::sym_alloc_signals(2 * (W - 1) * (cfg.grid ? cfg.grid : kAutoGridMax),
                                            "AllReduce signals", &k->signal_bytes_);
    if (!k->signals_) return detail::alloc_status();
  }
  *out = std::move(k);
  return TDIST_SUCCESS;
}

AllReduce::~AllReduce() {
  detail::sym_free(signals_);
  detail::sym_free(work_);
}

int AllReduce::run(const void *in, void *out, int64_t n) {
  using detail::fail;
  detail::clear_error();
  if (!in || !out) return fail(TDIST_ERR_INVALID_PARAM, "AllReduce::run: null input or output");
  if (n < 0 || n > cfg_.max_elems)
    return fail(TDIST_ERR_INVALID_PARAM, "AllReduce::run: n = %lld outside [0, max_elems = %lld]",
                (long long)n, (long long)cfg_.max_elems);
  const int64_t W = world_, es = int64_t(dtype_size(cfg_.dtype));
  ArArgs a{};
  a.me = me_;
  a.W = world_;
  a.n = n;
  a.es = es;
  a.dtype = cfg_.dtype;
  a.in = static_cast<const unsigned char *>(in);
  a.out = static_cast<unsigned char *>(out);
  a.work = work_;
  a.chunk_cap = (cfg_.max_elems + W - 1) / W;
  a.recv = work_ + cfg_.max_elems * es;
  a.sig = signals_;
  tdist_cpu_kernel_fn fn = cfg_.algo == AllReduceAlgo::one_shot   ? ar_one_shot_kernel
                           : cfg_.algo == AllReduceAlgo::two_shot ? ar_two_shot_kernel
                                                                  : ar_ring_kernel;
  const int grid = cfg_.grid ? cfg_.grid : auto_grid(n * es);
  return detail::launch_with_protocol(allreduce_algo_name(cfg_.algo), signals_, signal_bytes_, grid, fn, &a);
}

}  // namespace tdist::kernels::cpu
