// Passing heap file descriptors between the PEs of one host (SCM_RIGHTS over abstract Unix
// sockets; docs/CONTRACT.md section 4).
//
// The socket names are visible to every local user (/proc/net/unix), so the server side trusts
// nothing but credentials: a connection is served only when SO_PEERCRED names this user and the
// pid of a local peer that has not been served yet (pids come from the authenticated store, see
// ControlPlane::pid_of). Anything else is a stranger: closed at once, counted, and the server goes
// on waiting for the real peers. The client side checks the server's credentials the same way
// before it takes a descriptor. Every step is bounded by the control plane's operation timeout
// and a failure names what was waited for.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include "bootstrap/control.hpp"
#include "core/error.hpp"
#include "core/fd_message.hpp"
#include "core/transport.hpp"

namespace tdist {

namespace {

using Clock = FdClock;

sockaddr_un socket_name(const ControlPlane &cp, const char *tag, int pe, socklen_t *len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = strfmt("tdist-%s-%s-%d", cp.job_id().c_str(), tag, pe);
  // abstract namespace: leading NUL, nothing on the file system to leak
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof a.sun_path - 2));
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + std::min(name.size(), sizeof a.sun_path - 2));
  return a;
}

void set_timeouts(int sock, Clock::time_point deadline) {
  int ms = std::max(1, ms_left(deadline));
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // connect() and sendmsg() too
}

bool peer_cred(int sock, ucred *cred) {
  socklen_t cl = sizeof *cred;
  return ::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, cred, &cl) == 0;
}

}  // namespace

std::vector<int> exchange_fds_with_local_peers(ControlPlane &cp, int my_fd, const char *tag) {
  const auto &locals = cp.local_ranks();
  const double timeout_s = cp.op_timeout_s();
  std::vector<int> out(cp.size(), -1);
  int lsock = -1;
  // Any throw from here (a lost peer fails the barriers) must not leak the descriptors.
  struct Cleanup {
    std::vector<int> *fds;
    int *sock;
    bool armed = true;
    ~Cleanup() {
      if (!armed) return;
      for (int &fd : *fds)
        if (fd >= 0) ::close(fd), fd = -1;
      if (*sock >= 0) ::close(*sock);
    }
  } cleanup{&out, &lsock};
  out[cp.rank()] = ::fcntl(my_fd, F_DUPFD_CLOEXEC, 0);
  TDIST_CHECK(out[cp.rank()] >= 0, TDIST_ERR_SMEM, "dup of the heap descriptor: %s", std::strerror(errno));
  int peers = int(locals.size()) - 1;
  if (peers == 0) {
    // The job-wide barriers of the exchange below (everyone listening, everyone served): a host
    // with one PE takes part in both, or hosts with different PE counts fall out of step.
    cp.barrier();
    cp.barrier();
    cleanup.armed = false;
    return out;
  }
  lsock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  TDIST_CHECK(lsock >= 0, TDIST_ERR_SMEM, "socket(AF_UNIX): %s", std::strerror(errno));
  socklen_t len;
  sockaddr_un me = socket_name(cp, tag, cp.rank(), &len);
  // The backlog leaves room for strangers: they are accepted and closed, never waited on.
  if (::bind(lsock, reinterpret_cast<sockaddr *>(&me), len) != 0 || ::listen(lsock, 256) != 0) {
    int e = errno;
    TDIST_THROW(TDIST_ERR_SMEM, "cannot listen on the descriptor socket: %s", std::strerror(e));
  }
  cp.barrier();  // every PE is listening
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  const uid_t uid = ::getuid();
  std::atomic<bool> stop{false};
  std::string serve_error;
  std::thread server([&] {
    std::set<int> served;
    int strangers = 0;
    try {
      while (int(served.size()) < peers) {
        if (stop.load()) return;
        int left = ms_left(deadline);
        if (left == 0) {
          std::string missing;
          for (int pe : locals)
            if (pe != cp.rank() && !served.count(pe))
              missing += (missing.empty() ? "" : ", ") + std::to_string(pe);
          TDIST_THROW(TDIST_ERR_TIMEOUT,
                      "PE(s) %s did not ask for PE %d's heap descriptor within %.0f s (%d stranger "
                      "connection(s) refused)",
                      missing.c_str(), cp.rank(), timeout_s, strangers);
        }
        pollfd p{lsock, POLLIN, 0};
        if (::poll(&p, 1, std::min(left, 100)) <= 0) continue;
        int s = ::accept4(lsock, nullptr, nullptr, SOCK_CLOEXEC);
        if (s < 0) continue;  // EAGAIN, or a connection already gone
        ucred cred{};
        int pe = -1;
        if (peer_cred(s, &cred) && cred.uid == uid)
          for (int r : locals)
            if (r != cp.rank() && !served.count(r) && cp.pid_of(r) == int(cred.pid)) pe = r;
        if (pe < 0) {
          // A stranger (another user, or a process that is not a peer of this job): refused
          // without a word, and the server keeps serving.
          ::close(s);
          if (strangers++ == 0)
            std::fprintf(stderr,
                         "tdist[pe %d]: refused a connection to the heap descriptor socket from pid "
                         "%d uid %u: not a PE of this job\n",
                         cp.rank(), int(cred.pid), unsigned(cred.uid));
          continue;
        }
        set_timeouts(s, deadline);
        try {
          send_descriptor(s, my_fd, cp.rank());
        } catch (...) {
          ::close(s);
          throw;
        }
        ::close(s);
        served.insert(pe);
      }
    } catch (const std::exception &e) {
      serve_error = e.what();
    }
  });
  std::string err;
  for (int pe : locals) {
    if (pe == cp.rank()) continue;
    try {
      int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      TDIST_CHECK(s >= 0, TDIST_ERR_SMEM, "socket(AF_UNIX): %s", std::strerror(errno));
      struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
      } closer{s};
      set_timeouts(s, deadline);
      sockaddr_un peer = socket_name(cp, tag, pe, &len);
      if (::connect(s, reinterpret_cast<sockaddr *>(&peer), len) != 0) {
        int e = errno;
        TDIST_THROW(e == EAGAIN || e == ETIMEDOUT ? TDIST_ERR_TIMEOUT : TDIST_ERR_SMEM,
                    "cannot reach PE %d's descriptor socket within %.0f s: %s", pe, timeout_s,
                    std::strerror(e));
      }
      ucred cred{};
      TDIST_CHECK(peer_cred(s, &cred) && cred.uid == uid && int(cred.pid) == cp.pid_of(pe), TDIST_ERR_SMEM,
                  "PE %d's descriptor socket is held by pid %d uid %u, not by PE %d (pid %d)", pe,
                  int(cred.pid), unsigned(cred.uid), pe, cp.pid_of(pe));
      int32_t who = -1;
      int fd = recv_descriptor(s, pe, &who, deadline, timeout_s);
      if (who != pe) {
        ::close(fd);
        TDIST_THROW(TDIST_ERR_SMEM, "descriptor from PE %d, expected PE %d", who, pe);
      }
      out[pe] = fd;
    } catch (const std::exception &e) {
      err = e.what();
      break;
    }
  }
  if (!err.empty()) stop.store(true);
  server.join();
  ::close(lsock);
  lsock = -1;
  if (err.empty()) err = serve_error;
  if (!err.empty())
    TDIST_THROW(TDIST_ERR_SMEM, "PE %d: heap descriptor exchange failed: %s", cp.rank(), err.c_str());
  cp.barrier();
  cleanup.armed = false;
  return out;
}

}  // namespace tdist
