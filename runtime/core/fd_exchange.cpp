// Passing heap file descriptors between the PEs of one host (SCM_RIGHTS over abstract Unix
// sockets). Only processes of the same uid are served (SO_PEERCRED).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "bootstrap/control.hpp"
#include "core/error.hpp"
#include "core/transport.hpp"

namespace tdist {

namespace {

sockaddr_un socket_name(const ControlPlane &cp, const char *tag, int pe, socklen_t *len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = strfmt("tdist-%s-%s-%d", cp.job_id().c_str(), tag, pe);
  // abstract namespace: leading NUL, nothing on the file system to leak
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof a.sun_path - 2));
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + std::min(name.size(), sizeof a.sun_path - 2));
  return a;
}

void send_fd(int sock, int fd, int32_t pe) {
  msghdr msg{};
  iovec iov{&pe, sizeof pe};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  TDIST_CHECK(::sendmsg(sock, &msg, MSG_NOSIGNAL) == ssize_t(sizeof pe), TDIST_ERR_SMEM,
              "sending heap descriptor: %s", std::strerror(errno));
}

int recv_fd(int sock, int32_t *pe) {
  msghdr msg{};
  iovec iov{pe, sizeof *pe};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t k = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  TDIST_CHECK(k == ssize_t(sizeof *pe), TDIST_ERR_SMEM, "receiving heap descriptor: %s",
              k < 0 ? std::strerror(errno) : "short message");
  cmsghdr *c = CMSG_FIRSTHDR(&msg);
  TDIST_CHECK(c && c->cmsg_type == SCM_RIGHTS, TDIST_ERR_SMEM, "peer sent no descriptor");
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

}  // namespace

std::vector<int> exchange_fds_with_local_peers(ControlPlane &cp, int my_fd, const char *tag) {
  const auto &locals = cp.local_ranks();
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
    cp.barrier();
    cleanup.armed = false;
    return out;
  }
  lsock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  TDIST_CHECK(lsock >= 0, TDIST_ERR_SMEM, "socket(AF_UNIX): %s", std::strerror(errno));
  socklen_t len;
  sockaddr_un me = socket_name(cp, tag, cp.rank(), &len);
  if (::bind(lsock, reinterpret_cast<sockaddr *>(&me), len) != 0 || ::listen(lsock, peers) != 0) {
    int e = errno;
    TDIST_THROW(TDIST_ERR_SMEM, "cannot listen on the descriptor socket: %s", std::strerror(e));
  }
  timeval tv{60, 0};  // accept() gives up if a peer never comes (it failed elsewhere)
  setsockopt(lsock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  cp.barrier();  // every PE is listening
  std::string serve_error;
  std::thread server([&] {
    try {
      for (int i = 0; i < peers; ++i) {
        int s = ::accept4(lsock, nullptr, nullptr, SOCK_CLOEXEC);
        TDIST_CHECK(s >= 0, TDIST_ERR_SMEM, "accept: %s", std::strerror(errno));
        ucred cred{};
        socklen_t cl = sizeof cred;
        bool same_user = ::getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
                         cred.uid == ::getuid();
        if (same_user) send_fd(s, my_fd, cp.rank());
        ::close(s);
        TDIST_CHECK(same_user, TDIST_ERR_SMEM, "refused a heap request from uid %u", cred.uid);
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
      sockaddr_un peer = socket_name(cp, tag, pe, &len);
      if (::connect(s, reinterpret_cast<sockaddr *>(&peer), len) != 0) {
        int e = errno;
        ::close(s);
        TDIST_THROW(TDIST_ERR_SMEM, "cannot reach PE %d's descriptor socket: %s", pe, std::strerror(e));
      }
      int32_t who = -1;
      int fd = recv_fd(s, &who);
      ::close(s);
      TDIST_CHECK(who == pe, TDIST_ERR_SMEM, "descriptor from PE %d, expected PE %d", who, pe);
      out[pe] = fd;
    } catch (const std::exception &e) {
      err = e.what();
      break;
    }
  }
  if (!err.empty()) ::shutdown(lsock, SHUT_RDWR);
  server.join();
  ::close(lsock);
  lsock = -1;
  if (err.empty()) err = serve_error;
  if (!err.empty()) TDIST_THROW(TDIST_ERR_SMEM, "heap descriptor exchange failed: %s", err.c_str());
  cp.barrier();
  cleanup.armed = false;
  return out;
}

}  // namespace tdist
