// One rank of a fault-injection job (driven by fault_test.py). Every rank runs this program; the
// victim rank SIGKILLs itself at a named point, the survivors must report the lost rank, clean up
// and exit with kExitReported.
//
// Environment: TDIST_FAULT_POINT = bootstrap | never_join | malloc | barrier | kernel_wait |
// device_barrier | host_wait | none; TDIST_FAULT_RANK = the victim; TDIST_FAULT_JOIN_S = bootstrap timeout;
// TDIST_FAULT_CONTROL_S = control timeout (a number, or "join" for the bootstrap timeout).
//
// Exit codes: 0 = no fault point and the job ran cleanly; 3 = the fault was reported with a
// lost-rank message and nothing leaked; 4 = reported, but descriptors or heap mappings leaked;
// 5 = the operation under test succeeded although a peer died; 6 = usage error;
// 7 = an error that does not name the lost rank.
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "tdist/CPU/launch.h"
#include "tdist/tdist.h"

namespace {

enum { kExitOk = 0, kExitReported = 3, kExitLeaked = 4, kExitNoError = 5, kExitUsage = 6, kExitVague = 7 };

std::string g_point;
int g_victim = -1, g_rank = -1;

bool is_victim() { return g_rank == g_victim; }

[[noreturn]] void die_now(const char *where) {
  std::fprintf(stderr, "fault_app: rank %d SIGKILLs itself at %s\n", g_rank, where);
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
  std::abort();
}

// Everything open in this process, as "fd -> target".
std::set<std::string> open_fds() {
  std::set<std::string> out;
  DIR *d = ::opendir("/proc/self/fd");
  if (!d) return out;
  int self = ::dirfd(d);
  while (dirent *e = ::readdir(d)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == self) continue;
    char buf[512] = {0};
    std::string p = std::string("/proc/self/fd/") + e->d_name;
    ssize_t k = ::readlink(p.c_str(), buf, sizeof buf - 1);
    out.insert(std::string(e->d_name) + " -> " + (k > 0 ? buf : "?"));
  }
  ::closedir(d);
  return out;
}

int heap_mappings() {
  std::ifstream m("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(m, line))
    if (line.find("tdist-heap") != std::string::npos) ++n;
  return n;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void kernel_wait(void *p) {
  // Every program waits for a signal the victim would have sent (it never does).
  auto *sig = static_cast<uint64_t *>(p) + 8 * tdistx_program_id(0);
  tdist_signal_wait_until(sig, TDIST_CMP_EQ, 1);
}

void kernel_barrier(void *) { tdist_barrier_all(); }

}  // namespace

// Interposes libc's memfd_create for libtdist.so (the executable's definition comes first in
// symbol lookup): the CPU heap is created after the rank has joined the store, in the middle of
// tdist_init, which is where the "bootstrap" victim dies.
extern "C" int memfd_create(const char *name, unsigned int flags) {
  if (g_point == "bootstrap" && is_victim()) die_now("bootstrap (inside tdist_init)");
  using Fn = int (*)(const char *, unsigned int);
  static Fn real = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "memfd_create"));
  return real(name, flags);
}

int main() {
  const char *pt = std::getenv("TDIST_FAULT_POINT");
  const char *vr = std::getenv("TDIST_FAULT_RANK");
  const char *rk = std::getenv("RANK");
  if (!pt || !rk) {
    std::fprintf(stderr, "fault_app: set TDIST_FAULT_POINT, TDIST_FAULT_RANK and RANK\n");
    return kExitUsage;
  }
  g_point = pt;
  g_victim = vr ? std::atoi(vr) : -1;
  g_rank = std::atoi(rk);
  static const std::set<std::string> points = {"bootstrap",   "never_join",     "malloc",    "barrier",
                                               "kernel_wait", "device_barrier", "host_wait", "none"};
  if (!points.count(g_point)) {
    std::fprintf(stderr, "fault_app: unknown TDIST_FAULT_POINT '%s'\n", pt);
    return kExitUsage;
  }
  const std::set<std::string> fds_before = open_fds();
  if (g_point == "never_join" && is_victim()) die_now("never_join (before tdist_init)");

  tdist_init_attr_t a;
  tdist_init_attr_default(&a);
  a.local_mem_size = 4u << 20;
  a.option_attr.backend = TDIST_BACKEND_CPU;
  a.option_attr.wait_timeout_ms = 0;  // waits are unbounded: only the watchdog can end them
  const char *js = std::getenv("TDIST_FAULT_JOIN_S");
  a.option_attr.shm_init_timeout_s = js ? unsigned(std::atoi(js)) : 10;
  // TDIST_FAULT_CONTROL_S = "join": the control timeout equals the join timeout, as the defaults
  // (120 s each) have it.
  const char *cs = std::getenv("TDIST_FAULT_CONTROL_S");
  a.option_attr.control_timeout_s = !cs                            ? 120
                                    : std::strcmp(cs, "join") == 0 ? a.option_attr.shm_init_timeout_s
                                                                   : unsigned(std::atoi(cs));

  auto t0 = std::chrono::steady_clock::now();
  int rc = tdist_init_from_env(&a);
  std::string what = "tdist_init";
  uint64_t *sig = nullptr;
  if (rc == TDIST_SUCCESS) {
    sig = static_cast<uint64_t *>(tdist_calloc(8 * 8, sizeof(uint64_t)));
    rc = sig ? tdist_ctrl_barrier() : tdist_last_error();
    // Survivors are inside the operation under test when the victim dies.
    if (rc == TDIST_SUCCESS && is_victim() && g_point != "none") {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      die_now(g_point.c_str());
    }
    t0 = std::chrono::steady_clock::now();
    if (rc != TDIST_SUCCESS) {
      what = "setup";
    } else if (g_point == "malloc") {
      what = "tdist_malloc";
      rc = tdist_malloc(1 << 20) ? TDIST_SUCCESS : tdist_last_error();
    } else if (g_point == "barrier") {
      what = "tdist_host_barrier_all";
      rc = tdist_host_barrier_all();
    } else if (g_point == "kernel_wait") {
      what = "tdist_cpu_launch(wait)";
      rc = tdist_cpu_launch(4, kernel_wait, sig);
    } else if (g_point == "host_wait") {
      // A host-side wait (outside a launch) reports the loss through the status and the message.
      what = "tdist_signal_wait_until(host)";
      tdist_clear_error();
      tdist_signal_wait_until(sig, TDIST_CMP_EQ, 1);
      rc = tdist_last_error();
    } else if (g_point == "device_barrier") {
      what = "tdist_cpu_launch(barrier)";
      rc = tdist_cpu_launch(3, kernel_barrier, nullptr);
    } else {
      what = "clean run";
      rc = tdist_host_barrier_all();
      if (rc == TDIST_SUCCESS) rc = tdist_free(sig);
    }
  }
  double secs = since(t0);
  std::string msg = rc == TDIST_SUCCESS ? "" : tdist_last_error_message();
  std::printf("FAULT-REPORT rank=%d op=%s status=%s elapsed=%.3f msg=%s\n", g_rank, what.c_str(),
              tdist_status_name(rc), secs, msg.c_str());
  std::fflush(stdout);
  if (tdist_initialized()) {
    int frc = tdist_finalize();
    std::printf("FINALIZE rank=%d status=%s msg=%s\n", g_rank, tdist_status_name(frc),
                frc ? tdist_last_error_message() : "");
  }
  std::set<std::string> fds_after = open_fds();
  std::string leaked;
  for (const auto &f : fds_after)
    if (!fds_before.count(f)) leaked += " [" + f + "]";
  int maps = heap_mappings();
  std::printf("LEAKS rank=%d fds=%s heap_mappings=%d\n", g_rank, leaked.empty() ? " none" : leaked.c_str(),
              maps);
  std::fflush(stdout);
  if (g_point == "none") return rc == TDIST_SUCCESS && leaked.empty() && !maps ? kExitOk : kExitLeaked;
  if (rc == TDIST_SUCCESS) return kExitNoError;
  if (!leaked.empty() || maps) return kExitLeaked;
  std::string name = "rank " + std::to_string(g_victim) + " lost";
  if (msg.find(name) == std::string::npos) return kExitVague;
  return kExitReported;
}
