// Element types of the CPU kernels, fp16/bf16 conversion helpers and the deterministic input
// generator shared by kernels, tests, benchmarks and the MPI baseline. Header-only, no runtime
// dependency (the MPI baseline includes it without linking tdist).
//
// fp16 and bf16 are stored as uint16_t bit patterns; arithmetic converts to float, so every
// reduction step rounds once to the storage type (the tolerances in the tests say so).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tdist::kernels {

enum class DType : int { f32 = 0, f64 = 1, f16 = 2, bf16 = 3 };

// One source of truth for the dtype family: X(enum, name, storage, accumulate, unit roundoff).
#define TDIST_KERNELS_FOR_EACH_DTYPE(X)   \
  X(f32, "f32", float, float, 0x1p-24)    \
  X(f64, "f64", double, double, 0x1p-53)  \
  X(f16, "f16", uint16_t, float, 0x1p-11) \
  X(bf16, "bf16", uint16_t, float, 0x1p-8)

inline constexpr size_t dtype_size(DType t) {
  switch (t) {
#define X(e, n, S, A, u) \
  case DType::e: return sizeof(S);
    TDIST_KERNELS_FOR_EACH_DTYPE(X)
#undef X
  }
  return 0;
}

inline constexpr const char *dtype_name(DType t) {
  switch (t) {
#define X(e, n, S, A, u) \
  case DType::e: return n;
    TDIST_KERNELS_FOR_EACH_DTYPE(X)
#undef X
  }
  return "?";
}

/** Unit roundoff of the storage type (half an ulp at 1.0). */
inline constexpr double dtype_unit_roundoff(DType t) {
  switch (t) {
#define X(e, n, S, A, u) \
  case DType::e: return u;
    TDIST_KERNELS_FOR_EACH_DTYPE(X)
#undef X
  }
  return 1.0;
}

/** Parses "f32"/"float"/"fp32", "f64"/"double", "f16"/"fp16"/"half", "bf16". */
inline bool parse_dtype(std::string_view s, DType *out) {
  struct Alias {
    const char *name;
    DType t;
  };
  static constexpr Alias kAliases[] = {
      {"f32", DType::f32},   {"float", DType::f32},    {"fp32", DType::f32}, {"float32", DType::f32},
      {"f64", DType::f64},   {"double", DType::f64},   {"fp64", DType::f64}, {"float64", DType::f64},
      {"f16", DType::f16},   {"fp16", DType::f16},     {"half", DType::f16}, {"float16", DType::f16},
      {"bf16", DType::bf16}, {"bfloat16", DType::bf16}};
  for (const Alias &a : kAliases) {
    if (s == a.name) {
      *out = a.t;
      return true;
    }
  }
  return false;
}

// ---- fp16 / bf16 <-> float, round to nearest even, NaN and Inf preserved ----

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign);
    // subnormal: value = man * 2^-24
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (a < 0x38800000u) {
    // result is subnormal (or zero): round a * 2^24 to an integer, nearest even
    float v = f32_from_bits(a) * 0x1p24f;  // exact scaling, v < 1024
    float r = std::nearbyint(v);           // default rounding mode: nearest even
    return uint16_t(sign | uint16_t(r));
  }
  // normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even
  uint32_t r = a - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | uint16_t(r >> 13));
}

// ---- fp8 e4m3 (the "fn" variant: no infinities, one NaN code per sign, max 448) ----

/** float -> e4m3 bits: round to nearest even, saturating to +-448 (as the GPU's
 *  cvt.rn.satfinite.e4m3x2.f32), NaN -> 0x7f with the sign kept. */
inline uint8_t f32_to_e4m3(float f) {
  const uint32_t u = f32_bits(f);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint8_t(sign | 0x7fu);
  if (a >= 0x3c800000u) {  // >= 2^-6, the smallest normal: round the mantissa 23 -> 3 bits
    const uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
    const uint32_t e = (r >> 23) - 120u;  // e4m3's biased exponent (f32 bias 127, e4m3 bias 7)
    const uint32_t m = (r >> 20) & 7u;
    if (e > 15u || (e == 15u && m == 7u)) return uint8_t(sign | 0x7eu);  // above 448: saturate
    return uint8_t(sign | (e << 3) | m);
  }
  // subnormal or zero: a multiple of 2^-9; 8 * 2^-9 is the smallest normal, code 0x08
  return uint8_t(sign | uint8_t(std::nearbyint(f32_from_bits(a) * 0x1p9f)));
}

inline float e4m3_to_f32(uint8_t q) {
  const uint32_t e = (q >> 3) & 0xfu, m = q & 7u;
  if (e == 15u && m == 7u) return f32_from_bits((uint32_t(q & 0x80u) << 24) | 0x7fc00000u);
  const float v = e == 0 ? std::ldexp(float(m), -9) : f32_from_bits(((e + 120u) << 23) | (m << 20));
  return (q & 0x80u) ? -v : v;
}

/** fp8 payloads (docs/MOE.md, "fp8 dispatch"): blocks of 128 columns, one float scale each. */
inline constexpr int64_t kFp8Block = 128;
inline constexpr float kFp8Max = 448.0f;
inline constexpr float kFp8AmaxFloor = 1e-10f;  // an all-zero block gets a tiny scale, not 0 / 0
/** Bytes of one packed fp8 row of `hidden` columns: the e4m3 codes, then hidden / 128 floats. */
inline constexpr int64_t fp8_row_bytes(int64_t hidden) { return hidden + hidden / kFp8Block * 4; }

// ---- typed access through the storage type ----

template <DType T>
struct Elem;
#define X(e, n, S, A, u)                                \
  template <>                                           \
  struct Elem<DType::e> {                               \
    using storage = S;                                  \
    using acc = A;                                      \
    static inline acc load(const storage *p, size_t i); \
    static inline storage from(acc v);                  \
  };
TDIST_KERNELS_FOR_EACH_DTYPE(X)
#undef X
inline float Elem<DType::f32>::load(const float *p, size_t i) { return p[i]; }
inline float Elem<DType::f32>::from(float v) { return v; }
inline double Elem<DType::f64>::load(const double *p, size_t i) { return p[i]; }
inline double Elem<DType::f64>::from(double v) { return v; }
inline float Elem<DType::f16>::load(const uint16_t *p, size_t i) { return f16_to_f32(p[i]); }
inline uint16_t Elem<DType::f16>::from(float v) { return f32_to_f16(v); }
inline float Elem<DType::bf16>::load(const uint16_t *p, size_t i) { return bf16_to_f32(p[i]); }
inline uint16_t Elem<DType::bf16>::from(float v) { return f32_to_bf16(v); }

/** Calls `fn(std::integral_constant-like tag)` with the compile-time dtype. */
template <class Fn>
inline decltype(auto) dispatch_dtype(DType t, Fn &&fn) {
  switch (t) {
    case DType::f64: return fn(Elem<DType::f64>{});
    case DType::f16: return fn(Elem<DType::f16>{});
    case DType::bf16: return fn(Elem<DType::bf16>{});
    case DType::f32:
    default: return fn(Elem<DType::f32>{});
  }
}

/** Element `i` of a buffer of dtype `t`, as double. */
inline double load_as_double(DType t, const void *p, size_t i) {
  return dispatch_dtype(t, [&](auto e) -> double {
    using E = decltype(e);
    return double(E::load(static_cast<const typename E::storage *>(p), i));
  });
}
inline void store_from_double(DType t, void *p, size_t i, double v) {
  dispatch_dtype(t, [&](auto e) {
    using E = decltype(e);
    static_cast<typename E::storage *>(p)[i] = E::from(typename E::acc(v));
  });
}

/** Quantizes one row of `hidden` values of dtype `t` (hidden a multiple of 128) into the packed
 *  fp8 row `out` (fp8_row_bytes(hidden) bytes): per block b, amax = max |x| over its 128 columns
 *  of the values converted to float (finite inputs), scale_b = max(amax, kFp8AmaxFloor) / 448 and code =
 * f32_to_e4m3(x / scale_b), both divisions correctly rounded float ones. Dequantized: e4m3_to_f32(code) *
 * scale_b. */
inline void quantize_fp8_row(DType t, const void *row, int64_t hidden, unsigned char *out) {
  for (int64_t b = 0; b < hidden / kFp8Block; ++b) {
    float amax = 0.0f;
    for (int64_t c = b * kFp8Block; c < (b + 1) * kFp8Block; ++c)
      amax = std::fmax(amax, std::fabs(float(load_as_double(t, row, size_t(c)))));
    const float scale = std::fmax(amax, kFp8AmaxFloor) / kFp8Max;
    for (int64_t c = b * kFp8Block; c < (b + 1) * kFp8Block; ++c)
      out[c] = f32_to_e4m3(float(load_as_double(t, row, size_t(c))) / scale);
    std::memcpy(out + hidden + 4 * b, &scale, 4);
  }
}

// ---- deterministic inputs: value(seed, rank, index) in [-1, 1), reproducible on any rank ----

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline double gen_value(uint64_t seed, int rank, uint64_t index) {
  uint64_t h = splitmix64(seed ^ splitmix64((uint64_t(uint32_t(rank)) << 40) ^ index));
  return double(h >> 11) * 0x1p-52 - 1.0;  // 53 random bits -> [-1, 1)
}
/** Fills `n` elements of `p` with gen_value(seed, rank, first + i), rounded to dtype `t`. */
inline void fill_random(DType t, void *p, size_t n, uint64_t seed, int rank, uint64_t first = 0) {
  dispatch_dtype(t, [&](auto e) {
    using E = decltype(e);
    auto *q = static_cast<typename E::storage *>(p);
    for (size_t i = 0; i < n; ++i) q[i] = E::from(typename E::acc(gen_value(seed, rank, first + i)));
  });
}
/** The element gen would produce, as stored bits (for exact comparisons of moved data). */
inline void gen_element(DType t, void *out, uint64_t seed, int rank, uint64_t index) {
  store_from_double(t, out, 0, gen_value(seed, rank, index));
}

/** Poison byte for outputs: 0xFF bytes are NaN in every float dtype, never a valid result. */
inline constexpr unsigned char kPoisonByte = 0xff;
inline void poison(void *p, size_t nbytes) { std::memset(p, kPoisonByte, nbytes); }

}  // namespace tdist::kernels
