// References for the CPU kernels, computed on each PE from the deterministic generator
// (dtype.hpp): every PE can recompute any PE's input, so no communication is needed to check.
// Used by tdist-bench-cpu and the example; the tests keep their own independent copies.
// Each returns the number of bad elements and describes the first one in *why.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tdist/kernels/cpu.hpp"

namespace tdist::kernels::reference {

/** Bit-exact check of an all-to-all output (layouts as in cpu::AllToAll; strides in elements). */
inline int64_t check_alltoall(cpu::A2ADirection dir, DType t, int64_t S, int64_t H, int64_t D, int W, int me,
                              uint64_t seed, const void *out_v, int64_t out_s, int64_t out_h,
                              std::string *why) {
  const auto *out = static_cast<const unsigned char *>(out_v);
  const size_t es = dtype_size(t);
  unsigned char expect[8];
  int64_t bad = 0;
  for (int r = 0; r < W; ++r)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) {
          uint64_t src;
          int64_t dst;
          if (dir == cpu::A2ADirection::reverse) {
            src = uint64_t(((me * S + s) * H + h) * D + d);
            dst = s * out_s + (r * H + h) * out_h + d;
          } else {
            src = uint64_t((s * W * H + me * H + h) * D + d);
            dst = (r * S + s) * out_s + h * out_h + d;
          }
          gen_element(t, expect, seed, r, src);
          if (std::memcmp(expect, out + dst * es, es) != 0 && !bad++ && why)
            *why = "PE " + std::to_string(me) + ": element from PE " + std::to_string(r) + " (s " +
                   std::to_string(s) + ", h " + std::to_string(h) + ", d " + std::to_string(d) + ") is " +
                   std::to_string(load_as_double(t, out + dst * es, 0)) + ", expected " +
                   std::to_string(load_as_double(t, expect, 0));
        }
  return bad;
}

/** Sum all-reduce within 2 W u sum|x_r| (u: unit roundoff of the storage type). */
inline int64_t check_allreduce(DType t, int64_t n, int W, uint64_t seed, const void *out, std::string *why) {
  int64_t bad = 0;
  unsigned char e[8];
  for (int64_t i = 0; i < n; ++i) {
    double ref = 0, mag = 0;
    for (int r = 0; r < W; ++r) {
      gen_element(t, e, seed, r, uint64_t(i));
      const double v = load_as_double(t, e, 0);
      ref += v;
      mag += std::fabs(v);
    }
    const double got = load_as_double(t, out, size_t(i));
    if (!(std::fabs(got - ref) <= 2.0 * W * dtype_unit_roundoff(t) * mag + 1e-300) && !bad++ && why)
      *why =
          "element " + std::to_string(i) + " is " + std::to_string(got) + ", expected " + std::to_string(ref);
  }
  return bad;
}

inline double gemm_tolerance(DType t, int64_t terms, double sumabs, double ref) {
  const double u_acc = t == DType::f64 ? 0x1p-53 : 0x1p-24;
  return 2.0 * (double(terms) * u_acc * sumabs + dtype_unit_roundoff(t) * std::fabs(ref)) + 1e-300;
}

/** AG+GEMM: C (W*m, n) = [A_0; ...; A_{W-1}] @ B_me, A_r = gen(seed_a, r), B_me = gen(seed_b, me). */
inline int64_t check_ag_gemm(DType t, int64_t m, int64_t n, int64_t k, int W, int me, uint64_t seed_a,
                             uint64_t seed_b, const void *c, std::string *why) {
  int64_t bad = 0;
  unsigned char e[8];
  std::vector<double> b(size_t(k * n));
  for (int64_t i = 0; i < k * n; ++i) {
    gen_element(t, e, seed_b, me, uint64_t(i));
    b[size_t(i)] = load_as_double(t, e, 0);
  }
  std::vector<double> arow(static_cast<size_t>(k));
  for (int src = 0; src < W; ++src)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) {
        gen_element(t, e, seed_a, src, uint64_t(i * k + kk));
        arow[size_t(kk)] = load_as_double(t, e, 0);
      }
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, sumabs = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = arow[size_t(kk)] * b[size_t(kk * n + j)];
          ref += p;
          sumabs += std::fabs(p);
        }
        const double got = load_as_double(t, c, size_t((src * m + i) * n + j));
        if (!(std::fabs(got - ref) <= gemm_tolerance(t, k, sumabs, ref)) && !bad++ && why)
          *why = "C[" + std::to_string(src * m + i) + "," + std::to_string(j) + "] is " +
                 std::to_string(got) + ", expected " + std::to_string(ref);
      }
    }
  return bad;
}

/** GEMM+RS: C_me (m, n) = sum_r (A_r @ B_r)[me*m : (me+1)*m], A_r (W*m, k), B_r (k, n). */
inline int64_t check_gemm_rs(DType t, int64_t m, int64_t n, int64_t k, int W, int me, uint64_t seed_a,
                             uint64_t seed_b, const void *c, std::string *why) {
  unsigned char e[8];
  std::vector<double> ref(size_t(m * n), 0.0), mag(size_t(m * n), 0.0), arow(static_cast<size_t>(k)),
      b(size_t(k * n));
  for (int r = 0; r < W; ++r) {
    for (int64_t i = 0; i < k * n; ++i) {
      gen_element(t, e, seed_b, r, uint64_t(i));
      b[size_t(i)] = load_as_double(t, e, 0);
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) {
        gen_element(t, e, seed_a, r, uint64_t((me * m + i) * k + kk));
        arow[size_t(kk)] = load_as_double(t, e, 0);
      }
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) {
          const double p = arow[size_t(kk)] * b[size_t(kk * n + j)];
          ref[size_t(i * n + j)] += p;
          mag[size_t(i * n + j)] += std::fabs(p);
        }
    }
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < m * n; ++i) {
    const double got = load_as_double(t, c, size_t(i));
    if (!(std::fabs(got - ref[size_t(i)]) <= gemm_tolerance(t, W * k, mag[size_t(i)], ref[size_t(i)])) &&
        !bad++ && why)
      *why = "C[" + std::to_string(i / n) + "," + std::to_string(i % n) + "] is " + std::to_string(got) +
             ", expected " + std::to_string(ref[size_t(i)]);
  }
  return bad;
}

}  // namespace tdist::kernels::reference
