// libFuzzer target: the receiving side of the heap descriptor exchange (runtime/core/fd_message.*),
// fed whatever the other end of the socket may send. The input's first byte is the number of
// descriptors (of /dev/null) to attach, the second how many sendmsg calls the payload (the rest) is
// split into, the descriptors riding on the first. Invariants checked on every input: no crash (and
// no ASan/UBSan report), no descriptor left open in this process after the call whatever it said,
// and a descriptor returned only when exactly one was sent with a whole 4-byte number.
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "core/fd_message.hpp"

namespace {

int open_fds() {
  int n = 0;
  DIR *d = ::opendir("/proc/self/fd");
  while (dirent *e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;
}

void send_part(int sock, const uint8_t *p, size_t n, int nfds) {
  std::vector<int> fds;
  for (int i = 0; i < nfds; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  msghdr msg{};
  iovec iov{const_cast<uint8_t *>(p), n};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> ctrl(CMSG_SPACE(sizeof(int) * std::max(nfds, 1)));
  if (nfds > 0) {
    msg.msg_control = ctrl.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * nfds);
  }
  if (n > 0 || nfds > 0) (void)::sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  for (int fd : fds) ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const int nfds = data[0] % 16;
  const int parts = 1 + data[1] % 4;
  const uint8_t *p = data + 2;
  size_t n = std::min<size_t>(size - 2, 8192);
  const int before = open_fds();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  size_t step = (n + parts - 1) / parts, first = std::min(n, step);
  for (size_t off = 0; off < n || off == 0; off += step) {
    send_part(sv[0], p + off, std::min(step, n - off), off == 0 ? nfds : 0);
    if (n == 0) break;
  }
  ::close(sv[0]);
  int32_t who = -1;
  int fd = -1;
  try {
    fd = tdist::recv_descriptor(sv[1], 1, &who, tdist::FdClock::now() + std::chrono::milliseconds(5), 0.005);
  } catch (const std::exception &) {
  }
  if (fd >= 0) {
    if (nfds != 1 || first < 4) {
      std::fprintf(stderr, "a descriptor was accepted from %d attached with a first part of %zu bytes\n",
                   nfds, first);
      __builtin_trap();
    }
    ::close(fd);
  }
  ::close(sv[1]);
  if (open_fds() != before) {
    std::fprintf(stderr, "descriptors leaked: %d open before, %d after\n", before, open_fds());
    __builtin_trap();
  }
  return 0;
}
