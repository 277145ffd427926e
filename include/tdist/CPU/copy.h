/*
 * Internal (tdisti_ tier, abi.h): the one byte copy of the CPU backend, used by the device ABI's
 * puts and gets on CPU ranks (runtime/CPU/abi.cpp) and by the CPU kernels' row copies
 * (kernels/CPU/common.hpp). Header-only, so that both reach it without a new exported symbol.
 *
 * memcpy, except where glibc's memcpy is slow. Above 2112 bytes (its rep_movsb_threshold on the
 * 2-core EPYC box, KVM) glibc 2.36 copies with `rep movsb`, which there runs 15-25x slower when
 * the destination lies 1 to 31 bytes past the source modulo 4 KiB (4K aliasing): 64 KiB at
 * distance 16 in 28-37 us against 1.3-1.7 us at distance 0 or 64 (2.3 GB/s instead of 40-49);
 * 32 to 63 bytes cost 1.5x. glibc stops using it at the L2 size (512 KiB there; its vector loop
 * is unaffected). Such distances are common: two back-to-back heap vectors, 16-byte-aligned
 * numpy arrays. For n in [TDISTI_CPU_COPY_LOOP_MIN, TDISTI_CPU_COPY_LOOP_MAX) at distances 1 to
 * 63 the copy is a loop of 16-byte SSE2 loads and stores (unaligned, four per iteration): 1.4-2.4
 * us at 64 KiB, and as fast as memcpy from 512 KiB to 1 MiB (so a part with a 1 MiB L2 is
 * covered too). x86_64 only; elsewhere memcpy.
 *
 * Same contract as memcpy: the ranges must not overlap.
 */
#ifndef TDIST_CPU_COPY_H
#define TDIST_CPU_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define TDISTI_CPU_COPY_LOOP_MIN ((size_t)2 << 10)
#define TDISTI_CPU_COPY_LOOP_MAX ((size_t)1 << 20)

/* Whether tdisti_cpu_copy(dst, src, n) takes the SSE2 loop (exposed for the tests). */
static inline int tdisti_cpu_copy_uses_loop(const void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  size_t dist = (size_t)(((uintptr_t)dst - (uintptr_t)src) % 4096u);
  return n >= TDISTI_CPU_COPY_LOOP_MIN && n < TDISTI_CPU_COPY_LOOP_MAX && dist >= 1 && dist <= 63;
#else
  (void)dst;
  (void)src;
  (void)n;
  return 0;
#endif
}

static inline void tdisti_cpu_copy(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  if (tdisti_cpu_copy_uses_loop(dst, src, n)) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
      __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
      _mm_storeu_si128((__m128i *)(d + i), a);
      _mm_storeu_si128((__m128i *)(d + i + 16), b);
      _mm_storeu_si128((__m128i *)(d + i + 32), c);
      _mm_storeu_si128((__m128i *)(d + i + 48), e);
    }
    for (; i + 16 <= n; i += 16)
      _mm_storeu_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    memcpy(d + i, s + i, n - i); /* < 16 bytes: glibc's short path, no rep movsb */
    return;
  }
#endif
  memcpy(dst, src, n);
}

#endif
