// tdist CPU kernels: the seed's communication kernels written against the device ABI
// (tdist/abi.h) and launched with tdist_cpu_launch (tdist/CPU/launch.h).
//
// Each kernel is a host object that owns its symmetric buffers (staging memory, signal slots),
// allocated collectively at creation and freed collectively on destruction: every PE must create
// and destroy the same kernels with the same arguments in the same order (tdist_malloc's rule).
// `run()` is collective too and follows the seed's host signal-reset protocol:
//
//     zero this PE's signal slots; host barrier; launch; host barrier
//
// The first barrier keeps a peer from notifying this PE before its slots are cleared, the second
// keeps the next call's clear from erasing signals of this call and keeps peers from overwriting
// staging memory that is still being read.
// (The all-to-all's `direct` variant is the exception: no reset, no barrier, one flag round; see
// A2AVariant::direct.)
//
// Errors: every call returns TDIST_SUCCESS or a tdist_status_t; last_error_message() says why
// (for runtime failures it carries tdist_last_error_message()). Nothing throws.
//
// Layouts are row-major with the innermost dimension contiguous; the other strides are in
// elements. Inputs and outputs are ordinary host memory unless a variant says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tdist/kernels/dtype.hpp"

namespace tdist::kernels::cpu {

/** Message of the last failing call of this library on this thread ("" if none). */
const char *last_error_message();

/** Programs per PE of a launch. The machine this was written for has 2 cores; a grid of 2-4
 *  keeps 8 PEs x grid threads progressing (waits back off to sleep, see CONTRACT.md section 6). */
inline constexpr int kDefaultGrid = 4;

// ============================== reverse / dispatch all-to-all ==============================

/** The seed's reverse all-to-all (EP MoE combine), plus the dispatch direction.
 *
 *  reverse (combine): in  A (S*W, H, D) on every PE, rows [p*S, (p+1)*S) go to PE p;
 *                     out C (S, H*W, D): C_p[s, r*H + h, :] = A_r[p*S + s, h, :].
 *  dispatch (forward): the inverse: in X (S, H*W, D), out Y (S*W, H, D):
 *                     Y_p[r*S + s, h, :] = X_r[s, p*H + h, :]; reverse(dispatch(X)) == X.
 *  (The seed writes the forward shapes as (S, H, D) -> (S/W, H*W, D): that is the reverse
 *  kernel with S renamed; tdist's dispatch is the exact inverse instead, so the pair composes.)
 */
//  The variants are named by algorithm, the same names as the Triton kernels' (tdist_kernels.ops,
//  REVERSE_A2A_VARIANTS) and tdist-bench's (a2a_<variant>). The seed named them after the engines
//  (MTE, UDMA); those names are kept as deprecated enumerators and accepted by parse_a2a_variant.
enum class A2AVariant {
  /** Seed variant 1 ("MTE"): the producer/consumer pipeline. Even programs store tiles into the target
   *  PE's staging buffer [buffer_num][block_s][W*H][D] after waiting for the per-task slot to be
   *  0; odd programs wait for the slot to be 1, copy out, reset it to 0 (credit return). */
  pipeline = 0,
  /** Seed variant 2 ("UDMA"): one bulk tdist_putmem per peer (engine UDMA), local self-copy through the
   *  tiled double buffer, one tdist_barrier_all per S block, then the consumers. Reverse only. */
  bulk = 1,
  /** Seed variant 3 ("wait/notify"): variant 2 with the barrier replaced by two signal regions: region A
   *  [num_blocks_s][W] (bulk arrival per S block and sender, written once, no credit), region B
   *  [buffer_num][num_blocks_d*H] (self-copy double buffer, credit returned). Reverse only. */
  wait_notify = 2,
  /** CPU one-copy variant (not in the seed): the output is symmetric memory (output_buffer())
   *  and every program stores its tiles straight into the target PE's output, so each byte is
   *  copied once, as Open MPI's single-copy path does. One synchronisation round per call and no
   *  host barrier: the output is double-buffered (call e writes buffer e % 2), and each PE, after
   *  its stores, sets flag (e % 2, me) = e at every target, then waits for all W flags of its own.
   *  Reusing buffer e % 2 at call e + 2 is safe because a writer only gets there after seeing
   *  every peer's call-(e + 1) flag, which a peer sets inside its call e + 1, i.e. after it
   *  stopped using the output of call e. An output is therefore valid until the PE's next run(). */
  direct = 3,
  mte [[deprecated("A2AVariant::pipeline")]] = pipeline,
  udma [[deprecated("A2AVariant::bulk")]] = bulk,
  udma_wait_notify [[deprecated("A2AVariant::wait_notify")]] = wait_notify,
};
/** "pipeline", "bulk", "wait_notify", "direct". */
const char *a2a_variant_name(A2AVariant v);
/** The names of a2a_variant_name, or a former one ("mte", "udma", "udma_wait_notify", "wn"). */
bool parse_a2a_variant(const std::string &s, A2AVariant *out);

enum class A2ADirection { reverse = 0, dispatch = 1 };

struct AllToAllConfig {
  A2ADirection direction = A2ADirection::reverse;
  A2AVariant variant = A2AVariant::pipeline;
  DType dtype = DType::f32;
  int64_t S = 0, H = 0, D = 0;  ///< any S, H, D >= 1 (boundary tiles are clipped)
  int64_t block_s = 0;          ///< rows per S block; 0: chosen from the sizes
  int64_t block_d = 0;          ///< elements per D block; 0: min(D, 4096)
  int buffer_num = 2;           ///< staging buffers (>= 1; >= 2 for bulk and wait_notify)
  /** Programs per PE: even, >= 2 (producers = consumers = grid/2); direct: any >= 1.
   *  0: 2, or 1 for direct (grid 1 runs on the calling thread: no thread start per launch, which
   *  matters on a 2-core machine running 4 PEs). */
  int grid = 0;
};

class AllToAll {
 public:
  /** Collective: validates `cfg`, allocates staging and signal memory on the symmetric heap. */
  static int create(const AllToAllConfig &cfg, std::unique_ptr<AllToAll> *out);
  ~AllToAll();  ///< collective free
  AllToAll(const AllToAll &) = delete;
  AllToAll &operator=(const AllToAll &) = delete;

  /** Collective. `in`/`out` contiguous in the shapes above; for `direct`, `out` must be
   *  output_buffer() (or nullptr for it): the buffer this call writes, valid until the next run(). */
  int run(const void *in, void *out);
  /** As run() with explicit element strides (innermost stride is 1):
   *  in (rows, heads): in_s, in_h; out (rows, heads): out_s, out_h. */
  int run_strided(const void *in, int64_t in_s, int64_t in_h, void *out, int64_t out_s, int64_t out_h);

  const AllToAllConfig &config() const { return cfg_; }
  int64_t in_elems() const;   ///< elements of the input per PE
  int64_t out_elems() const;  ///< elements of the output per PE
  /** `direct`: the symmetric buffer the next run() writes; last_output(): the one the previous
   *  run() wrote, valid until this PE's next run(). Between calls, faster peers may already be
   *  writing the next call into output_buffer(): only touch it (e.g. to poison it for a check)
   *  while every PE is held at a barrier. nullptr for other variants. */
  void *output_buffer() const { return direct_out_[(epoch_ + 1) % 2]; }
  void *last_output() const { return epoch_ ? direct_out_[epoch_ % 2] : nullptr; }
  size_t symmetric_bytes() const { return sym_bytes_; }

 private:
  AllToAll() = default;
  AllToAllConfig cfg_{};
  int me_ = 0, world_ = 1;
  int64_t nbs_ = 0, nbd_ = 0;
  size_t slot_rows_ = 0;  // bulk, wait_notify: rows per rank slot
  unsigned char *stage_ = nullptr;
  int64_t *signals_ = nullptr;
  size_t signal_bytes_ = 0;
  void *direct_out_[2] = {nullptr, nullptr};
  uint64_t epoch_ = 0;  // direct: calls made (flags carry the call's number)
  size_t sym_bytes_ = 0;
};

// ======================================== all-reduce ========================================

enum class AllReduceAlgo {
  one_shot = 0,  ///< copy in, barrier, every PE sums all peers' buffers (in PE order)
  two_shot = 1,  ///< reduce-scatter (PE p reduces chunk p in place), barrier, all-gather
  ring = 2,      ///< seed 003's ring, done correctly: W-1 reduce-scatter + W-1 all-gather steps,
                 ///< per-(phase, step, program) signals, each program owns a slice of every chunk
};
const char *allreduce_algo_name(AllReduceAlgo a);
bool parse_allreduce_algo(const std::string &s, AllReduceAlgo *out);

struct AllReduceConfig {
  AllReduceAlgo algo = AllReduceAlgo::one_shot;
  DType dtype = DType::f32;
  int64_t max_elems = 0;  ///< capacity; run() accepts any n <= max_elems
  /** Programs per PE, >= 1. 0: per call, 1 below 1 MiB per PE (no thread start: on the 2-core
   *  box a launch of 4 threads costs ~2.5 ms at 4 PEs), else 2. */
  int grid = 0;
};

/** Sum all-reduce. fp16/bf16 add through float and round once per addition. */
class AllReduce {
 public:
  static int create(const AllReduceConfig &cfg, std::unique_ptr<AllReduce> *out);
  ~AllReduce();
  AllReduce(const AllReduce &) = delete;
  AllReduce &operator=(const AllReduce &) = delete;
  /** Collective; `in` and `out` are local memory of n elements (may alias). */
  int run(const void *in, void *out, int64_t n);
  const AllReduceConfig &config() const { return cfg_; }

 private:
  AllReduce() = default;
  AllReduceConfig cfg_{};
  int me_ = 0, world_ = 1;
  unsigned char *work_ = nullptr;  // symmetric: max_elems (+ ring receive slots)
  int64_t *signals_ = nullptr;
  size_t signal_bytes_ = 0;
};

// ================================ AllGather+GEMM, GEMM+ReduceScatter ================================

/** C (W*m, n) = AllGather_rows(A_r (m, k)) @ B (k, n), B local to each PE (e.g. a column shard).
 *  Producers (the first `producers` programs) push this PE's A tiles (block_m rows) into every
 *  peer's gathered buffer and notify a per-(source PE, tile) slot; consumers compute C row tiles
 *  in swizzled order, starting with this PE's own rows (local data, no wait), waiting for each
 *  remote tile's slot before reading it. Accumulates in float (double for f64). */
struct AgGemmConfig {
  DType dtype = DType::f32;
  int64_t m = 0, n = 0, k = 0;  ///< m: rows of A per PE
  int64_t block_m = 0;          ///< rows per tile; 0: chosen
  int grid = kDefaultGrid;      ///< >= 2
  int producers = 1;            ///< 1 <= producers < grid
};
class AgGemm {
 public:
  static int create(const AgGemmConfig &cfg, std::unique_ptr<AgGemm> *out);
  ~AgGemm();
  AgGemm(const AgGemm &) = delete;
  AgGemm &operator=(const AgGemm &) = delete;
  /** a (m, k), b (k, n), c (W*m, n), all contiguous local memory. */
  int run(const void *a, const void *b, void *c);
  const AgGemmConfig &config() const { return cfg_; }

 private:
  AgGemm() = default;
  AgGemmConfig cfg_{};
  int me_ = 0, world_ = 1;
  unsigned char *gathered_ = nullptr;  // symmetric (W*m, k)
  int64_t *signals_ = nullptr;
  size_t signal_bytes_ = 0;
};

/** C_p (m, n) = sum_r (A_r (W*m, k) @ B_r (k, n))[p*m : (p+1)*m]: GEMM, then reduce-scatter over
 *  rows. Producers compute partial row tiles in swizzled order (tiles of segment (me + i) % W at
 *  step i, so the PEs start on different segments, their own first) and store each partial tile,
 *  in the accumulation type, straight into the owner's staging [W][m][n], then notify a
 *  per-(source PE, tile) slot; consumers (the last `consumers` programs) of the owner wait for
 *  the W partials of a tile (own first), sum them in PE order and write C. */
struct GemmRsConfig {
  DType dtype = DType::f32;
  int64_t m = 0, n = 0, k = 0;  ///< m: output rows per PE; A has W*m rows
  int64_t block_m = 0;
  int grid = kDefaultGrid;  ///< >= 2
  int consumers = 1;        ///< 1 <= consumers < grid
};
class GemmRs {
 public:
  static int create(const GemmRsConfig &cfg, std::unique_ptr<GemmRs> *out);
  ~GemmRs();
  GemmRs(const GemmRs &) = delete;
  GemmRs &operator=(const GemmRs &) = delete;
  /** a (W*m, k), b (k, n), c (m, n), contiguous local memory. */
  int run(const void *a, const void *b, void *c);
  const GemmRsConfig &config() const { return cfg_; }

 private:
  GemmRs() = default;
  GemmRsConfig cfg_{};
  int me_ = 0, world_ = 1;
  unsigned char *staging_ = nullptr;  // symmetric [W][m][n] accumulation type
  int64_t *signals_ = nullptr;
  size_t signal_bytes_ = 0;
};

}  // namespace tdist::kernels::cpu
