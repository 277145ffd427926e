// MoE dispatch / combine on CPU ranks (tdist::kernels::cpu::MoeBuffer), both modes; the Open MPI
// baseline (moe_mpi_baseline.cpp) runs the same routing through the path a torch user writes with
// all_to_all_single (counts exchange, permute by expert, MPI_Alltoallv, permute by local expert, and
// back). Each figure is the slowest rank's mean over the timed calls; every configuration is checked
// first (identity experts: out[t] = sum_k w[t, k] * x[t], within 2 u sum_k |w x| + K 2^-22 |...|).
//
//   tdist-run -n 4 -- tdist-moe-bench-cpu --tokens 128,512 --hidden 7168 --topk 8 --experts 256
//                     [--mode ht,ll] [--routing random|skewed] [--dtype bf16] [--iters N] [--warmup N]
// Prints one JSON object per (mode, tokens) on rank 0: dispatch_us, combine_us, the payload bytes a
// rank sends in a dispatch (each token once per destination rank, itself included) and that over the
// dispatch time (DeepEP's metric), and the bytes of the expanded (token, expert) rows that the
// all_to_all_single path sends instead.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "moe_routing.hpp"
#include "tdist/kernels/moe.hpp"
#include "tdist/tdist.h"

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double slowest(double v) {
  const int W = tdist_n_pes();
  std::vector<double> all(static_cast<size_t>(W));
  tdist_ctrl_allgather(&v, all.data(), sizeof v);
  double m = 0;
  for (double x : all) m = std::max(m, x);
  return m;
}

}  // namespace

int main(int argc, char **argv) {
  tdist_bench::MoeArgs args;
  if (std::string why = tdist_bench::parse_moe_args(argc, argv, true, &args); !why.empty()) {
    std::fprintf(
        stderr,
        "tdist-moe-bench-cpu: %s\nusage: tdist-moe-bench-cpu [--tokens N,..] [--hidden H] [--topk K] "
        "[--experts E] [--mode ht,ll] [--routing random|skewed] [--dtype bf16] [--iters N] [--warmup N]\n",
        why.c_str());
    return 2;
  }
  const std::vector<int64_t> &tokens = args.tokens;
  const int64_t H = args.hidden, K = args.topk, E = args.experts;
  const std::string &modes = args.modes, &routing = args.routing;
  const tk::DType dt = args.dtype;
  const int iters = args.iters, warmup = args.warmup;
  tdist_init_attr_t attr;
  tdist_init_attr_default(&attr);
  attr.option_attr.backend = TDIST_BACKEND_CPU;
  attr.local_mem_size = size_t(1) << 30;
  if (tdist_init_from_env(&attr) != TDIST_SUCCESS)
    return std::fprintf(stderr, "%s\n", tdist_last_error_message()), 1;
  const int W = tdist_n_pes(), me = tdist_my_pe();
  const size_t es = tk::dtype_size(dt);
  int failures = 0;
  uint64_t seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  tdist_ctrl_broadcast(&seed, sizeof seed, 0);
  for (const char *m : {"ht", "ll"}) {
    if (modes.find(m) == std::string::npos) continue;
    for (int64_t T : tokens) {
      kc::MoeConfig cfg;
      cfg.mode = std::string(m) == "ht" ? kc::MoeMode::high_throughput : kc::MoeMode::low_latency;
      cfg.dtype = dt;
      cfg.num_experts = E;
      cfg.hidden = H;
      cfg.topk = K;
      cfg.max_tokens = T;
      // a bound for the routing used here (about T*K rows arrive per rank), not the worst case
      cfg.max_recv_rows = std::min<int64_t>(T * W * std::min<int64_t>(K, E / W), 3 * T * K + 64);
      std::unique_ptr<kc::MoeBuffer> buf;
      if (kc::MoeBuffer::create(cfg, &buf) != TDIST_SUCCESS) {
        if (me == 0) std::fprintf(stderr, "create: %s\n", kc::last_error_message());
        ++failures;
        continue;
      }
      const tdist_bench::Routing r = tdist_bench::make_routing(routing, seed, me, T, K, E);
      std::vector<unsigned char> x(size_t(T * H) * es), recv(size_t(buf -> recv_rows() * H) * es),
          out(size_t(T * H) * es);
      tk::fill_random(dt, x.data(), size_t(T * H), seed, me);
      std::vector<int32_t> counts(size_t(buf->local_experts()));
      kc::MoeHandle h;
      auto dispatch = [&] {
        return buf->dispatch(x.data(), T, r.idx.data(), r.w.data(), recv.data(), counts.data(), &h);
      };
      int bad = 0;
      tk::poison(out.data(), out.size());
      if (dispatch() != TDIST_SUCCESS || buf->combine(recv.data(), h, out.data()) != TDIST_SUCCESS) {
        std::fprintf(stderr, "[%d] %s\n", me, kc::last_error_message());
        return 1;
      }
      for (int64_t t = 0; t < T && !bad; ++t) {
        double ws = 0;
        for (int64_t k = 0; k < K; ++k) ws += r.idx[size_t(t * K + k)] >= 0 ? r.w[size_t(t * K + k)] : 0.0;
        for (int64_t c = 0; c < H && !bad; ++c) {
          const double xv = tk::load_as_double(dt, x.data(), size_t(t * H + c));
          const double got = tk::load_as_double(dt, out.data(), size_t(t * H + c));
          const double tol =
              (2 * tk::dtype_unit_roundoff(dt) + double(K) * 0x1p-22) * std::fabs(ws * xv) + 1e-30;
          if (!(std::fabs(got - ws * xv) <= tol)) {
            std::fprintf(stderr, "[%d] %s T=%lld: token %lld col %lld = %g, expected %g\n", me, m,
                         (long long)T, (long long)t, (long long)c, got, ws * xv);
            bad = 1;
          }
        }
      }
      const int n = iters > 0
                        ? iters
                        : int(std::max<double>(5, std::min<double>(200, 4e8 / double(T * H * es * K + 1))));
      for (int i = 0; i < warmup; ++i) (void)(dispatch() | buf->combine(recv.data(), h, out.data()));
      double td = 0, tc = 0;
      for (int i = 0; i < n; ++i) {
        double t0 = now_s();
        dispatch();
        double t1 = now_s();
        buf->combine(recv.data(), h, out.data());
        tc += now_s() - t1;
        td += t1 - t0;
      }
      td = slowest(td / n);
      tc = slowest(tc / n);
      int64_t pairs = 0;
      for (int64_t v : r.idx) pairs += v >= 0;
      const double sent = double(buf->last_dispatch_bytes()),
                   expanded = double(pairs) * double(H) * double(es);
      const double sent_max = slowest(sent), expanded_max = slowest(expanded);
      int bad_all = 0;
      std::vector<int> bads(static_cast<size_t>(W));
      tdist_ctrl_allgather(&bad, bads.data(), sizeof bad);
      for (int b : bads) bad_all += b;
      failures += bad_all;
      if (me == 0)
        std::printf(
            "{\"impl\": \"tdist\", \"kernel\": \"moe_%s\", \"dtype\": \"%s\", \"ranks\": %d, \"tokens\": "
            "%lld, "
            "\"hidden\": %lld, \"topk\": %lld, \"experts\": %lld, \"routing\": \"%s\", \"iters\": %d, "
            "\"dispatch_us\": %.2f, \"combine_us\": %.2f, \"dispatch_bytes_per_rank\": %.0f, "
            "\"dispatch_GBps\": %.3f, \"combine_GBps\": %.3f, \"expanded_bytes_per_rank\": %.0f, "
            "\"check\": \"%s\"}\n",
            m, tk::dtype_name(dt), W, (long long)T, (long long)H, (long long)K, (long long)E, routing.c_str(),
            n, td * 1e6, tc * 1e6, sent_max, sent_max / td / 1e9, sent_max / tc / 1e9, expanded_max,
            bad_all ? "FAIL" : "ok");
      std::fflush(stdout);
    }
  }
  tdist_finalize();
  return failures ? 1 : 0;
}
