// One rank of a hostile-neighbour or slow-fault job (driven by hostile_test.py). Every rank runs
// this program; TDIST_HOSTILE_MODE picks the case:
//
//   job          a small job: init, calloc, a put to every peer and back, barriers, finalize.
//                With TDIST_HOSTILE_HEAP_DELAY_MS, every connect() to a heap descriptor socket
//                is delayed that long (a window in which the test's stranger connects first);
//                with TDIST_HOSTILE_INIT_DELAY_MS, ranks other than 0 wait that long before
//                tdist_init (a window in which the stranger talks to the store first).
//   memory       TDIST_HOSTILE_BARRIERS control barriers and TDIST_HOSTILE_MALLOCS malloc/free
//                pairs; rank 0 prints its VmRSS growth (MEMORY rank=0 ...) and fails beyond
//                TDIST_HOSTILE_RSS_BOUND_KB.
//   freeze       rank TDIST_HOSTILE_VICTIM stops itself (SIGSTOP) once the job runs; the others
//                wait for it in a host barrier, a kernel and finalize, and must name it.
//   mismatch     rank n-1 asks for a different heap size: every rank must fail init with
//                COLLECTIVE_MISMATCH naming both sizes.
//   hosts        the ranks run on several hosts (hostile_test.py gives some of them another
//                hostname): every rank must fail init with NOT_SUPPORTED, and the message must
//                contain TDIST_HOSTILE_EXPECT (the ranks and hosts).
//
// Each rank prints "HOSTILE-REPORT rank=R op=OP status=S elapsed=T msg=M" and exits 0 when the
// case held on that rank, 1 when it did not, 6 on a usage error.
#include <dlfcn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <thread>

#include "tdist/CPU/launch.h"
#include "tdist/tdist.h"

namespace {

std::string g_mode;
int g_rank = -1;
long g_heap_delay_ms = 0;

long env_long(const char *name, long dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atol(v) : dflt;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

void report(const char *op, int rc, double secs) {
  std::printf("HOSTILE-REPORT rank=%d op=%s status=%s elapsed=%.3f msg=%s\n", g_rank, op,
              tdist_status_name(rc), secs, rc ? tdist_last_error_message() : "");
  std::fflush(stdout);
}

tdist_init_attr_t attr(uint64_t heap = 4u << 20) {
  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = heap;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  a.option_attr.control_timeout_s = unsigned(env_long("TDIST_HOSTILE_CONTROL_S", 120));
  return a;
}

int run_job() {
  if (long d = env_long("TDIST_HOSTILE_INIT_DELAY_MS", 0); d > 0 && g_rank != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(d));
  auto t0 = std::chrono::steady_clock::now();
  tdist_init_attr_t a = attr();
  int rc = tdist_init_from_env(&a);
  report("tdist_init", rc, since(t0));
  if (rc) return 1;
  const int me = tdist_my_pe(), n = tdist_n_pes();
  auto *buf = static_cast<uint64_t *>(tdist_calloc(size_t(n), sizeof(uint64_t)));
  if (!buf) return report("tdist_calloc", tdist_last_error(), since(t0)), 1;
  for (int pe = 0; pe < n; ++pe) tdist_uint64_p(buf + me, uint64_t(1000 + me), pe);
  rc = tdist_host_barrier_all();
  for (int pe = 0; rc == 0 && pe < n; ++pe)
    if (buf[pe] != uint64_t(1000 + pe)) {
      std::printf("HOSTILE-REPORT rank=%d op=check status=WRONG elapsed=0 msg=slot %d holds %llu\n", g_rank,
                  pe, (unsigned long long)buf[pe]);
      return 1;
    }
  if (rc == 0) rc = tdist_free(buf);
  if (rc == 0) rc = tdist_ctrl_barrier();
  report("job", rc, since(t0));
  int frc = tdist_finalize();
  report("tdist_finalize", frc, since(t0));
  return rc || frc ? 1 : 0;
}

int run_memory() {
  tdist_init_attr_t a = attr();
  int rc = tdist_init_from_env(&a);
  if (rc) return report("tdist_init", rc, 0), 1;
  const long barriers = env_long("TDIST_HOSTILE_BARRIERS", 100000);
  const long mallocs = env_long("TDIST_HOSTILE_MALLOCS", 10000);
  const long bound_kb = env_long("TDIST_HOSTILE_RSS_BOUND_KB", 4096);
  // Warm up (allocator pools, the first rounds' buffers), then measure.
  for (int i = 0; i < 200 && rc == 0; ++i) rc = tdist_ctrl_barrier();
  for (int i = 0; i < 50 && rc == 0; ++i) {
    void *p = tdist_malloc(4096);
    rc = p ? tdist_free(p) : tdist_last_error();
  }
  const long rss0 = rss_kb();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < barriers && rc == 0; ++i) rc = tdist_ctrl_barrier();
  const long rss1 = rss_kb();
  const double tb = since(t0);
  for (long i = 0; i < mallocs && rc == 0; ++i) {
    void *p = tdist_malloc(size_t(4096 + (i % 7) * 256));
    rc = p ? tdist_free(p) : tdist_last_error();
  }
  const long rss2 = rss_kb();
  const double tm = since(t0) - tb;
  report("memory loop", rc, since(t0));
  bool ok = rc == 0;
  if (g_rank == 0) {
    std::printf(
        "MEMORY rank=0 barriers=%ld in %.2f s mallocs=%ld in %.2f s rss_kb start=%ld "
        "after_barriers=%ld after_mallocs=%ld growth_kb=%ld bound_kb=%ld\n",
        barriers, tb, mallocs, tm, rss0, rss1, rss2, rss2 - rss0, bound_kb);
    std::fflush(stdout);
    ok = ok && rss2 - rss0 <= bound_kb;
  }
  int frc = tdist_finalize();
  return ok && frc == 0 ? 0 : 1;
}

void kernel_wait(void *p) { tdist_signal_wait_until(static_cast<uint64_t *>(p), TDIST_CMP_EQ, 1); }

int run_freeze() {
  const int victim = int(env_long("TDIST_HOSTILE_VICTIM", 1));
  tdist_init_attr_t a = attr();
  int rc = tdist_init_from_env(&a);
  if (rc) return report("tdist_init", rc, 0), 1;
  auto *sig = static_cast<uint64_t *>(tdist_calloc(8, sizeof(uint64_t)));
  rc = sig ? tdist_ctrl_barrier() : tdist_last_error();
  if (rc) return report("setup", rc, 0), 1;
  if (g_rank == victim) {
    // Let every rank leave the set-up barrier first (rank 0's store answers its last GETs).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::fprintf(stderr, "hostile_app: rank %d stops itself (SIGSTOP)\n", g_rank);
    std::fflush(stderr);
    ::raise(SIGSTOP);
    return 0;  // only if continued
  }
  auto t0 = std::chrono::steady_clock::now();
  const std::string name = "rank " + std::to_string(victim) + " lost";
  // The frozen rank never arrives: the barrier must end naming it (not a timeout on a slot).
  rc = tdist_host_barrier_all();
  const double tb = since(t0);
  report("tdist_host_barrier_all", rc, tb);
  bool ok =
      rc == TDIST_ERR_BOOTSTRAP && std::string(tdist_last_error_message()).find(name) != std::string::npos;
  rc = tdist_cpu_launch(2, kernel_wait, sig);
  report("tdist_cpu_launch(wait)", rc, since(t0));
  ok = ok && rc == TDIST_ERR_BOOTSTRAP;
  auto t1 = std::chrono::steady_clock::now();
  int frc = tdist_finalize();
  const double tf = since(t1);
  report("tdist_finalize", frc, tf);
  std::printf("FREEZE rank=%d named_after=%.3f finalize=%.3f\n", g_rank, tb, tf);
  std::fflush(stdout);
  return ok && frc != TDIST_SUCCESS ? 0 : 1;
}

// Init must fail on this rank with `code` and a message that contains every one of `needles`.
int expect_init_refused(tdist_init_attr_t a, int code, std::initializer_list<std::string> needles) {
  auto t0 = std::chrono::steady_clock::now();
  int rc = tdist_init_from_env(&a);
  report("tdist_init", rc, since(t0));
  if (rc == TDIST_SUCCESS) {
    tdist_finalize();
    return 1;
  }
  const std::string m = tdist_last_error_message();
  if (rc != code) return 1;
  for (const std::string &n : needles)
    if (m.find(n) == std::string::npos) return 1;
  return 0;
}

int run_mismatch() {
  const int n = int(env_long("WORLD_SIZE", 1));
  const uint64_t mine = g_rank == n - 1 ? (8u << 20) : (4u << 20);
  return expect_init_refused(attr(mine), TDIST_ERR_COLLECTIVE_MISMATCH, {"4194304", "8388608"});
}

int run_hosts() {
  const char *want = std::getenv("TDIST_HOSTILE_EXPECT");
  if (!want) {
    std::fprintf(stderr, "hostile_app hosts: TDIST_HOSTILE_EXPECT is not set\n");
    return 6;
  }
  return expect_init_refused(attr(), TDIST_ERR_NOT_SUPPORTED, {want});
}

}  // namespace

// Interposes libc's connect for libtdist.so (the executable's definition comes first in symbol
// lookup): with TDIST_HOSTILE_HEAP_DELAY_MS set, a connection to a heap descriptor socket waits
// first, so a stranger watching /proc/net/unix gets there before the peers.
extern "C" int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  using Fn = int (*)(int, const struct sockaddr *, socklen_t);
  static Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "connect"));
  if (g_heap_delay_ms > 0 && addr && addr->sa_family == AF_UNIX) {
    const auto *un = reinterpret_cast<const sockaddr_un *>(addr);
    if (un->sun_path[0] == '\0' && std::strncmp(un->sun_path + 1, "tdist-", 6) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(g_heap_delay_ms));
  }
  return real(fd, addr, len);
}

int main() {
  const char *mode = std::getenv("TDIST_HOSTILE_MODE");
  const char *rk = std::getenv("RANK");
  if (!mode || !rk) {
    std::fprintf(stderr, "hostile_app: set TDIST_HOSTILE_MODE and RANK\n");
    return 6;
  }
  g_mode = mode;
  g_rank = std::atoi(rk);
  g_heap_delay_ms = env_long("TDIST_HOSTILE_HEAP_DELAY_MS", 0);
  if (g_mode == "job") return run_job();
  if (g_mode == "memory") return run_memory();
  if (g_mode == "freeze") return run_freeze();
  if (g_mode == "mismatch") return run_mismatch();
  if (g_mode == "hosts") return run_hosts();
  std::fprintf(stderr, "hostile_app: unknown TDIST_HOSTILE_MODE '%s'\n", mode);
  return 6;
}
