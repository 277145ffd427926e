// Routing of the MoE benchmarks (tdist-moe-bench-cpu and its Open MPI baseline): the same tokens,
// top-k indices and weights on both, from (seed, rank). Header-only, no runtime dependency.
//   random:  K distinct experts per token, uniform;
//   skewed:  three quarters of the picks go to the first experts left (hot experts on the first
//            ranks), and the last quarter of the experts gets no token at all.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tdist/kernels/dtype.hpp"

namespace tdist_bench {

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
