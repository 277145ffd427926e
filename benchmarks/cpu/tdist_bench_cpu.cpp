// tdist-bench-cpu: runs one CPU kernel over a list of sizes under tdist-run and prints one JSON
// object per size on rank 0's stdout. tools/tdist-bench drives it (and the Open MPI baseline).
//
//   tdist-run -n 4 -- tdist-bench-cpu --kernel a2a_direct --dtype f32 --bytes 64K,1M,16M
//
// Kernels: a2a_pipeline a2a_bulk a2a_wait_notify a2a_direct (reverse all-to-all; the variants of
// kc::A2AVariant), dispatch_pipeline dispatch_direct,
// ar_one_shot ar_two_shot ar_ring, ag_gemm, gemm_rs, memcpy (every PE copies its bytes locally at
// the same time: the copy ceiling on this machine).
// --bytes is the input size per PE. All-to-all: S = bytes / (W*H*D*elem) (--H, --D); with
// --layout mpi instead S = H = 1 and D = bytes / (W*elem): every peer's share is one contiguous
// block in the input and in the output, the layout of MPI_Alltoall (the default layout is the
// seed's combine: 4 KiB rows, interleaved by source PE in the output). GEMMs: m = bytes / (k*elem)
// rows of A per PE (--n, --k).
// Every size: a checked run on fresh random inputs with a poisoned output, warm-up, the timed loop
// on a re-poisoned output, and a check of the timed loop's result. Time is the slowest PE's mean.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tdist/kernels/cpu.hpp"
#include "tdist/kernels/reference.hpp"
#include "tdist/tdist.h"

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;
namespace ref = tdist::kernels::reference;

namespace {

/** The kernel's name; the former names (a2a_mte, a2a_udma, a2a_wn, dispatch_mte) are accepted with
 *  a note on stderr, so records always carry the current name. */
std::string canonical_kernel(const std::string &k) {
  static const char *const renamed[][2] = {{"a2a_mte", "a2a_pipeline"},
                                           {"a2a_udma", "a2a_bulk"},
                                           {"a2a_wn", "a2a_wait_notify"},
                                           {"dispatch_mte", "dispatch_pipeline"}};
  for (const auto &r : renamed)
    if (k == r[0]) {
      std::fprintf(stderr, "tdist-bench-cpu: kernel %s is now called %s\n", r[0], r[1]);
      return r[1];
    }
  return k;
}

struct Options {
  std::string kernel = "a2a_pipeline";
  tk::DType dtype = tk::DType::f32;
  std::vector<size_t> bytes = {1 << 20};
  int64_t H = 4, D = 256;    // all-to-all
  bool mpi_layout = false;   // all-to-all: S = H = 1, one block per peer (--layout mpi)
  int64_t n = 256, k = 256;  // GEMMs
  int64_t block_s = 0, block_d = 0;
  int buffer_num = 2;
  int grid = 0;  // 0: the kernel's default
  int iters = 0, warmup = 2;
  double min_time_s = 0.2;
  bool check = true;
};

[[noreturn]] void usage(const char *msg) {
  std::fprintf(
      stderr,
      "tdist-bench-cpu: %s\nusage: tdist-bench-cpu --kernel K [--dtype f32|f64|f16|bf16] --bytes N[,N..] "
      "[--H h --D d | --layout mpi] [--block-s b --block-d b --buffer-num n] [--n n --k k] [--grid g] "
      "[--iters n] "
      "[--warmup n] [--min-time s] [--no-check]\n",
      msg);
  std::exit(2);
}

std::vector<size_t> parse_sizes(const std::string &str) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos <= str.size()) {
    size_t comma = str.find(',', pos);
    std::string tok = str.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char *end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    std::string suf(end);
    if (suf == "K" || suf == "k" || suf == "KiB")
      v *= 1024;
    else if (suf == "M" || suf == "MiB")
      v *= 1024.0 * 1024;
    else if (suf == "G" || suf == "GiB")
      v *= 1024.0 * 1024 * 1024;
    else if (!suf.empty())
      usage(("bad size '" + tok + "'").c_str());
    out.push_back(size_t(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int g_failures = 0;

void die(const char *what, int st) {
  std::fprintf(stderr, "tdist-bench-cpu[pe %d]: %s: %s: %s %s\n", tdist_my_pe(), what, tdist_status_name(st),
               kc::last_error_message(), tdist_last_error_message());
  std::exit(1);
}

double max_over_pes(double v) {
  std::vector<double> all(static_cast<size_t>(tdist_n_pes()));
  if (int st = tdist_ctrl_allgather(&v, all.data(), sizeof v); st) die("allgather", st);
  return *std::max_element(all.begin(), all.end());
}

uint64_t shared_seed() {
  static uint64_t counter = 0;
  uint64_t s = uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) + ++counter;
  if (int st = tdist_ctrl_broadcast(&s, sizeof s, 0); st) die("broadcast", st);
  return tk::splitmix64(s);
}

// One benchmark case: prepare(seed) fills inputs for `seed` and poisons the output; run() runs
// the kernel once; check(seed) returns bad elements (and a reason).
struct Case {
  std::function<void(uint64_t)> prepare;
  std::function<int()> run;
  std::function<int64_t(uint64_t, std::string *)> check;
  size_t bytes = 0;   // input bytes per PE (the bandwidth numerator)
  double flops = 0;   // per PE, GEMMs only
  std::string shape;  // JSON fragment
};

void measure(const Options &o, Case &c) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  std::string why;
  uint64_t seed = shared_seed();
  c.prepare(seed);
  if (int st = c.run(); st) die("run", st);
  int64_t bad = o.check ? c.check(seed, &why) : 0;
  for (int i = 0; i < o.warmup; ++i)
    if (int st = c.run(); st) die("run", st);
  seed = shared_seed();  // fresh inputs for the timed loop, checked after it
  c.prepare(seed);
  int iters = o.iters;
  if (iters <= 0) {  // enough iterations for min_time_s, judged from one timed run
    tdist_host_barrier_all();
    double t0 = now_s();
    if (int st = c.run(); st) die("run", st);
    double one = max_over_pes(now_s() - t0);
    iters = int(std::clamp(o.min_time_s / std::max(one, 1e-7), 3.0, 5000.0));
  }
  tdist_host_barrier_all();
  double t0 = now_s();
  for (int i = 0; i < iters; ++i)
    if (int st = c.run(); st) die("run", st);
  double dt = max_over_pes((now_s() - t0) / iters);
  if (o.check) {
    std::string why2;
    int64_t bad2 = c.check(seed, &why2);
    if (bad2 && why.empty()) why = why2;
    bad += bad2;
  }
  double bad_total = max_over_pes(double(bad));
  if (bad)
    std::fprintf(stderr, "tdist-bench-cpu[pe %d]: %s: %lld bad elements: %s\n", me, o.kernel.c_str(),
                 (long long)bad, why.c_str());
  if (bad_total > 0) ++g_failures;
  if (me == 0) {
    std::printf(
        "{\"impl\": \"tdist\", \"kernel\": \"%s\", \"dtype\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
        "\"iters\": %d, \"time_us\": %.3f, \"algbw_GBps\": %.4f, %s%s\"check\": \"%s\"}\n",
        o.kernel.c_str(), tk::dtype_name(o.dtype), W, c.bytes, iters, dt * 1e6, double(c.bytes) / dt / 1e9,
        c.shape.c_str(),
        c.flops > 0 ? ("\"gflops\": " + std::to_string(c.flops / dt / 1e9) + ", ").c_str() : "",
        !o.check        ? "skipped"
        : bad_total > 0 ? "FAIL"
                        : "ok");
    std::fflush(stdout);
  }
}

void bench_alltoall(const Options &o, kc::A2ADirection dir, kc::A2AVariant v) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const size_t es = tk::dtype_size(o.dtype);
  for (size_t bytes : o.bytes) {
    kc::AllToAllConfig cfg;
    cfg.direction = dir;
    cfg.variant = v;
    cfg.dtype = o.dtype;
    cfg.H = o.mpi_layout ? 1 : o.H;
    cfg.D = o.mpi_layout ? std::max<int64_t>(1, int64_t(bytes / (size_t(W) * es))) : o.D;
    cfg.S = std::max<int64_t>(1, int64_t(bytes / (size_t(W) * cfg.H * cfg.D * es)));
    cfg.block_s = o.block_s;
    cfg.block_d = o.block_d;
    cfg.buffer_num = o.buffer_num;
    if (o.grid) cfg.grid = o.grid;
    std::unique_ptr<kc::AllToAll> a2a;
    if (int st = kc::AllToAll::create(cfg, &a2a); st) die("AllToAll::create", st);
    const size_t n = size_t(a2a->in_elems());
    std::vector<unsigned char> in(n * es), local(n * es);
    const bool direct = v == kc::A2AVariant::direct;
    // direct: the output is the symmetric buffer of the call (double-buffered, see cpu.hpp)
    unsigned char *out = direct ? static_cast<unsigned char *>(a2a->output_buffer()) : local.data();
    Case c;
    c.bytes = n * es;
    c.shape = "\"S\": " + std::to_string(cfg.S) + ", \"H\": " + std::to_string(cfg.H) +
              ", \"D\": " + std::to_string(cfg.D) +
              ", \"block_s\": " + std::to_string(a2a->config().block_s) +
              ", \"grid\": " + std::to_string(a2a->config().grid) + ", ";
    c.prepare = [&](uint64_t seed) {
      tk::fill_random(o.dtype, in.data(), n, seed, me);
      if (direct) out = static_cast<unsigned char *>(a2a->output_buffer());
      tk::poison(out, n * es);
      tdist_host_barrier_all();
    };
    c.run = [&] { return a2a->run(in.data(), direct ? nullptr : out); };
    c.check = [&](uint64_t seed, std::string *why) {
      const int64_t out_s = dir == kc::A2ADirection::reverse ? W * cfg.H * cfg.D : cfg.H * cfg.D;
      // direct: what the latest call wrote (the timed loop alternates the two buffers)
      const void *res = direct ? a2a->last_output() : out;
      return ref::check_alltoall(dir, o.dtype, cfg.S, cfg.H, cfg.D, W, me, seed, res, out_s, cfg.D, why);
    };
    measure(o, c);
  }
}

void bench_allreduce(const Options &o, kc::AllReduceAlgo algo) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const size_t es = tk::dtype_size(o.dtype);
  for (size_t bytes : o.bytes) {
    kc::AllReduceConfig cfg;
    cfg.algo = algo;
    cfg.dtype = o.dtype;
    cfg.max_elems = std::max<int64_t>(1, int64_t(bytes / es));
    if (o.grid) cfg.grid = o.grid;
    std::unique_ptr<kc::AllReduce> ar;
    if (int st = kc::AllReduce::create(cfg, &ar); st) die("AllReduce::create", st);
    const int64_t n = cfg.max_elems;
    std::vector<unsigned char> in(size_t(n) * es), out(size_t(n) * es);
    Case c;
    c.bytes = size_t(n) * es;
    c.shape = "\"elems\": " + std::to_string(n) + ", \"grid\": " + std::to_string(cfg.grid) + ", ";
    c.prepare = [&](uint64_t seed) {
      tk::fill_random(o.dtype, in.data(), size_t(n), seed, me);
      tk::poison(out.data(), out.size());
    };
    c.run = [&] { return ar->run(in.data(), out.data(), n); };
    c.check = [&](uint64_t seed, std::string *why) {
      return ref::check_allreduce(o.dtype, n, W, seed, out.data(), why);
    };
    measure(o, c);
  }
}

void bench_gemm(const Options &o, bool ag) {
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const size_t es = tk::dtype_size(o.dtype);
  for (size_t bytes : o.bytes) {
    const int64_t m = std::max<int64_t>(1, int64_t(bytes / (size_t(o.k) * es)) / (ag ? 1 : W));
    const int64_t a_rows = ag ? m : W * m, c_rows = ag ? W * m : m;
    std::vector<unsigned char> a(size_t(a_rows * o.k) * es), b(size_t(o.k * o.n) * es),
        cbuf(size_t(c_rows * o.n) * es);
    std::unique_ptr<kc::AgGemm> agop;
    std::unique_ptr<kc::GemmRs> rsop;
    int grid = o.grid ? o.grid : kc::kDefaultGrid;
    if (ag) {
      kc::AgGemmConfig cfg;
      cfg.dtype = o.dtype;
      cfg.m = m;
      cfg.n = o.n;
      cfg.k = o.k;
      cfg.grid = grid;
      if (int st = kc::AgGemm::create(cfg, &agop); st) die("AgGemm::create", st);
    } else {
      kc::GemmRsConfig cfg;
      cfg.dtype = o.dtype;
      cfg.m = m;
      cfg.n = o.n;
      cfg.k = o.k;
      cfg.grid = grid;
      if (int st = kc::GemmRs::create(cfg, &rsop); st) die("GemmRs::create", st);
    }
    uint64_t seed_b = 0;
    Case c;
    c.bytes = a.size();
    c.flops = 2.0 * double(W * m) * double(o.n) * double(o.k) / (ag ? 1 : 1);
    c.shape = "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(o.n) +
              ", \"k\": " + std::to_string(o.k) + ", \"grid\": " + std::to_string(grid) + ", ";
    c.prepare = [&](uint64_t seed) {
      seed_b = tk::splitmix64(seed + 1);
      tk::fill_random(o.dtype, a.data(), a.size() / es, seed, me);
      tk::fill_random(o.dtype, b.data(), b.size() / es, seed_b, me);
      tk::poison(cbuf.data(), cbuf.size());
    };
    c.run = [&] {
      return ag ? agop->run(a.data(), b.data(), cbuf.data()) : rsop->run(a.data(), b.data(), cbuf.data());
    };
    c.check = [&](uint64_t seed, std::string *why) {
      return ag ? ref::check_ag_gemm(o.dtype, m, o.n, o.k, W, me, seed, seed_b, cbuf.data(), why)
                : ref::check_gemm_rs(o.dtype, m, o.n, o.k, W, me, seed, seed_b, cbuf.data(), why);
    };
    measure(o, c);
  }
}

// Page-aligned bytes for the copy ceiling. Two std::vectors below malloc's mmap threshold sit
// back to back in the heap, the destination 16 bytes past the source modulo 4 KiB, and on the
// 2-core EPYC box glibc's memcpy of 4 KiB to 512 KiB (rep movsb there) runs at 2.3-2.8 GB/s when
// the destination is 1 to 31 bytes past the source modulo 4 KiB, against 42-49 GB/s otherwise
// (one core, 64 KiB): the 64 KiB ceiling read 26-73 us where the copy takes 1.5 us.
struct PageBytes {
  explicit PageBytes(size_t n)
      : p(static_cast<unsigned char *>(
              std::aligned_alloc(4096, (std::max<size_t>(n, 1) + 4095) / 4096 * 4096)),
          &std::free) {
    if (!p) std::abort();
  }
  unsigned char *data() const { return p.get(); }
  std::unique_ptr<unsigned char, decltype(&std::free)> p;
};

void bench_memcpy(const Options &o) {
  for (size_t bytes : o.bytes) {
    PageBytes src(bytes), dst(bytes);
    Case c;
    c.bytes = bytes;
    c.shape = "";
    c.prepare = [&](uint64_t seed) {
      tk::fill_random(tk::DType::f32, src.data(), bytes / 4, seed, tdist_my_pe());
      tk::poison(dst.data(), bytes);
    };
    c.run = [&] {
      std::memcpy(dst.data(), src.data(), bytes);
      return 0;
    };
    c.check = [&](uint64_t, std::string *why) -> int64_t {
      if (std::memcmp(dst.data(), src.data(), bytes) == 0) return 0;
      *why = "memcpy result differs";
      return 1;
    };
    measure(o, c);
  }
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--kernel")
      o.kernel = canonical_kernel(next());
    else if (a == "--dtype") {
      if (!tk::parse_dtype(next(), &o.dtype)) usage("unknown dtype");
    } else if (a == "--bytes")
      o.bytes = parse_sizes(next());
    else if (a == "--H")
      o.H = std::stoll(next());
    else if (a == "--D")
      o.D = std::stoll(next());
    else if (a == "--layout") {
      const std::string l = next();
      if (l != "mpi" && l != "seed") usage("--layout is mpi or seed");
      o.mpi_layout = l == "mpi";
    } else if (a == "--n")
      o.n = std::stoll(next());
    else if (a == "--k")
      o.k = std::stoll(next());
    else if (a == "--block-s")
      o.block_s = std::stoll(next());
    else if (a == "--block-d")
      o.block_d = std::stoll(next());
    else if (a == "--buffer-num")
      o.buffer_num = std::stoi(next());
    else if (a == "--grid")
      o.grid = std::stoi(next());
    else if (a == "--iters")
      o.iters = std::stoi(next());
    else if (a == "--warmup")
      o.warmup = std::stoi(next());
    else if (a == "--min-time")
      o.min_time_s = std::stod(next());
    else if (a == "--no-check")
      o.check = false;
    else
      usage(("unknown argument " + a).c_str());
  }
  tdist_init_attr_t attr;
  tdist_init_attr_default(&attr);
  attr.option_attr.backend = TDIST_BACKEND_CPU;
  attr.option_attr.wait_timeout_ms = 60000;
  size_t max_bytes = *std::max_element(o.bytes.begin(), o.bytes.end());
  // Staging of the bulk variants (W slots) or the direct output, plus slack for signals.
  attr.local_mem_size = std::max<uint64_t>(64ull << 20, 3 * uint64_t(max_bytes) + (16ull << 20));
  if (int st = tdist_init_from_env(&attr); st) die("tdist_init_from_env", st);
  const std::string &k = o.kernel;
  if (k == "a2a_pipeline")
    bench_alltoall(o, kc::A2ADirection::reverse, kc::A2AVariant::pipeline);
  else if (k == "a2a_bulk")
    bench_alltoall(o, kc::A2ADirection::reverse, kc::A2AVariant::bulk);
  else if (k == "a2a_wait_notify")
    bench_alltoall(o, kc::A2ADirection::reverse, kc::A2AVariant::wait_notify);
  else if (k == "a2a_direct")
    bench_alltoall(o, kc::A2ADirection::reverse, kc::A2AVariant::direct);
  else if (k == "dispatch_pipeline")
    bench_alltoall(o, kc::A2ADirection::dispatch, kc::A2AVariant::pipeline);
  else if (k == "dispatch_direct")
    bench_alltoall(o, kc::A2ADirection::dispatch, kc::A2AVariant::direct);
  else if (k == "ar_one_shot")
    bench_allreduce(o, kc::AllReduceAlgo::one_shot);
  else if (k == "ar_two_shot")
    bench_allreduce(o, kc::AllReduceAlgo::two_shot);
  else if (k == "ar_ring")
    bench_allreduce(o, kc::AllReduceAlgo::ring);
  else if (k == "ag_gemm")
    bench_gemm(o, true);
  else if (k == "gemm_rs")
    bench_gemm(o, false);
  else if (k == "memcpy")
    bench_memcpy(o);
  else {
    tdist_finalize();
    usage(("unknown kernel " + k).c_str());
  }
  tdist_finalize();
  return g_failures ? 1 : 0;
}
