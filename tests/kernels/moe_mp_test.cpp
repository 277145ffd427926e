// Multi-process tests of the CPU MoE dispatch / combine (tdist/kernels/moe.hpp, docs/MOE.md), run
// under tdist-run at 2, 4 and 8 ranks. Every case: a fresh seed agreed by all PEs, from which every
// PE rebuilds every PE's tokens, routing and weights, so each checks its own outputs against an
// independent reference: the dispatch output bit for bit (poisoned beforehand; rows past the groups
// must stay poisoned), the counts exactly, the combine within the stated bound
//     |out - ref| <= (2 u + 8 K 2^-24) * sum_k |w_k y_k|     (u: unit roundoff of the payload dtype)
// plus (K + 2) 2^-24 for fp16, whose results below 2^-14 are subnormal (absolute spacing 2^-24).
// With fp8_dispatch the expected dispatch rows are the sources' rows quantized (quantize_fp8_row,
// whose e4m3 rounding kernels_mp_test checks against the format), compared bit for bit, and the
// experts and the combine reference work on the dequantized rows.
// Routing: uniform random top-k, skewed (a few hot experts, whole PEs receiving nothing, PEs sending
// nothing, empty slots), all to one PE, and every PE with zero tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/mp_env.hpp"
#include "tdist/kernels/moe.hpp"

namespace {

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;
using tk::DType;

uint64_t fresh_seed() {
  static uint64_t counter = 0;  // every PE runs the same cases in the same order
  return tk::splitmix64(tdist_test::run_seed() + 0x2000 * ++counter);
}

enum class Routing { random, skewed, one_pe, empty };
const char *routing_name(Routing r) {
  switch (r) {
    case Routing::random: return "random";
    case Routing::skewed: return "skewed";
    case Routing::one_pe: return "one_pe";
    case Routing::empty: return "empty";
  }
  return "?";
}

// One PE's inputs, reproducible on every PE from (seed, pe).
struct Inputs {
  int64_t T = 0;
  std::vector<unsigned char> x;
  std::vector<int64_t> idx;
  std::vector<float> w;
};

Inputs make_inputs(uint64_t seed, int pe, int W, const kc::MoeConfig &cfg, Routing routing) {
  Inputs in;
  std::mt19937_64 g(tk::splitmix64(seed ^ (uint64_t(pe) << 32)));
  const int64_t E = cfg.num_experts, K = cfg.topk, L = E / W;
  in.T = int64_t(g() % uint64_t(cfg.max_tokens + 1));
  if (routing == Routing::empty) in.T = 0;
  if (routing == Routing::skewed && pe == 1 % W) in.T = 0;  // a PE that sends nothing
  in.x.resize(size_t(in.T * cfg.hidden) * tk::dtype_size(cfg.dtype));
  tk::fill_random(cfg.dtype, in.x.data(), size_t(in.T * cfg.hidden), seed, pe);
  in.idx.assign(size_t(in.T * K), -1);
  in.w.assign(size_t(in.T * K), 0.0f);
  std::vector<int64_t> pool;
  for (int64_t e = 0; e < E; ++e) {
    if (routing == Routing::skewed && W > 1 && e / L == W - 1) continue;  // the last PE receives nothing
    if (routing == Routing::one_pe && e / L != 0) continue;
    pool.push_back(e);
  }
  for (int64_t t = 0; t < in.T; ++t) {
    std::vector<int64_t> p = pool;
    for (int64_t k = 0; k < K && !p.empty(); ++k) {
      size_t i = size_t(g() % p.size());
      if (routing == Routing::skewed && (g() % 4) != 0) i = 0;  // a hot expert (the smallest left)
      in.idx[size_t(t * K + k)] = p[i];
      p.erase(p.begin() + long(i));
      in.w[size_t(t * K + k)] = float(double(g() >> 11) * 0x1p-53 + 0.01);
    }
    if (routing == Routing::skewed && K > 1 && (g() % 3) == 0)
      in.idx[size_t(t * K + K - 1)] = -1;  // empty slot
  }
  return in;
}

// Reference dispatch rows on PE `me`: for group j, sources in order, tokens ascending, k ascending.
struct RefRow {
  int src;
  int64_t t;
  int64_t k;
};
std::vector<std::vector<RefRow>> reference_groups(const std::vector<Inputs> &all, int me, int64_t L,
                                                  int64_t K) {
  std::vector<std::vector<RefRow>> groups(static_cast<size_t>(L));
  for (int64_t j = 0; j < L; ++j)
    for (int r = 0; r < int(all.size()); ++r)
      for (int64_t t = 0; t < all[size_t(r)].T; ++t)
        for (int64_t k = 0; k < K; ++k)
          if (all[size_t(r)].idx[size_t(t * K + k)] == me * L + j) groups[size_t(j)].push_back({r, t, k});
  return groups;
}

// The "expert": y = round(x * (1 + e / 16)) for a row of global expert e.
double expert_scale(int64_t e) { return 1.0 + double(e % 16) / 16.0; }

struct Case {
  kc::MoeMode mode;
  DType dtype;
  int64_t E, H, K, max_tokens, chunk;
  int slices;
  Routing routing;
  int calls;
  bool fp8 = false;
};

// The dispatch row of token t of `in` as it must arrive: the raw row, or its packed fp8 form.
std::vector<unsigned char> wire_row(const Inputs &in, int64_t t, const kc::MoeConfig &cfg) {
  const size_t es = tk::dtype_size(cfg.dtype), H = size_t(cfg.hidden);
  const unsigned char *src = in.x.data() + size_t(t) * H * es;
  if (!cfg.fp8_dispatch) return std::vector<unsigned char>(src, src + H * es);
  std::vector<unsigned char> q(size_t(tk::fp8_row_bytes(cfg.hidden)));
  tk::quantize_fp8_row(cfg.dtype, src, cfg.hidden, q.data());
  return q;
}

// Column `col` of a dispatch-output row (raw or packed fp8) as the expert reads it.
double row_value(const unsigned char *row, int64_t col, const kc::MoeConfig &cfg) {
  if (!cfg.fp8_dispatch) return tk::load_as_double(cfg.dtype, row, size_t(col));
  float scale;
  std::memcpy(&scale, row + cfg.hidden + 4 * (col / tk::kFp8Block), 4);
  return double(tk::e4m3_to_f32(row[col])) * double(scale);
}

void run_case(const Case &c) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  SCOPED_TRACE(std::string(kc::moe_mode_name(c.mode)) + " " + tk::dtype_name(c.dtype) + " " +
               routing_name(c.routing) + " E=" + std::to_string(c.E) + " H=" + std::to_string(c.H) +
               " K=" + std::to_string(c.K) + " slices=" + std::to_string(c.slices));
  kc::MoeConfig cfg;
  cfg.mode = c.mode;
  cfg.dtype = c.dtype;
  cfg.num_experts = c.E;
  cfg.hidden = c.H;
  cfg.topk = c.K;
  cfg.max_tokens = c.max_tokens;
  cfg.chunk_tokens = c.chunk;
  cfg.slices = c.slices;
  cfg.fp8_dispatch = c.fp8;
  std::unique_ptr<kc::MoeBuffer> buf;
  ASSERT_EQ(kc::MoeBuffer::create(cfg, &buf), TDIST_SUCCESS) << kc::last_error_message();
  const int64_t L = buf->local_experts(), H = c.H, K = c.K, rows = buf->recv_rows();
  const size_t es = tk::dtype_size(c.dtype), drow = size_t(buf->dispatch_row_bytes());
  ASSERT_EQ(drow, c.fp8 ? size_t(c.H + c.H / 32) : size_t(c.H) * es);
  const double u = tk::dtype_unit_roundoff(c.dtype);
  for (int call = 0; call < c.calls; ++call) {
    const uint64_t seed = fresh_seed();
    std::vector<Inputs> all;
    for (int r = 0; r < W; ++r) all.push_back(make_inputs(seed, r, W, buf->config(), c.routing));
    const Inputs &mine = all[size_t(me)];
    std::vector<unsigned char> recv(size_t(rows) * drow);
    tk::poison(recv.data(), recv.size());
    std::vector<int32_t> counts(size_t(L), -7);
    kc::MoeHandle h;
    ASSERT_EQ(
        buf->dispatch(mine.x.data(), mine.T, mine.idx.data(), mine.w.data(), recv.data(), counts.data(), &h),
        TDIST_SUCCESS)
        << kc::last_error_message();
    // dispatch: counts, rows bit for bit, the rest untouched
    const auto groups = reference_groups(all, me, L, K);
    std::vector<char> used(size_t(rows), 0);
    int64_t off = 0;
    for (int64_t j = 0; j < L; ++j) {
      ASSERT_EQ(counts[size_t(j)], int32_t(groups[size_t(j)].size())) << "call " << call << " group " << j;
      const int64_t start = c.mode == kc::MoeMode::high_throughput ? off : j * buf->ll_group_stride();
      for (size_t i = 0; i < groups[size_t(j)].size(); ++i) {
        const RefRow &rr = groups[size_t(j)][i];
        const int64_t row = start + int64_t(i);
        used[size_t(row)] = 1;
        ASSERT_EQ(std::memcmp(recv.data() + size_t(row) * drow,
                              wire_row(all[size_t(rr.src)], rr.t, cfg).data(), drow),
                  0)
            << "call " << call << ": PE " << me << " group " << j << " row " << i << " (token " << rr.t
            << " of PE " << rr.src << ") differs";
        if (c.fp8) {  // the quantizer itself: within half an e4m3 step of the source value
          const unsigned char *got = recv.data() + size_t(row) * drow;
          for (int64_t col = 0; col < H; ++col) {
            float scale;
            std::memcpy(&scale, got + H + 4 * (col / tk::kFp8Block), 4);
            const double x =
                tk::load_as_double(c.dtype, all[size_t(rr.src)].x.data(), size_t(rr.t * H + col));
            const double tol =
                double(scale) * std::max(std::fabs(x) / double(scale) * 0x1p-4, 0x1p-10) * 1.0001;
            ASSERT_LE(std::fabs(row_value(got, col, cfg) - x), tol) << "fp8 row " << row << " col " << col;
          }
        }
      }
      off += int64_t(groups[size_t(j)].size());
    }
    for (int64_t row = 0; row < rows; ++row) {
      if (used[size_t(row)]) continue;
      for (size_t b = 0; b < drow; ++b)
        ASSERT_EQ(recv[size_t(row) * drow + b], tk::kPoisonByte)
            << "row " << row << " outside the groups was written";
    }
    // the expert: y = round(x * scale(e)) on the rows of each group
    std::vector<unsigned char> y(size_t(rows * H) * es);
    tk::poison(y.data(), y.size());
    for (int64_t j = 0; j < L; ++j) {
      const int64_t start = c.mode == kc::MoeMode::high_throughput ? 0 : j * buf->ll_group_stride();
      int64_t s0 = start;
      if (c.mode == kc::MoeMode::high_throughput)
        for (int64_t jj = 0; jj < j; ++jj) s0 += counts[size_t(jj)];
      for (int64_t i = 0; i < counts[size_t(j)]; ++i)
        for (int64_t col = 0; col < H; ++col) {
          tk::store_from_double(
              c.dtype, y.data(), size_t((s0 + i) * H + col),
              row_value(recv.data() + size_t(s0 + i) * drow, col, cfg) * expert_scale(me * L + j));
        }
    }
    std::vector<unsigned char> out(size_t(mine.T * H) * es + 1);
    tk::poison(out.data(), out.size());
    ASSERT_EQ(buf->combine(y.data(), h, out.data()), TDIST_SUCCESS) << kc::last_error_message();
    unsigned char ey[8];
    for (int64_t t = 0; t < mine.T; ++t) {
      const std::vector<unsigned char> xr = wire_row(mine, t, cfg);  // what the experts saw of token t
      for (int64_t col = 0; col < H; ++col) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t e = mine.idx[size_t(t * K + k)];
          if (e < 0) continue;
          tk::store_from_double(c.dtype, ey, 0, row_value(xr.data(), col, cfg) * expert_scale(e));
          const double v = double(mine.w[size_t(t * K + k)]) * tk::load_as_double(c.dtype, ey, 0);
          ref += v;
          mag += std::fabs(v);
        }
        const double got = tk::load_as_double(c.dtype, out.data(), size_t(t * H + col));
        // fp16 results below 2^-14 are subnormal: their spacing 2^-24 is absolute, not relative
        const double tiny = c.dtype == DType::f16 ? double(K + 2) * 0x1p-24 : 1e-300;
        const double tol = (2 * u + 8.0 * double(K) * 0x1p-24) * mag + tiny;
        ASSERT_TRUE(std::fabs(got - ref) <= tol)
            << "call " << call << ": PE " << me << " combine token " << t << " col " << col << " = " << got
            << ", expected " << ref << " (tolerance " << tol << ")";
      }
    }
    ASSERT_EQ(out.back(), tk::kPoisonByte) << "combine wrote past the tokens";
  }
}

constexpr kc::MoeMode kModes[] = {kc::MoeMode::high_throughput, kc::MoeMode::low_latency};

TEST(Moe, RandomAndSkewedRoutingBothModes) {
  const int W = tdist_n_pes();
  for (kc::MoeMode m : kModes)
    for (Routing r : {Routing::random, Routing::skewed, Routing::one_pe, Routing::empty}) {
      // chunk 3 with 2 buffers: the rings wrap several times per call and across calls
      run_case({m, DType::bf16, 2 * W, 40, 2, 13, 3, 1, r, 3});
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(Moe, DtypesTopkAndSlices) {
  const int W = tdist_n_pes();
  // top-k wider than the local experts (several pairs of one token on one PE), all dtypes, and
  // high-throughput senders / receivers split over column slices of H
  run_case({kc::MoeMode::high_throughput, DType::f32, 4 * W, 33, 6, 9, 2, 3, Routing::random, 2});
  if (HasFatalFailure()) return;
  run_case({kc::MoeMode::high_throughput, DType::f16, W, 64, 1, 17, 4, 2, Routing::skewed, 2});
  if (HasFatalFailure()) return;
  run_case({kc::MoeMode::high_throughput, DType::f64, 2 * W, 8, 2, 5, 0, 2, Routing::random, 2});
  if (HasFatalFailure()) return;
  run_case({kc::MoeMode::low_latency, DType::f32, 4 * W, 24, 4, 11, 0, 1, Routing::skewed, 3});
  if (HasFatalFailure()) return;
  run_case({kc::MoeMode::low_latency, DType::f16, W, 16, 1, 6, 0, 1, Routing::random, 2});
}

// fp8 dispatch: every token quantized once, its packed row (codes, then one scale per 128
// columns) moved bit for bit in both modes, through column slices that split codes and scales
// (three slices of a 264-byte row), over a wrapping ring; combine in the payload dtype.
TEST(Moe, Fp8DispatchBothModes) {
  const int W = tdist_n_pes();
  for (kc::MoeMode m : kModes)
    for (Routing r : {Routing::random, Routing::skewed}) {
      run_case({m, DType::bf16, 2 * W, 256, 2, 11, 3, 3, r, 3, true});
      if (HasFatalFailure()) return;
    }
  run_case({kc::MoeMode::high_throughput, DType::f32, 4 * W, 128, 5, 7, 2, 1, Routing::random, 2, true});
  if (HasFatalFailure()) return;
  // the buffer refuses a hidden size without whole blocks, on every PE alike
  kc::MoeConfig cfg;
  cfg.num_experts = W;
  cfg.hidden = 200;
  cfg.topk = 1;
  cfg.max_tokens = 4;
  cfg.fp8_dispatch = true;
  std::unique_ptr<kc::MoeBuffer> buf;
  EXPECT_EQ(kc::MoeBuffer::create(cfg, &buf), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(kc::last_error_message()).find("hidden (200) to be a multiple of 128"),
            std::string::npos)
      << kc::last_error_message();
}

// Bad input on one PE: every PE fails with the same message before any data moves, and the buffer
// keeps working afterwards.
TEST(Moe, BadInputFailsOnEveryPe) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  for (kc::MoeMode m : kModes) {
    SCOPED_TRACE(kc::moe_mode_name(m));
    kc::MoeConfig cfg;
    cfg.mode = m;
    cfg.dtype = DType::f32;
    cfg.num_experts = 2 * W;
    cfg.hidden = 8;
    cfg.topk = 2;
    cfg.max_tokens = 4;
    cfg.max_recv_rows = 6;  // below the worst case (4 tokens x W PEs x 2)
    std::unique_ptr<kc::MoeBuffer> buf;
    ASSERT_EQ(kc::MoeBuffer::create(cfg, &buf), TDIST_SUCCESS) << kc::last_error_message();
    std::vector<float> x(4 * 8, 1.0f), w(4 * 2, 0.5f), recv(size_t(buf->recv_rows() * 8)), out(4 * 8);
    std::vector<int64_t> idx = {0, 1, 2, 3, 0, 1, 2, 3};
    for (auto &v : idx) v %= cfg.num_experts;
    std::vector<int32_t> counts(2);
    kc::MoeHandle h;
    const int bad = W - 1;
    // 1. an expert index out of range on PE W-1
    std::vector<int64_t> bidx = idx;
    if (me == bad) bidx[3] = cfg.num_experts + 5;
    EXPECT_EQ(buf->dispatch(x.data(), 2, bidx.data(), w.data(), recv.data(), counts.data(), &h),
              TDIST_ERR_INVALID_VALUE);
    const std::string msg = kc::last_error_message();
    EXPECT_NE(
        msg.find("PE " + std::to_string(bad) + ": topk_idx[1, 1] = " + std::to_string(cfg.num_experts + 5)),
        std::string::npos)
        << msg;
    // 2. more tokens than max_tokens on PE 0
    EXPECT_EQ(buf->dispatch(x.data(), me == 0 ? 5 : 1, idx.data(), w.data(), recv.data(), counts.data(), &h),
              TDIST_ERR_INVALID_VALUE);
    EXPECT_NE(
        std::string(kc::last_error_message()).find("PE 0: 5 tokens exceed the buffer bound max_tokens = 4"),
        std::string::npos)
        << kc::last_error_message();
    // 3. high throughput: every pair to expert 0 overflows PE 0's max_recv_rows (W * 4 rows)
    if (m == kc::MoeMode::high_throughput && W >= 2) {
      std::vector<int64_t> hot = {0, -1, 0, -1, 0, -1, 0, -1};
      EXPECT_EQ(buf->dispatch(x.data(), 4, hot.data(), w.data(), recv.data(), counts.data(), &h),
                TDIST_ERR_INVALID_VALUE);
      EXPECT_NE(
          std::string(kc::last_error_message()).find("PE 0 would receive " + std::to_string(4 * W) + " rows"),
          std::string::npos)
          << kc::last_error_message();
    }
    // 4. afterwards a good call works: one token each, to expert (me + 1) % E
    std::vector<int64_t> one = {int64_t((me + 1) % cfg.num_experts), -1};
    ASSERT_EQ(buf->dispatch(x.data(), 1, one.data(), w.data(), recv.data(), counts.data(), &h), TDIST_SUCCESS)
        << kc::last_error_message();
    ASSERT_EQ(buf->combine(recv.data(), h, out.data()), TDIST_SUCCESS) << kc::last_error_message();
    for (int c = 0; c < 8; ++c) EXPECT_EQ(out[size_t(c)], 0.5f);
  }
  // configuration errors are refused at creation, on every PE alike
  kc::MoeConfig cfg;
  cfg.num_experts = 2 * W;
  cfg.hidden = 8;
  cfg.max_tokens = 4;
  cfg.topk = 2 * W + 1;
  std::unique_ptr<kc::MoeBuffer> buf;
  EXPECT_EQ(kc::MoeBuffer::create(cfg, &buf), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(kc::last_error_message()).find("topk"), std::string::npos);
  if (W > 1) {
    cfg.topk = 1;
    cfg.num_experts = W + 1;
    EXPECT_EQ(kc::MoeBuffer::create(cfg, &buf), TDIST_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(kc::last_error_message()).find("multiple of the PE count"), std::string::npos);
  }
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
}

}  // namespace

TDIST_TEST_MAIN()
