// Internal helpers of the CPU kernels: errors, symmetric allocation, signal slots, the host
// signal-reset protocol around a launch, row copies.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "tdist/CPU/copy.h"
#include "tdist/CPU/launch.h"
#include "tdist/abi.h"
#include "tdist/kernels/cpu.hpp"
#include "tdist/tdist.h"

namespace tdist::kernels::cpu::detail {

/** Records `code` and a printf-style message for last_error_message(); returns `code`. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** After a failing runtime call: records its status and tdist_last_error_message(). */
int fail_runtime(const char *what, int status);
void clear_error();

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/** Signal slots are TDIST_SIGNAL_SLOT_BYTES apart (int64: 8 elements), one cache line each. */
inline constexpr int64_t kSlotI64 = TDIST_SIGNAL_SLOT_BYTES / sizeof(int64_t);
inline int64_t *slot(int64_t *base, int64_t index) { return base + index * kSlotI64; }
inline size_t slot_bytes(int64_t n_slots) { return size_t(n_slots) * TDIST_SIGNAL_SLOT_BYTES; }

/** Collective symmetric allocation; on failure records the runtime's message. */
void *sym_alloc(size_t bytes, const char *what);
/** `n_slots` zeroed signal slots (tdist_calloc: every PE has zeroed before any PE returns). */
int64_t *sym_alloc_signals(int64_t n_slots, const char *what, size_t *bytes);
/** The status to return after a failed sym_alloc / sym_alloc_signals. */
inline int alloc_status() { return tdist_last_error() ? tdist_last_error() : TDIST_ERR_MALLOC_FAILED; }
void sym_free(void *p);

/** The seed's host protocol: zero this PE's `signal_bytes` at `signals`, host barrier, launch
 *  `grid` programs of `fn(args)`, host barrier. Returns the first failure (launch faults carry the
 *  runtime's diagnostic); the closing barrier runs even after a failed launch so that every PE
 *  makes the same collective calls. */
int launch_with_protocol(const char *kernel, int64_t *signals, size_t signal_bytes, int grid,
                         tdist_cpu_kernel_fn fn, void *args);

/** Copies that bypass the cache (non-temporal stores) pay off once a kernel's working set no
 *  longer fits in the last-level cache: measured on the 2-core EPYC box, 4 concurrent 64 MiB
 *  copies run at 17 GB/s with streaming stores against 12 GB/s with memcpy, while 1 MiB copies
 *  (cache resident) are faster with memcpy (30 vs 23 GB/s). Kernels decide per launch. */
inline constexpr size_t kStreamMinBytesPerPe = size_t(4) << 20;

/** tdisti_cpu_copy (memcpy, or a plain SSE2 loop where glibc's rep movsb meets 4K aliasing), or
 *  non-temporal stores when `stream` (ends with a store fence, so a release after it publishes the
 *  data). */
inline void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n, bool stream) {
#if defined(__x86_64__)
  if (stream && n >= 256) {
    size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
    std::memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
    std::memcpy(dst + i, src + i, n - i);
    _mm_sfence();
    return;
  }
#endif
  (void)stream;
  tdisti_cpu_copy(dst, src, n);
}

/** Copies `rows` rows of `nbytes` each between strided byte buffers. */
inline void copy_rows(unsigned char *dst, int64_t dst_stride, const unsigned char *src, int64_t src_stride,
                      int64_t rows, size_t nbytes, bool stream = false) {
  if (dst_stride == src_stride && int64_t(nbytes) == src_stride) {
    copy_bytes(dst, src, nbytes * size_t(rows), stream);
    return;
  }
  for (int64_t i = 0; i < rows; ++i) copy_bytes(dst + i * dst_stride, src + i * src_stride, nbytes, stream);
}

/** PE pe's copy of symmetric `sym` when it is mapped here (load/store), else NULL: then the PE is
 * reached through the ROCE engine (another host), with puts and gets (put_rows, get_bytes). */
inline unsigned char *mapped(const void *sym, int pe) {
  return static_cast<unsigned char *>(tdist_ptr(sym, pe));
}

/** Whether every PE's heap is mapped here (no peer behind the ROCE engine). */
inline bool all_peers_mapped() {
  const tdist_device_state_t *s = tdist_host_device_state();
  if (!s) return false;
  for (int pe = 0; pe < s->n_pes; ++pe)
    if (!s->p2p_heap_base[pe]) return false;
  return true;
}

/** copy_rows into PE pe's copy of symmetric `dst_sym`: stores when it is mapped here, else one
 * engine put per row (one in all when the rows are contiguous on both sides). */
inline void put_rows(unsigned char *dst_sym, int64_t dst_stride, const unsigned char *src, int64_t src_stride,
                     int64_t rows, size_t nbytes, int pe, bool stream = false, bool stable_src = false) {
  // stable_src: `src` stays unchanged until the launch's closing quiet (a kernel's input), so the
  // engine's puts may be posted (nbi) and overlap one another
  auto put = stable_src ? tdist_putmem_nbi : tdist_putmem;
  if (unsigned char *d = mapped(dst_sym, pe)) {
    copy_rows(d, dst_stride, src, src_stride, rows, nbytes, stream);
  } else if (dst_stride == src_stride && int64_t(nbytes) == src_stride) {
    put(dst_sym, src, nbytes * size_t(rows), pe);
  } else {
    for (int64_t i = 0; i < rows; ++i) put(dst_sym + i * dst_stride, src + i * src_stride, nbytes, pe);
  }
}

/** A region of PE pe's copy of symmetric `dst_sym` that a kernel fills with stores: the mapped
 * memory itself, or, for a PE behind the ROCE engine (another host), a local staging copy of the
 * same layout whose filled byte ranges go out with engine puts (put / put_rows) before the
 * kernel's fence and signal. */
class PeerRegion {
 public:
  PeerRegion(unsigned char *dst_sym, int pe, size_t bytes) : sym_(dst_sym), pe_(pe), p_(mapped(dst_sym, pe)) {
    if (!p_) {
      stage_.resize(bytes);
      p_ = stage_.data();
    }
  }
  unsigned char *data() const { return p_; }
  /** Sends bytes [off, off + n) of the region (nothing to do when it is mapped). */
  void put(size_t off, size_t n) const {
    if (!stage_.empty() && n) tdist_putmem(sym_ + off, p_ + off, n, pe_);
  }
  /** Sends `rows` ranges of `n` bytes, the first at `off`, `stride` bytes apart. */
  void put_rows(size_t off, size_t stride, int64_t rows, size_t n) const {
    if (stage_.empty() || !n) return;
    if (n == stride) return put(off, n * size_t(rows));
    for (int64_t i = 0; i < rows; ++i) put(off + size_t(i) * stride, n);
  }

 private:
  unsigned char *sym_;
  int pe_;
  unsigned char *p_;
  std::vector<unsigned char> stage_;
};

/** tdist_putmem of a source that stays unchanged until the launch's closing quiet (a kernel's
 * input): to a PE behind the ROCE engine it is posted (nbi), so that puts to several peers
 * overlap; to a mapped PE it is the blocking copy (its signal may follow without a quiet). */
inline void put_stable(void *dst_sym, const void *src, size_t n, int pe) {
  if (mapped(dst_sym, pe))
    tdist_putmem(dst_sym, src, n, pe);
  else
    tdist_putmem_nbi(dst_sym, src, n, pe);
}

/** `n` bytes of PE pe's copy of symmetric `src_sym` into local `dst`. */
inline void get_bytes(unsigned char *dst, const unsigned char *src_sym, size_t n, int pe) {
  if (const unsigned char *p = mapped(src_sym, pe))
    tdisti_cpu_copy(dst, p, n);
  else
    tdist_getmem(dst, src_sym, n, pe);
}

/** dl.wait / dl.notify on one int64 slot. */
inline void wait_slot(int64_t *s, int64_t value) { (void)tdistx_wait_int64(s, 1, value); }
inline void notify_slot(int64_t *s, int64_t value, int pe) {
  tdistx_notify_int64(s, value, pe, TDIST_SIGNAL_SET);
}

}  // namespace tdist::kernels::cpu::detail
