// Multi-process tests of the CPU kernels (tdist_kernels_cpu), run under tdist-run at 2, 4, 8 ranks.
// Every case: fresh random inputs (a new seed per run, agreed by all PEs), poisoned outputs
// (0xFF bytes: NaN in every float dtype), an independent reference computed on each PE from the
// generator. Data movement is compared bit-exactly; reductions and GEMMs within a stated bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include <thread>
#include <utility>
#include <chrono>

#include "common/mp_env.hpp"
#include "tdist/kernels/cpu.hpp"

namespace {

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;
using tk::DType;

constexpr DType kDtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

uint64_t fresh_seed() {
  static uint64_t counter = 0;  // every PE runs the same cases in the same order
  return tk::splitmix64(tdist_test::run_seed() + 0x1000 * ++counter);
}

std::vector<unsigned char> poisoned(size_t bytes) {
  std::vector<unsigned char> v(bytes);
  tk::poison(v.data(), v.size());
  return v;
}

struct A2ACase {
  int64_t S, H, D, block_s, block_d;
  int buffer_num;
  int grid;
  const char *what;
};

std::vector<A2ACase> a2a_cases(int W) {
  std::vector<A2ACase> c = {
      {8, 2, 64, 4, 32, 2, 4, "aligned"},
      {7, 3, 37, 3, 16, 2, 4, "unaligned S and D, partial blocks"},
      {5, 1, 3, 0, 0, 3, 0, "tiny, default tiling and grid, 3 buffers"},
  };
  // More producers than PEs: the bulk variants give role A and role B to different programs.
  if (W <= 4) c.push_back({6, 2, 24, 2, 0, 2, 2 * (W + 1), "grid > 2W (separate self-copy role)"});
  return c;
}

// Exact check of one all-to-all output on this PE against the generator.
::testing::AssertionResult check_a2a(kc::A2ADirection dir, DType t, const A2ACase &k, int W, int me,
                                     uint64_t seed, const unsigned char *out, int64_t out_s, int64_t out_h) {
  const size_t es = tk::dtype_size(t);
  unsigned char expect[8];
  for (int r = 0; r < W; ++r)
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t h = 0; h < k.H; ++h)
        for (int64_t d = 0; d < k.D; ++d) {
          uint64_t src_index;
          int64_t dst;
          if (dir == kc::A2ADirection::reverse) {  // C_me[s, r*H+h, d] = A_r[me*S+s, h, d]
            src_index = uint64_t(((me * k.S + s) * k.H + h) * k.D + d);
            dst = s * out_s + (r * k.H + h) * out_h + d;
          } else {  // Y_me[r*S+s, h, d] = X_r[s, me*H+h, d]
            src_index = uint64_t((s * W * k.H + me * k.H + h) * k.D + d);
            dst = (r * k.S + s) * out_s + h * out_h + d;
          }
          tk::gen_element(t, expect, seed, r, src_index);
          if (std::memcmp(expect, out + dst * es, es) != 0)
            return ::testing::AssertionFailure()
                   << "PE " << me << ": element (src PE " << r << ", s " << s << ", h " << h << ", d " << d
                   << ") = " << tk::load_as_double(t, out + dst * es, 0) << ", expected "
                   << tk::load_as_double(t, expect, 0);
        }
  return ::testing::AssertionSuccess();
}

// Whether every PE's heap is mapped here; not when some peer is on another host (the ROCE engine),
// where the pipeline all-to-all is refused by name (it waits on its peers' slots in place).
bool all_peers_mapped() {
  const tdist_device_state_t *s = tdist_host_device_state();
  for (int pe = 0; pe < s->n_pes; ++pe)
    if (!s->p2p_heap_base[pe]) return false;
  return true;
}

bool pipeline_refused(const kc::AllToAllConfig &cfg) {
  if (cfg.variant != kc::A2AVariant::pipeline || all_peers_mapped()) return false;
  std::unique_ptr<kc::AllToAll> a2a;
  EXPECT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_ERR_NOT_SUPPORTED);
  EXPECT_NE(std::string(kc::last_error_message()).find("variant pipeline waits on its peers"),
            std::string::npos)
      << kc::last_error_message();
  return true;
}

void run_a2a_suite(kc::A2ADirection dir, std::initializer_list<kc::A2AVariant> variants) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  for (kc::A2AVariant v : variants)
    for (DType t : kDtypes)
      for (const A2ACase &k : a2a_cases(W)) {
        SCOPED_TRACE(std::string(kc::a2a_variant_name(v)) + " " + tk::dtype_name(t) + " " + k.what);
        kc::AllToAllConfig cfg;
        cfg.direction = dir;
        cfg.variant = v;
        cfg.dtype = t;
        cfg.S = k.S;
        cfg.H = k.H;
        cfg.D = k.D;
        cfg.block_s = k.block_s;
        cfg.block_d = k.block_d;
        cfg.buffer_num = k.buffer_num;
        cfg.grid = k.grid;
        if (pipeline_refused(cfg)) continue;
        std::unique_ptr<kc::AllToAll> a2a;
        ASSERT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_SUCCESS) << kc::last_error_message();
        const size_t es = tk::dtype_size(t);
        const int64_t n = a2a->in_elems();
        std::vector<unsigned char> in(size_t(n) * es);
        for (int rep = 0; rep < 2; ++rep) {  // twice: the signal-reset protocol across calls
          const uint64_t seed = fresh_seed();
          tk::fill_random(t, in.data(), size_t(n), seed, me);
          std::vector<unsigned char> local = poisoned(size_t(a2a->out_elems()) * es);
          unsigned char *out = local.data();
          if (v == kc::A2AVariant::direct) {
            out = static_cast<unsigned char *>(a2a->output_buffer());
            tk::poison(out, local.size());
            ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);  // all poisoned before anyone writes
          }
          ASSERT_EQ(a2a->run(in.data(), out), TDIST_SUCCESS) << kc::last_error_message();
          const int64_t out_s = dir == kc::A2ADirection::reverse ? W * k.H * k.D : k.H * k.D;
          EXPECT_TRUE(check_a2a(dir, t, k, W, me, seed, out, out_s, k.D)) << "rep " << rep;
        }
      }
}

// One set of variant names (the algorithm's), the same as tdist_kernels.ops and tdist-bench; the
// seed's engine names still parse.
TEST(AllToAll, VariantNames) {
  const std::pair<const char *, kc::A2AVariant> names[] = {{"pipeline", kc::A2AVariant::pipeline},
                                                           {"bulk", kc::A2AVariant::bulk},
                                                           {"wait_notify", kc::A2AVariant::wait_notify},
                                                           {"direct", kc::A2AVariant::direct},
                                                           {"mte", kc::A2AVariant::pipeline},
                                                           {"udma", kc::A2AVariant::bulk},
                                                           {"udma_wait_notify", kc::A2AVariant::wait_notify},
                                                           {"wn", kc::A2AVariant::wait_notify}};
  for (const auto &[name, want] : names) {
    kc::A2AVariant got = kc::A2AVariant::direct;
    ASSERT_TRUE(kc::parse_a2a_variant(name, &got)) << name;
    EXPECT_EQ(got, want) << name;
  }
  for (int i = 0; i < 4; ++i) {
    const char *name = names[i].first;
    EXPECT_STREQ(kc::a2a_variant_name(names[i].second), name);
  }
  kc::A2AVariant got;
  EXPECT_FALSE(kc::parse_a2a_variant("staged", &got));
}

TEST(ReverseAllToAll, SeedVariantsAndDirect) {
  run_a2a_suite(kc::A2ADirection::reverse, {kc::A2AVariant::pipeline, kc::A2AVariant::bulk,
                                            kc::A2AVariant::wait_notify, kc::A2AVariant::direct});
}

// The direct variant has no host barrier: its output must stay intact until this PE's next run(),
// even while faster PEs go on to the next call. PE 0 lingers after call 1 (the others run call 2
// at once, whose stores go to the other buffer and which must wait for PE 0's flag), then checks
// call 1's output, then everyone runs and checks call 2, and a third call reuses call 1's buffer.
TEST(ReverseAllToAll, DirectOutputSurvivesFasterPeers) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const A2ACase k{6, 2, 40, 0, 0, 1, 0, "direct, lingering PE"};
  kc::AllToAllConfig cfg;
  cfg.variant = kc::A2AVariant::direct;
  cfg.dtype = DType::f32;
  cfg.S = k.S;
  cfg.H = k.H;
  cfg.D = k.D;
  std::unique_ptr<kc::AllToAll> a2a;
  ASSERT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_SUCCESS) << kc::last_error_message();
  const int64_t n = a2a->in_elems();
  std::vector<unsigned char> in(size_t(n) * 4);
  uint64_t seeds[3];
  for (uint64_t &sd : seeds) sd = fresh_seed();
  unsigned char *outs[3];
  // Setup, with barriers: both buffers poisoned before anyone writes them (a first call fills and
  // checks buffer A). From then on a PE may only touch last_output(): the next call's buffer can
  // already be receiving data from faster peers. So each output is re-poisoned after its check,
  // ready for the call after next.
  tk::poison(static_cast<unsigned char *>(a2a->output_buffer()), size_t(n) * 4);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  const uint64_t seed0 = fresh_seed();
  tk::fill_random(DType::f32, in.data(), size_t(n), seed0, me);
  ASSERT_EQ(a2a->run(in.data(), nullptr), TDIST_SUCCESS) << kc::last_error_message();
  EXPECT_TRUE(check_a2a(kc::A2ADirection::reverse, DType::f32, k, W, me, seed0,
                        static_cast<const unsigned char *>(a2a->last_output()), W * k.H * k.D, k.D));
  tk::poison(static_cast<unsigned char *>(a2a->last_output()), size_t(n) * 4);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);  // nobody has started the next call yet
  tk::poison(static_cast<unsigned char *>(a2a->output_buffer()), size_t(n) * 4);
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
  for (int call = 0; call < 3; ++call) {
    tk::fill_random(DType::f32, in.data(), size_t(n), seeds[call], me);
    outs[call] = static_cast<unsigned char *>(a2a->output_buffer());
    ASSERT_EQ(a2a->run(in.data(), nullptr), TDIST_SUCCESS) << kc::last_error_message();
    ASSERT_EQ(a2a->last_output(), outs[call]);
    if (call == 0 && me == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the others run on
    EXPECT_TRUE(check_a2a(kc::A2ADirection::reverse, DType::f32, k, W, me, seeds[call], outs[call],
                          W * k.H * k.D, k.D))
        << "call " << call;
    tk::poison(outs[call], size_t(n) * 4);
  }
  EXPECT_EQ(outs[0], outs[2]) << "calls alternate between two buffers";
  EXPECT_NE(outs[0], outs[1]);
  EXPECT_EQ(a2a->run(in.data(), outs[0]), TDIST_ERR_INVALID_PARAM) << "another call's buffer must be refused";
  ASSERT_EQ(tdist_host_barrier_all(), TDIST_SUCCESS);
}

TEST(DispatchAllToAll, PipelineAndDirect) {
  run_a2a_suite(kc::A2ADirection::dispatch, {kc::A2AVariant::pipeline, kc::A2AVariant::direct});
}

TEST(ReverseAllToAll, StridedInputAndOutput) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const A2ACase k{6, 3, 20, 4, 8, 2, 4, "strided"};
  for (DType t : kDtypes) {
    SCOPED_TRACE(tk::dtype_name(t));
    kc::AllToAllConfig cfg;
    cfg.variant = kc::A2AVariant::pipeline;
    cfg.dtype = t;
    cfg.S = k.S;
    cfg.H = k.H;
    cfg.D = k.D;
    cfg.block_s = k.block_s;
    cfg.block_d = k.block_d;
    if (pipeline_refused(cfg)) continue;
    std::unique_ptr<kc::AllToAll> a2a;
    ASSERT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_SUCCESS) << kc::last_error_message();
    const size_t es = tk::dtype_size(t);
    // Input heads padded to D+3 elements, output heads to D+5: padding must stay untouched.
    const int64_t in_h = k.D + 3, in_s = k.H * in_h, out_h = k.D + 5, out_s = W * k.H * out_h;
    const uint64_t seed = fresh_seed();
    std::vector<unsigned char> in = poisoned(size_t(W * k.S * in_s) * es);
    for (int64_t row = 0; row < W * k.S; ++row)
      for (int64_t h = 0; h < k.H; ++h)
        for (int64_t d = 0; d < k.D; ++d)
          tk::gen_element(t, &in[size_t(row * in_s + h * in_h + d) * es], seed, me,
                          uint64_t((row * k.H + h) * k.D + d));
    std::vector<unsigned char> out = poisoned(size_t(k.S * out_s) * es);
    ASSERT_EQ(a2a->run_strided(in.data(), in_s, in_h, out.data(), out_s, out_h), TDIST_SUCCESS)
        << kc::last_error_message();
    EXPECT_TRUE(check_a2a(kc::A2ADirection::reverse, t, k, W, me, seed, out.data(), out_s, out_h));
    size_t pad_touched = 0;
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t hh = 0; hh < W * k.H; ++hh)
        for (int64_t d = k.D; d < out_h; ++d)
          for (size_t b = 0; b < es; ++b)
            pad_touched += out[size_t(s * out_s + hh * out_h + d) * es + b] != 0xff;
    EXPECT_EQ(pad_touched, 0u) << "padding between output heads was written";
  }
}

TEST(AllToAll, DispatchThenReverseIsIdentity) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  kc::AllToAllConfig cfg;
  cfg.S = 5;
  cfg.H = 2;
  cfg.D = 19;
  cfg.dtype = DType::bf16;
  cfg.direction = kc::A2ADirection::dispatch;
  if (pipeline_refused(cfg))
    GTEST_SKIP() << "the pipeline dispatch needs every peer mapped (refusal checked)";
  std::unique_ptr<kc::AllToAll> disp, comb;
  ASSERT_EQ(kc::AllToAll::create(cfg, &disp), TDIST_SUCCESS) << kc::last_error_message();
  cfg.direction = kc::A2ADirection::reverse;
  cfg.variant = kc::A2AVariant::wait_notify;
  ASSERT_EQ(kc::AllToAll::create(cfg, &comb), TDIST_SUCCESS) << kc::last_error_message();
  const size_t n = size_t(disp->in_elems()), es = 2;
  std::vector<unsigned char> x(n * es), y = poisoned(n * es), z = poisoned(n * es);
  tk::fill_random(cfg.dtype, x.data(), n, fresh_seed(), me);
  ASSERT_EQ(disp->run(x.data(), y.data()), TDIST_SUCCESS) << kc::last_error_message();
  ASSERT_EQ(comb->run(y.data(), z.data()), TDIST_SUCCESS) << kc::last_error_message();
  EXPECT_EQ(std::memcmp(x.data(), z.data(), n * es), 0)
      << "reverse(dispatch(x)) != x on PE " << me << " of " << W;
}

TEST(AllToAll, RejectsInvalidConfigs) {
  std::unique_ptr<kc::AllToAll> a2a;
  kc::AllToAllConfig cfg;
  cfg.S = 4;
  cfg.H = 1;
  cfg.D = 4;
  cfg.grid = 3;
  EXPECT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(kc::last_error_message()).find("grid"), std::string::npos)
      << kc::last_error_message();
  cfg.grid = 2;
  cfg.variant = kc::A2AVariant::bulk;
  cfg.buffer_num = 1;
  EXPECT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_ERR_INVALID_PARAM);
  cfg.buffer_num = 2;
  cfg.direction = kc::A2ADirection::dispatch;
  EXPECT_EQ(kc::AllToAll::create(cfg, &a2a), TDIST_ERR_NOT_SUPPORTED);
  EXPECT_EQ(a2a, nullptr);
}

// |got - ref| <= 2 W u sum_r |x_r| (+ tiny): each of the W-1 additions rounds once to the storage
// type (u: its unit roundoff) in the ring; one-shot/two-shot round once at the end.
TEST(AllReduce, AllAlgorithmsDtypesSizes) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const int64_t sizes[] = {1, 3, 37, 1000, 4099};
  for (kc::AllReduceAlgo algo :
       {kc::AllReduceAlgo::one_shot, kc::AllReduceAlgo::two_shot, kc::AllReduceAlgo::ring})
    for (DType t : kDtypes) {
      SCOPED_TRACE(std::string(kc::allreduce_algo_name(algo)) + " " + tk::dtype_name(t));
      kc::AllReduceConfig cfg;
      cfg.algo = algo;
      cfg.dtype = t;
      cfg.max_elems = 4099;
      cfg.grid = 3;
      std::unique_ptr<kc::AllReduce> ar;
      ASSERT_EQ(kc::AllReduce::create(cfg, &ar), TDIST_SUCCESS) << kc::last_error_message();
      const size_t es = tk::dtype_size(t);
      for (int64_t n : sizes) {
        const uint64_t seed = fresh_seed();
        std::vector<unsigned char> in(size_t(n) * es), out = poisoned(size_t(n) * es);
        tk::fill_random(t, in.data(), size_t(n), seed, me);
        const bool in_place = n == 37;
        ASSERT_EQ(ar->run(in.data(), in_place ? in.data() : out.data(), n), TDIST_SUCCESS)
            << kc::last_error_message();
        const unsigned char *res = in_place ? in.data() : out.data();
        int64_t bad = 0, first = -1;
        double first_got = 0, first_ref = 0;
        for (int64_t i = 0; i < n; ++i) {
          double ref = 0, mag = 0;
          unsigned char e[8];
          for (int r = 0; r < W; ++r) {
            tk::gen_element(t, e, seed, r, uint64_t(i));
            double v = tk::load_as_double(t, e, 0);
            ref += v;
            mag += std::fabs(v);
          }
          const double got = tk::load_as_double(t, res, size_t(i));
          const double tol = 2.0 * W * tk::dtype_unit_roundoff(t) * mag + 1e-300;
          if (!(std::fabs(got - ref) <= tol)) {
            if (!bad++) first = i, first_got = got, first_ref = ref;
          }
        }
        EXPECT_EQ(bad, 0) << "n " << n << (in_place ? " in place" : "") << ": first bad element " << first
                          << " = " << first_got << ", expected " << first_ref;
      }
    }
}

// GEMM tolerance: accumulation in float (double for f64) over k terms, then one rounding to the
// output type: |got - ref| <= 2 (k u_acc sum|a b| + u_out |ref|), times W terms for GEMM+RS.
double gemm_tol(DType t, int64_t terms, double sumabs, double ref) {
  const double u_acc = t == DType::f64 ? 0x1p-53 : 0x1p-24;
  return 2.0 * (double(terms) * u_acc * sumabs + tk::dtype_unit_roundoff(t) * std::fabs(ref)) + 1e-300;
}

struct GemmCase {
  int64_t m, n, k, block_m;
  const char *what;
};
constexpr GemmCase kGemmCases[] = {
    {8, 16, 16, 4, "aligned"}, {5, 7, 9, 2, "unaligned"}, {3, 5, 4, 0, "default tiling"}};

TEST(AgGemm, AllDtypesShapes) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  for (DType t : kDtypes)
    for (const GemmCase &g : kGemmCases) {
      SCOPED_TRACE(std::string(tk::dtype_name(t)) + " " + g.what);
      kc::AgGemmConfig cfg;
      cfg.dtype = t;
      cfg.m = g.m;
      cfg.n = g.n;
      cfg.k = g.k;
      cfg.block_m = g.block_m;
      cfg.grid = 3;
      cfg.producers = 1;
      std::unique_ptr<kc::AgGemm> op;
      ASSERT_EQ(kc::AgGemm::create(cfg, &op), TDIST_SUCCESS) << kc::last_error_message();
      const size_t es = tk::dtype_size(t);
      const uint64_t seed_a = fresh_seed(), seed_b = fresh_seed();
      std::vector<unsigned char> a(size_t(g.m * g.k) * es), b(size_t(g.k * g.n) * es);
      std::vector<unsigned char> c = poisoned(size_t(W * g.m * g.n) * es);
      tk::fill_random(t, a.data(), a.size() / es, seed_a, me);
      tk::fill_random(t, b.data(), b.size() / es, seed_b, me);
      ASSERT_EQ(op->run(a.data(), b.data(), c.data()), TDIST_SUCCESS) << kc::last_error_message();
      int64_t bad = 0;
      std::string first;
      unsigned char e[8];
      for (int src = 0; src < W; ++src)
        for (int64_t i = 0; i < g.m; ++i)
          for (int64_t j = 0; j < g.n; ++j) {
            double ref = 0, sumabs = 0;
            for (int64_t kk = 0; kk < g.k; ++kk) {
              tk::gen_element(t, e, seed_a, src, uint64_t(i * g.k + kk));
              const double av = tk::load_as_double(t, e, 0);
              const double bv = tk::load_as_double(t, b.data(), size_t(kk * g.n + j));
              ref += av * bv;
              sumabs += std::fabs(av * bv);
            }
            const double got = tk::load_as_double(t, c.data(), size_t((src * g.m + i) * g.n + j));
            if (!(std::fabs(got - ref) <= gemm_tol(t, g.k, sumabs, ref)) && !bad++)
              first = "C[" + std::to_string(src * g.m + i) + "," + std::to_string(j) +
                      "] = " + std::to_string(got) + ", expected " + std::to_string(ref);
          }
      EXPECT_EQ(bad, 0) << first;
    }
}

TEST(GemmRs, AllDtypesShapes) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  for (DType t : kDtypes)
    for (const GemmCase &g : kGemmCases) {
      SCOPED_TRACE(std::string(tk::dtype_name(t)) + " " + g.what);
      kc::GemmRsConfig cfg;
      cfg.dtype = t;
      cfg.m = g.m;
      cfg.n = g.n;
      cfg.k = g.k;
      cfg.block_m = g.block_m;
      cfg.grid = 3;
      cfg.consumers = 1;
      std::unique_ptr<kc::GemmRs> op;
      ASSERT_EQ(kc::GemmRs::create(cfg, &op), TDIST_SUCCESS) << kc::last_error_message();
      const size_t es = tk::dtype_size(t);
      const uint64_t seed_a = fresh_seed(), seed_b = fresh_seed();
      std::vector<unsigned char> a(size_t(W * g.m * g.k) * es), b(size_t(g.k * g.n) * es);
      std::vector<unsigned char> c = poisoned(size_t(g.m * g.n) * es);
      tk::fill_random(t, a.data(), a.size() / es, seed_a, me);
      tk::fill_random(t, b.data(), b.size() / es, seed_b, me);
      ASSERT_EQ(op->run(a.data(), b.data(), c.data()), TDIST_SUCCESS) << kc::last_error_message();
      int64_t bad = 0;
      std::string first;
      unsigned char ea[8], eb[8];
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double ref = 0, sumabs = 0;
          for (int r = 0; r < W; ++r)
            for (int64_t kk = 0; kk < g.k; ++kk) {
              tk::gen_element(t, ea, seed_a, r, uint64_t((me * g.m + i) * g.k + kk));
              tk::gen_element(t, eb, seed_b, r, uint64_t(kk * g.n + j));
              const double p = tk::load_as_double(t, ea, 0) * tk::load_as_double(t, eb, 0);
              ref += p;
              sumabs += std::fabs(p);
            }
          const double got = tk::load_as_double(t, c.data(), size_t(i * g.n + j));
          if (!(std::fabs(got - ref) <= gemm_tol(t, W * g.k, sumabs, ref)) && !bad++)
            first = "C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) +
                    ", expected " + std::to_string(ref);
        }
      EXPECT_EQ(bad, 0) << first;
    }
}

// fp16/bf16 conversion helpers (single process logic, run on every rank).
TEST(Dtype, HalfConversionsRoundTripAndRound) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t x = uint16_t(h);
    const float f = tk::f16_to_f32(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tk::f16_to_f32(tk::f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(tk::f32_to_f16(f), x) << "fp16 round trip of 0x" << std::hex << h;
    const float g = tk::bf16_to_f32(x);
    if (!std::isnan(g)) {
      ASSERT_EQ(tk::f32_to_bf16(g), x) << "bf16 round trip of 0x" << std::hex << h;
    }
  }
  EXPECT_EQ(tk::f32_to_f16(1.0f + 0x1p-11f), tk::f32_to_f16(1.0f));   // tie -> even
  EXPECT_EQ(tk::f32_to_f16(1.0f + 3 * 0x1p-11f), uint16_t(0x3c02));   // tie -> even (up)
  EXPECT_EQ(tk::f32_to_f16(65520.0f), uint16_t(0x7c00));              // overflow -> Inf
  EXPECT_EQ(tk::f32_to_f16(0x1p-25f), uint16_t(0));                   // tie -> even (0)
  EXPECT_EQ(tk::f32_to_f16(0x1.8p-25f), uint16_t(1));                 // smallest subnormal
  EXPECT_EQ(tk::f32_to_bf16(1.0f + 0x1p-8f), tk::f32_to_bf16(1.0f));  // tie -> even
}

// fp8 e4m3 helpers (the MoE fp8 dispatch): decoding against the format's definition, encoding
// against the nearest representable value found by search (ties to the even code, saturation).
TEST(Dtype, Fp8E4m3DecodeAndRoundToNearestEven) {
  std::vector<double> val(256);
  for (int q = 0; q < 256; ++q) {
    const int e = (q >> 3) & 15, m = q & 7;
    const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
    val[size_t(q)] = (q & 0x80) ? -mag : mag;
    const float got = tk::e4m3_to_f32(uint8_t(q));
    if (e == 15 && m == 7) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << q;
      continue;
    }
    ASSERT_EQ(double(got), val[size_t(q)]) << "code 0x" << std::hex << q;
  }
  EXPECT_EQ(tk::e4m3_to_f32(0x7e), 448.0f);
  // expected encoding: the nearest finite value, ties to the even code, |f| > 448 -> +-448
  auto expect = [&](float f) {
    int best = -1;
    double bd = 0;
    for (int q = 0; q < 256; ++q) {
      if ((q & 0x7f) == 0x7f || ((q & 0x80) != 0) != std::signbit(f)) continue;
      const double d = std::fabs(double(f) - val[size_t(q)]);
      if (best < 0 || d < bd || (d == bd && (q & 1) == 0)) {
        best = q;
        bd = d;
      }
    }
    return uint8_t(best);
  };
  std::vector<float> probes = {0.0f,   -0.0f,    448.0f,    -448.0f,    449.0f,    464.0f, 1e30f,
                               -1e30f, 0x1p-10f, 0x1.0p-9f, 0x1.8p-10f, 0x1.fp-7f, 0x1p-6f};
  for (int q = 0; q < 0x7e; ++q) {  // every positive value, the midpoints to the next, one ulp either side
    const float a = float(val[size_t(q)]), b = float(val[size_t(q + 1)]);
    const float mid = float((double(a) + double(b)) / 2);
    for (float f : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      probes.push_back(f);
      probes.push_back(-f);
    }
  }
  std::mt19937_64 g(tdist_test::run_seed());
  for (int i = 0; i < 20000; ++i)
    probes.push_back(float(std::ldexp(double(g() >> 11) * 0x1p-53 * 2 - 1, int(g() % 24) - 14)));
  for (float f : probes)
    ASSERT_EQ(int(tk::f32_to_e4m3(f)), int(expect(f))) << "encoding " << std::hexfloat << f;
  EXPECT_EQ(tk::f32_to_e4m3(std::numeric_limits<float>::infinity()), uint8_t(0x7e));  // saturates
  EXPECT_EQ(tk::f32_to_e4m3(std::nanf("")) & 0x7f, 0x7f);
}

}  // namespace

TDIST_TEST_MAIN()
