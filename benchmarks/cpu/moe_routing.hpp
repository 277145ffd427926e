// What the MoE benchmarks (tdist-moe-bench-cpu and its Open MPI baseline) share, header-only and
// without a runtime dependency: their command line (parse_moe_args) and the routing, the same
// tokens, top-k indices and weights on both, from (seed, rank).
//   random:  K distinct experts per token, uniform;
//   skewed:  three quarters of the picks go to the first experts left (hot experts on the first
//            ranks), and the last quarter of the experts gets no token at all.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tdist/kernels/dtype.hpp"

namespace tdist_bench {

struct MoeArgs {
  std::vector<int64_t> tokens = {128};
  int64_t hidden = 2048, topk = 2, experts = 16;
  std::string modes = "ht,ll", routing = "random";
  tdist::kernels::DType dtype = tdist::kernels::DType::bf16;
  int iters = 0, warmup = 2;
};

// A whole decimal number in [lo, hi], or false.
inline bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// argv into *a. `with_mode`: whether --mode is accepted (the tdist benchmark runs both modes, the
// all_to_all_single path has none). Returns "" or what was wrong, for the usage line.
inline std::string parse_moe_args(int argc, char **argv, bool with_mode, MoeArgs *a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return k + " needs a value";
    const char *v = argv[++i];
    int64_t n = 0;
    auto num = [&](int64_t lo, int64_t hi) {
      if (!parse_int(v, lo, hi, &n))
        throw std::string(k + " " + v + ": not a number in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
      return n;
    };
    try {
      if (k == "--tokens") {
        a->tokens.clear();
        std::string s = v;
        for (size_t p = 0; p <= s.size();) {
          size_t q = s.find(',', p);
          if (q == std::string::npos) q = s.size();
          std::string item = s.substr(p, q - p);
          if (!parse_int(item.c_str(), 1, int64_t(1) << 24, &n))
            throw k + " " + v + ": not a list of token counts";
          a->tokens.push_back(n);
          p = q + 1;
        }
      } else if (k == "--hidden") {
        a->hidden = num(1, int64_t(1) << 20);
      } else if (k == "--topk") {
        a->topk = num(1, 1024);
      } else if (k == "--experts") {
        a->experts = num(1, int64_t(1) << 20);
      } else if (k == "--iters") {
        a->iters = int(num(0, 1 << 24));
      } else if (k == "--warmup") {
        a->warmup = int(num(0, 1 << 24));
      } else if (k == "--routing") {
        a->routing = v;
        if (a->routing != "random" && a->routing != "skewed") throw k + " " + v + ": random or skewed";
      } else if (k == "--dtype") {
        if (!tdist::kernels::parse_dtype(v, &a->dtype)) throw k + " " + v + ": unknown dtype";
      } else if (k == "--mode" && with_mode) {
        a->modes = v;
        if (a->modes.find("ht") == std::string::npos && a->modes.find("ll") == std::string::npos)
          throw k + " " + v + ": ht, ll or ht,ll";
      } else {
        return "unknown option " + k;
      }
    } catch (const std::string &why) {
      return why;
    }
  }
  if (a->topk > a->experts) return "--topk must not exceed --experts";
  return "";
}

struct Routing {
  std::vector<int64_t> idx;  // (T, K)
  std::vector<float> w;      // (T, K)
};

inline Routing make_routing(const std::string &kind, uint64_t seed, int rank, int64_t T, int64_t K,
                            int64_t E) {
  Routing r;
  r.idx.assign(size_t(T * K), -1);
  r.w.assign(size_t(T * K), 0.0f);
  std::mt19937_64 g(tdist::kernels::splitmix64(seed ^ (uint64_t(rank) << 32)));
  const int64_t usable = kind == "skewed" ? std::max<int64_t>(K, E - E / 4) : E;
  std::vector<int64_t> pool(static_cast<size_t>(usable));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < usable; ++e) pool[size_t(e)] = e;
    int64_t left = usable;
    for (int64_t k = 0; k < K; ++k) {
      int64_t i = int64_t(g() % uint64_t(left));
      if (kind == "skewed" && g() % 4 != 0) i = int64_t(g() % uint64_t(std::min<int64_t>(left, 2)));
      r.idx[size_t(t * K + k)] = pool[size_t(i)];
      pool[size_t(i)] = pool[size_t(left - 1)];
      --left;
      std::sort(pool.begin(), pool.begin() + left);
      r.w[size_t(t * K + k)] = float(double(g() >> 11) * 0x1p-53 + 0.01);
    }
  }
  return r;
}

}  // namespace tdist_bench
