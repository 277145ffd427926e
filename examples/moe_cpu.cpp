// A small expert-parallel MoE block on CPU ranks: router -> top-k -> dispatch -> each rank's local
// experts (a two-layer MLP per expert, SiLU) -> combine, with tdist::kernels::cpu::MoeBuffer.
// Every rank also computes its tokens' output on its own (it can rebuild every expert's weights from
// the seed) and checks the distributed result against it.
//
//   tdist-run -n 4 -- moe_cpu [--tokens 96] [--hidden 64] [--ffn 128] [--experts 8] [--topk 2]
//                             [--mode ht|ll] [--calls 3]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tdist/kernels/moe.hpp"
#include "tdist/tdist.h"

namespace tk = tdist::kernels;
namespace kc = tdist::kernels::cpu;

namespace {

struct Expert {
  std::vector<float> w1, w2;  // (H, F), (F, H)
};

Expert make_expert(uint64_t seed, int64_t e, int64_t H, int64_t F) {
  Expert x;
  x.w1.resize(size_t(H * F));
  x.w2.resize(size_t(F * H));
  for (size_t i = 0; i < x.w1.size(); ++i)
    x.w1[i] = float(tk::gen_value(seed + 1, int(e), i) / std::sqrt(double(H)));
  for (size_t i = 0; i < x.w2.size(); ++i)
    x.w2[i] = float(tk::gen_value(seed + 2, int(e), i) / std::sqrt(double(F)));
  return x;
}

// y = silu(x @ w1) @ w2 for `rows` rows
void mlp(const Expert &ex, const float *x, float *y, int64_t rows, int64_t H, int64_t F) {
  std::vector<float> h(static_cast<size_t>(F));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(h.begin(), h.end(), 0.0f);
    for (int64_t i = 0; i < H; ++i)
      for (int64_t f = 0; f < F; ++f) h[size_t(f)] += x[r * H + i] * ex.w1[size_t(i * F + f)];
    for (float &v : h) v = v / (1.0f + std::exp(-v));
    for (int64_t o = 0; o < H; ++o) {
      float s = 0;
      for (int64_t f = 0; f < F; ++f) s += h[size_t(f)] * ex.w2[size_t(f * H + o)];
      y[r * H + o] = s;
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  int64_t T = 96, H = 64, F = 128, E = 8, K = 2;
  int calls = 3;
  kc::MoeMode mode = kc::MoeMode::high_throughput;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tokens")
      T = std::atoll(argv[i + 1]);
    else if (a == "--hidden")
      H = std::atoll(argv[i + 1]);
    else if (a == "--ffn")
      F = std::atoll(argv[i + 1]);
    else if (a == "--experts")
      E = std::atoll(argv[i + 1]);
    else if (a == "--topk")
      K = std::atoll(argv[i + 1]);
    else if (a == "--calls")
      calls = std::atoi(argv[i + 1]);
    else if (a == "--mode" && kc::parse_moe_mode(argv[i + 1], &mode))
      continue;
    else
      return std::fprintf(stderr, "moe_cpu: bad argument %s\n", argv[i]), 2;
  }
  tdist_init_attr_t attr;
  tdist_init_attr_default(&attr);
  attr.option_attr.backend = TDIST_BACKEND_CPU;
  attr.local_mem_size = size_t(256) << 20;
  if (tdist_init_from_env(&attr) != TDIST_SUCCESS)
    return std::fprintf(stderr, "%s\n", tdist_last_error_message()), 1;
  const int W = tdist_n_pes(), me = tdist_my_pe();
  kc::MoeConfig cfg;
  cfg.mode = mode;
  cfg.dtype = tk::DType::f32;
  cfg.num_experts = E;
  cfg.hidden = H;
  cfg.topk = K;
  cfg.max_tokens = T;
  std::unique_ptr<kc::MoeBuffer> buf;
  if (kc::MoeBuffer::create(cfg, &buf) != TDIST_SUCCESS)
    return std::fprintf(stderr, "%s\n", kc::last_error_message()), 1;
  const int64_t L = buf->local_experts();
  const uint64_t seed = 20261202;
  std::vector<Expert> experts;
  for (int64_t e = 0; e < E; ++e) experts.push_back(make_expert(seed, e, H, F));  // every rank can check
  std::vector<float> router(size_t(H * E));
  for (size_t i = 0; i < router.size(); ++i) router[i] = float(tk::gen_value(seed + 3, 0, i));
  double worst = 0;
  int failures = 0;
  for (int call = 0; call < calls; ++call) {
    // this rank's tokens: a different count per rank and call (some ranks may have none)
    const int64_t n = (T * (me + call + 1)) / (W + calls) % (T + 1);
    std::vector<float> x(size_t(n * H));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(tk::gen_value(seed + 10 + call, me, i));
    // router: softmax over the logits, top-k, weights renormalised over the chosen experts
    std::vector<int64_t> idx(size_t(n * K));
    std::vector<float> w(size_t(n * K));
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> logit(static_cast<size_t>(E), 0.0);
      for (int64_t e = 0; e < E; ++e)
        for (int64_t i = 0; i < H; ++i) logit[size_t(e)] += x[size_t(t * H + i)] * router[size_t(i * E + e)];
      std::vector<int64_t> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + K, order.end(),
                        [&](int64_t a, int64_t b) { return logit[size_t(a)] > logit[size_t(b)]; });
      double z = 0;
      for (int64_t k = 0; k < K; ++k)
        z += std::exp(logit[size_t(order[size_t(k)])] - logit[size_t(order[0])]);
      for (int64_t k = 0; k < K; ++k) {
        idx[size_t(t * K + k)] = order[size_t(k)];
        w[size_t(t * K + k)] = float(std::exp(logit[size_t(order[size_t(k)])] - logit[size_t(order[0])]) / z);
      }
    }
    std::vector<float> recv(size_t(buf->recv_rows() * H)), y(recv.size()), out(size_t(n * H));
    std::vector<int32_t> counts(static_cast<size_t>(L));
    kc::MoeHandle h;
    if (buf->dispatch(x.data(), n, idx.data(), w.data(), recv.data(), counts.data(), &h) != TDIST_SUCCESS)
      return std::fprintf(stderr, "[%d] %s\n", me, kc::last_error_message()), 1;
    // local experts: group j is a contiguous block of rows (high throughput: packed from row 0;
    // low latency: at j * W * max_tokens)
    int64_t start = 0;
    for (int64_t j = 0; j < L; ++j) {
      const int64_t s0 = mode == kc::MoeMode::high_throughput ? start : j * buf->ll_group_stride();
      mlp(experts[size_t(me * L + j)], recv.data() + s0 * H, y.data() + s0 * H, counts[size_t(j)], H, F);
      start += counts[size_t(j)];
    }
    if (buf->combine(y.data(), h, out.data()) != TDIST_SUCCESS)
      return std::fprintf(stderr, "[%d] %s\n", me, kc::last_error_message()), 1;
    // the same block on this rank alone
    std::vector<float> ref(static_cast<size_t>(H)), tmp(static_cast<size_t>(H));
    for (int64_t t = 0; t < n; ++t) {
      std::fill(ref.begin(), ref.end(), 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        mlp(experts[size_t(idx[size_t(t * K + k)])], x.data() + t * H, tmp.data(), 1, H, F);
        for (int64_t o = 0; o < H; ++o) ref[size_t(o)] += w[size_t(t * K + k)] * tmp[size_t(o)];
      }
      for (int64_t o = 0; o < H; ++o) {
        const double err = std::fabs(double(out[size_t(t * H + o)]) - ref[size_t(o)]);
        worst = std::max(worst, err);
        if (!(err <= 1e-5 * (1 + std::fabs(ref[size_t(o)])))) ++failures;
      }
    }
    std::printf("call %d: %lld tokens, local expert rows [", call, (long long)n);
    for (int64_t j = 0; j < L; ++j) std::printf(j ? " %d" : "%d", counts[size_t(j)]);
    std::printf("]\n");
  }
  std::printf(
      "moe block (%s, %d ranks, E=%lld, top-%lld): %d calls, max |error| %.3g vs the single-rank block: %s\n",
      kc::moe_mode_name(mode), W, (long long)E, (long long)K, calls, worst, failures ? "FAIL" : "OK");
  tdist_finalize();
  return failures ? 1 : 0;
}
