// The heap descriptor message (core/fd_message.hpp).
#include "core/fd_message.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace tdist {

int ms_left(FdClock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - FdClock::now()).count();
  return ms <= 0 ? 0 : int(std::min<long long>(ms, 1 << 30));
}

void send_descriptor(int sock, int fd, int32_t pe) {
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
              "sending the heap descriptor: %s", std::strerror(errno));
}

int recv_descriptor(int sock, int pe, int32_t *who, FdClock::time_point deadline, double timeout_s) {
  pollfd p{sock, POLLIN, 0};
  int rc;
  do rc = ::poll(&p, 1, ms_left(deadline));
  while (rc < 0 && errno == EINTR);
  TDIST_CHECK(rc > 0, TDIST_ERR_TIMEOUT, "PE %d's heap descriptor did not arrive within %.0f s", pe,
              timeout_s);
  msghdr msg{};
  iovec iov{who, sizeof *who};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for more descriptors than the one expected, so that extra ones arrive here (and are
  // closed below) rather than being cut off with MSG_CTRUNC.
  constexpr int kRoom = 8;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(kRoom * sizeof(int))] = {};
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t k = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  const int err = errno;
  std::vector<int> fds;
  for (cmsghdr *c = k >= 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  const char *bad = nullptr;
  if (k < 0)
    bad = std::strerror(err);
  else if (k == 0)
    bad = "PE closed the connection";
  else if (k != ssize_t(sizeof *who))
    bad = "short message";
  else if (msg.msg_flags & MSG_CTRUNC)
    bad = "more descriptors than a message may carry";
  else if (fds.empty())
    bad = "no heap descriptor attached";
  else if (fds.size() > 1)
    bad = "more than one descriptor attached";
  if (bad) {
    for (int fd : fds) ::close(fd);
    TDIST_THROW(TDIST_ERR_SMEM, "receiving PE %d's heap descriptor: %s", pe, bad);
  }
  return fds[0];
}

}  // namespace tdist
