/* Every PE puts its rank-stamped block into every PE's symmetric buffer, then checks what the
 * others put into its own: init / malloc / put / barrier / check / free / finalize at N ranks.
 * Run under tdist-run (or torchrun), which sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tdist/tdist.h>

#define N 1024 /* uint64 words per PE block */

static int fail(const char *what) {
  fprintf(stderr, "consumer: %s failed: %s\n", what, tdist_last_error_message());
  return 1;
}

static uint64_t word(int from, int to, int i) {
  return ((uint64_t)from << 48) | ((uint64_t)to << 32) | (uint64_t)i;
}

int main(void) {
  tdist_init_attr_t a;
  if (tdist_init_attr_default(&a) != TDIST_SUCCESS) return fail("tdist_init_attr_default");
  a.local_mem_size = 16u << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU; /* host-side puts: the CPU backend on any machine */
  if (tdist_init_from_env(&a) != TDIST_SUCCESS) return fail("tdist_init_from_env");
  const int me = tdist_my_pe(), npes = tdist_n_pes();

  uint64_t *buf = tdist_malloc((size_t)npes * N * sizeof(uint64_t)); /* collective */
  if (buf == NULL) return fail("tdist_malloc");
  uint64_t *src = malloc(N * sizeof(uint64_t));
  if (src == NULL) return 1;
  for (int pe = 0; pe < npes; ++pe) {
    for (int i = 0; i < N; ++i) src[i] = word(me, pe, i);
    tdist_putmem(buf + (size_t)me * N, src, N * sizeof(uint64_t), pe); /* my block of pe's buffer */
  }
  tdist_quiet(); /* my puts are complete */
  if (tdist_host_barrier_all() != TDIST_SUCCESS) return fail("tdist_host_barrier_all"); /* and everyone's */

  long bad = 0;
  for (int from = 0; from < npes; ++from)
    for (int i = 0; i < N; ++i)
      if (buf[(size_t)from * N + i] != word(from, me, i)) ++bad;
  printf("consumer: PE %d of %d: %s (%ld wrong words)\n", me, npes, bad ? "FAIL" : "ok", bad);

  free(src);
  if (tdist_free(buf) != TDIST_SUCCESS) return fail("tdist_free");
  if (tdist_finalize() != TDIST_SUCCESS) return fail("tdist_finalize");
  return bad ? 1 : 0;
}
