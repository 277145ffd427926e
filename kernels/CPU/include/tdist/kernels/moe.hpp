// Expert-parallel MoE dispatch and combine on CPU ranks (the contract is docs/MOE.md).
//
// Experts are partitioned contiguously: with E experts over W PEs, L = E / W, expert e lives on
// PE e / L as local expert e % L. Each PE routes its T tokens (x: (T, H)) with top-k expert indices
// (topk_idx: (T, K) int64, -1 = empty slot) and weights (topk_weights: (T, K) float32):
//
//   dispatch  sends token t once to every PE that holds one of its experts (not once per expert);
//             the receiver writes it into one row per (token, expert) pair, grouped by local
//             expert: group j holds, for source PE r = 0..W-1, for t ascending, for k ascending with
//             topk_idx_r[t, k] == me * L + j, the row x_r[t] (bit for bit).
//   combine   out_r[t] = sum_k w_r[t, k] * y_p[row(t, k)] over the pairs of token t, y in the layout
//             of the dispatch output; the expert PE sums its pairs of a token (k ascending, fp32)
//             and sends one row back (rounded to the payload dtype), the home PE sums the rows of
//             the PEs in a fixed order in fp32 and rounds once. A token with no expert gets 0.
//
// Modes:
//   high_throughput  the dispatch output is (max_recv_rows, H), groups packed from row 0
//                    (group j at sum of the counts of groups < j). Counts (and every PE's input
//                    status) are exchanged first through the symmetric heap, then the payload moves
//                    in chunks of chunk_tokens tokens through a fixed ring of buffer_num chunks per
//                    (source, destination) pair: symmetric memory does not grow with the tokens.
//   low_latency      the dispatch output is (L, W * max_tokens, H): group j's rows are
//                    [j * W * max_tokens, j * W * max_tokens + count_j). One round: every token
//                    goes straight into a per-source receive area (double-buffered by call
//                    parity), no counts round, no host barrier.
//
// Errors are collective: a bad input on any PE (an expert index outside [-1, E), more tokens than
// max_tokens, a dispatch output that would need more than max_recv_rows rows on some PE) makes the
// call fail on every PE with TDIST_ERR_INVALID_VALUE and a message naming the PE and the value,
// and no output or handle is written (docs/MOE.md, "Errors"). Every call is collective: all PEs
// make the same calls on buffers made with the same config, in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tdist/kernels/cpu.hpp"

namespace tdist::kernels::cpu {

enum class MoeMode { high_throughput = 0, low_latency = 1 };
const char *moe_mode_name(MoeMode m);
bool parse_moe_mode(const std::string &s, MoeMode *out);

struct MoeConfig {
  MoeMode mode = MoeMode::high_throughput;
  DType dtype = DType::bf16;  ///< payload (f32, f16, bf16, f64)
  int64_t num_experts = 0;    ///< E, a multiple of the PE count
  int64_t hidden = 0;         ///< H
  int64_t topk = 0;           ///< K, 1 <= K <= E
  int64_t max_tokens = 0;     ///< upper bound of T on every PE, every call (>= 1)
  /** high_throughput: rows of the dispatch output per PE; 0: max_tokens * W * min(K, L) (the
   *  worst case). A call whose routing needs more fails on every PE before any data moves. */
  int64_t max_recv_rows = 0;
  int64_t chunk_tokens = 0;  ///< high_throughput: tokens per chunk; 0: ~256 KiB of payload, in [1, 128]
  int buffer_num = 2;        ///< high_throughput: chunks in flight per (source, destination), >= 2
  /** high_throughput: programs per role (senders, receivers), each owning a slice of the H
   *  columns; 1 (the default) suits a 2-core machine. */
  int slices = 1;
  /** Dispatch moves fp8 instead of `dtype` (docs/MOE.md, "fp8 dispatch"): each token is quantized
   *  to e4m3 with one float scale per 128 columns (quantize_fp8_row in dtype.hpp) and travels as a
   *  packed row of fp8_row_bytes(hidden) bytes: the hidden codes, then the hidden / 128 scales.
   *  The dispatch output holds those packed rows. Combine still takes and returns `dtype`.
   *  Needs hidden to be a multiple of 128. */
  bool fp8_dispatch = false;
};

/** What combine needs from a dispatch (host memory on CPU ranks). Valid for any later combine
 *  on the same buffer; the calls stay collective. */
struct MoeHandle {
  MoeMode mode = MoeMode::high_throughput;
  int64_t num_tokens = 0;
  std::vector<int32_t> send_list;      ///< [W][max_tokens]: tokens sent to PE p in order (first n_send[p])
  std::vector<int64_t> n_send;         ///< [W] tokens this PE sent to PE p
  std::vector<int32_t> send_pos;       ///< [T][W]: position of token t in send_list[p], -1 if not sent
  std::vector<int64_t> n_recv;         ///< [W] tokens this PE received from PE r
  std::vector<int64_t> recv_base;      ///< [W] first received-token index of source r
  std::vector<int64_t> recv_rows;      ///< [sum n_recv][K]: output row of each pair here, -1 none
  std::vector<float> recv_weights;     ///< [sum n_recv][K]
  std::vector<int32_t> expert_counts;  ///< [L] rows of each local group
  int64_t recv_total_rows = 0;         ///< sum of expert_counts
};

class MoeBuffer {
 public:
  /** Collective: validates `cfg` and allocates the symmetric areas (docs/MOE.md, "Buffer"). */
  static int create(const MoeConfig &cfg, std::unique_ptr<MoeBuffer> *out);
  ~MoeBuffer();  ///< collective free
  MoeBuffer(const MoeBuffer &) = delete;
  MoeBuffer &operator=(const MoeBuffer &) = delete;

  /** Collective. x (T, H) contiguous, topk_idx / topk_weights (T, K); T may be 0 (null pointers
   *  allowed then). recv_x: recv_rows() rows of dispatch_row_bytes() bytes (H elements of dtype,
   *  or a packed fp8 row with fp8_dispatch; rows past the groups are left untouched);
   *  expert_counts: L int32; handle: filled for combine. */
  int dispatch(const void *x, int64_t num_tokens, const int64_t *topk_idx, const float *topk_weights,
               void *recv_x, int32_t *expert_counts, MoeHandle *handle);
  /** Collective. y in the dispatch output's layout (recv_rows() x H), out (T, H) of the handle's
   *  dispatch. */
  int combine(const void *y, const MoeHandle &handle, void *out);

  const MoeConfig &config() const { return cfg_; }
  int64_t local_experts() const { return L_; }
  /** Rows of the dispatch output: max_recv_rows (high_throughput) or L * W * max_tokens. */
  int64_t recv_rows() const;
  /** Row of local expert j's group start in the low-latency layout (j * W * max_tokens). */
  int64_t ll_group_stride() const { return int64_t(world_) * cfg_.max_tokens; }
  /** Bytes of one row of the dispatch output (and of one token on the wire): H * sizeof(dtype),
   *  or fp8_row_bytes(H) with fp8_dispatch. */
  int64_t dispatch_row_bytes() const { return d_row_bytes_; }
  size_t symmetric_bytes() const { return sym_bytes_; }
  /** Payload bytes this PE put on the wire in the last dispatch / combine (each token once per
   *  destination PE, itself included), for the bytes-per-second metric of DeepEP. */
  int64_t last_dispatch_bytes() const { return last_dispatch_bytes_; }

 private:
  MoeBuffer() = default;
  struct Layout;
  int validate_and_route(const void *x, int64_t T, const int64_t *idx, const float *w, Layout *lay,
                         int64_t st[4]);
  int dispatch_ht(const void *x, const Layout &lay, const int64_t st[4], void *recv_x, int32_t *counts,
                  MoeHandle *h);
  int dispatch_ll(const void *x, const Layout &lay, const int64_t st[4], void *recv_x, int32_t *counts,
                  MoeHandle *h);
  int combine_ht(const void *y, const MoeHandle &h, void *out);
  int combine_ll(const void *y, const MoeHandle &h, void *out);

  MoeConfig cfg_{};
  int me_ = 0, world_ = 1;
  int64_t L_ = 0;
  size_t sym_bytes_ = 0;
  unsigned char *sym_ = nullptr;  // one symmetric allocation, areas at the offsets below
  size_t off_counts_ = 0, off_flags_ = 0, off_dring_ = 0, off_dready_ = 0, off_dcredit_ = 0;
  size_t off_cring_ = 0, off_cready_ = 0, off_ccredit_ = 0;
  size_t off_lld_ = 0, off_llhdr_ = 0, off_llcomb_ = 0, off_llflags_d_ = 0, off_llflags_c_ = 0;
  int64_t row_i64_ = 0;                // counts row: E + W + 4 int64
  int64_t d_tok_bytes_ = 0;            // one token in the dispatch ring / low-latency area (payload + meta)
  int64_t d_row_bytes_ = 0;            // one token's payload in dispatch: H * es, or the packed fp8 row
  std::vector<unsigned char> packed_;  // fp8_dispatch: this call's tokens, quantized
  int64_t hdr_i64_ = 0;                // low-latency header: L + 5 int64
  // sequence numbers of the rings (chunks ever sent / received per peer) and call epochs
  std::vector<uint64_t> dsent_, drecv_, csent_, crecv_;
  uint64_t ht_epoch_ = 0, ll_d_epoch_ = 0, ll_c_epoch_ = 0;
  std::vector<float> acc_;  // combine accumulator (max_tokens x H)
  int64_t last_dispatch_bytes_ = 0;
};

}  // namespace tdist::kernels::cpu
