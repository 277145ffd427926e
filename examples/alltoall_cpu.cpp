// Reverse all-to-all (the EP MoE combine of seed 002) across local ranks on the CPU backend.
//
//   build/tools/tdist-run -n 4 -- build/examples/alltoall_cpu [--S 256 --H 8 --D 512 --dtype bf16]
//
// Every PE holds A (S*W, H, D): rows [p*S, (p+1)*S) are the expert outputs for PE p's tokens.
// After the all-to-all, PE p holds C (S, H*W, D) with C[s, r*H + h, :] = A_r[p*S + s, h, :].
// The example runs the seed's three variants and tdist's one-copy variant, checks each result
// bit-exactly against a reference computed on every PE from the input generator (fresh random
// inputs, poisoned outputs), and prints the bandwidth (input bytes per PE / time) and its ratio to
// memcpy of the same bytes, measured at the same time on every PE (the copy ceiling).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tdist/kernels/cpu.hpp"
#include "tdist/kernels/reference.hpp"
#include "tdist/tdist.h"

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double slowest(double v) {
  std::vector<double> all(static_cast<size_t>(tdist_n_pes()));
  tdist_ctrl_allgather(&v, all.data(), sizeof v);
  return *std::max_element(all.begin(), all.end());
}

// Mean seconds per call of fn over `iters` calls, slowest PE.
template <class Fn>
double time_it(int iters, Fn &&fn) {
  tdist_host_barrier_all();
  const double t0 = now_s();
  for (int i = 0; i < iters; ++i) fn();
  return slowest((now_s() - t0) / iters);
}

}  // namespace

int main(int argc, char **argv) {
  int64_t S = 256, H = 8, D = 512;
  tk::DType dtype = tk::DType::f32;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--S")
      S = std::atoll(argv[i + 1]);
    else if (a == "--H")
      H = std::atoll(argv[i + 1]);
    else if (a == "--D")
      D = std::atoll(argv[i + 1]);
    else if (a == "--iters")
      iters = std::atoi(argv[i + 1]);
    else if (a == "--dtype" && tk::parse_dtype(argv[i + 1], &dtype))
      continue;
    else {
      std::fprintf(stderr,
                   "usage: alltoall_cpu [--S n] [--H n] [--D n] [--dtype f32|f64|f16|bf16] [--iters n]\n");
      return 2;
    }
  }
  tdist_init_attr_t attr;
  tdist_init_attr_default(&attr);
  attr.option_attr.backend = TDIST_BACKEND_CPU;
  attr.option_attr.wait_timeout_ms = 60000;  // a lost signal fails the run instead of hanging it
  if (tdist_init_from_env(&attr) != TDIST_SUCCESS) {
    std::fprintf(stderr, "alltoall_cpu: tdist_init_from_env: %s\n", tdist_last_error_message());
    return 1;
  }
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const size_t es = tk::dtype_size(dtype);
  const size_t n = size_t(S * W * H * D), bytes = n * es;
  if (me == 0)
    std::printf(
        "reverse all-to-all: %d PEs, A (%lld, %lld, %lld) -> C (%lld, %lld, %lld) %s, %.2f MiB per PE\n", W,
        (long long)(S * W), (long long)H, (long long)D, (long long)S, (long long)(H * W), (long long)D,
        tk::dtype_name(dtype), double(bytes) / (1 << 20));

  // Copy ceiling: every PE copies its bytes locally, all at the same time.
  std::vector<unsigned char> src(bytes), dst(bytes), in(bytes), local_out(bytes);
  tk::fill_random(dtype, src.data(), n, 1, me);
  std::memcpy(dst.data(), src.data(), bytes);
  const double t_copy = time_it(iters, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  const double copy_bw = double(bytes) / t_copy / 1e9;
  if (me == 0) std::printf("  %-18s %10.1f us  %7.2f GB/s\n", "memcpy", t_copy * 1e6, copy_bw);

  uint64_t seed = 0;
  int failures = 0;
  for (kc::A2AVariant v : {kc::A2AVariant::pipeline, kc::A2AVariant::bulk, kc::A2AVariant::wait_notify,
                           kc::A2AVariant::direct}) {
    kc::AllToAllConfig cfg;
    cfg.variant = v;
    cfg.dtype = dtype;
    cfg.S = S;
    cfg.H = H;
    cfg.D = D;
    std::unique_ptr<kc::AllToAll> a2a;
    if (kc::AllToAll::create(cfg, &a2a) != TDIST_SUCCESS) {
      std::fprintf(stderr, "alltoall_cpu[pe %d]: %s\n", me, kc::last_error_message());
      return 1;
    }
    unsigned char *out =
        v == kc::A2AVariant::direct ? static_cast<unsigned char *>(a2a->output_buffer()) : local_out.data();
    // Fresh inputs (a new seed, agreed by all PEs) and a poisoned output for every variant.
    seed = tk::splitmix64(seed + uint64_t(now_s() * 1e9));
    tdist_ctrl_broadcast(&seed, sizeof seed, 0);
    tk::fill_random(dtype, in.data(), n, seed, me);
    tk::poison(out, bytes);
    tdist_host_barrier_all();
    int st = a2a->run(in.data(), out);
    std::string why;
    int64_t bad = st ? -1
                     : tk::reference::check_alltoall(kc::A2ADirection::reverse, dtype, S, H, D, W, me, seed,
                                                     out, W * H * D, D, &why);
    // direct alternates between two symmetric output buffers: later calls pass nullptr ("this
    // call's buffer"); the result of the latest is a2a->last_output()
    void *again = v == kc::A2AVariant::direct ? nullptr : out;
    const double t = st ? 0 : time_it(iters, [&] { st = st ? st : a2a->run(in.data(), again); });
    if (st) {
      std::fprintf(stderr, "alltoall_cpu[pe %d]: %s: %s\n", me, kc::a2a_variant_name(v),
                   kc::last_error_message());
      return 1;
    }
    if (bad)
      std::fprintf(stderr, "alltoall_cpu[pe %d]: %s: %lld wrong elements, first: %s\n", me,
                   kc::a2a_variant_name(v), (long long)bad, why.c_str());
    const bool all_ok = slowest(double(bad)) == 0;
    failures += !all_ok;
    const double bw = double(bytes) / t / 1e9;
    if (me == 0)
      std::printf("  %-18s %10.1f us  %7.2f GB/s  %.2fx memcpy  check %s\n", kc::a2a_variant_name(v), t * 1e6,
                  bw, bw / copy_bw, all_ok ? "ok" : "FAILED");
  }
  tdist_finalize();
  return failures ? 1 : 0;
}
