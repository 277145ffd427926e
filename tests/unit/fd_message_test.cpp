// The heap descriptor message (runtime/core/fd_message.hpp): what a broken or hostile other end of
// the socket sends is refused by name, and every descriptor it attached is closed.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/fd_message.hpp"

namespace {

int open_fds() {
  int n = 0;
  DIR *d = ::opendir("/proc/self/fd");
  while (dirent *e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory's own descriptor
}

// Sends `payload` with `nfds` descriptors of /dev/null attached (0: none), then closes the sending
// end; returns what recv_descriptor said ("ok" or the error text) and closes what it returned.
std::string exchange(const std::string &payload, int nfds) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::vector<int> fds;
  for (int i = 0; i < nfds; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  msghdr msg{};
  iovec iov{const_cast<char *>(payload.data()), payload.size()};
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
  if (!payload.empty() || nfds > 0) EXPECT_GE(::sendmsg(sv[0], &msg, MSG_NOSIGNAL), 0);
  for (int fd : fds) ::close(fd);
  ::close(sv[0]);
  std::string said = "ok";
  int32_t who = -1;
  try {
    int fd =
        tdist::recv_descriptor(sv[1], 3, &who, tdist::FdClock::now() + std::chrono::milliseconds(200), 0.2);
    EXPECT_GE(fd, 0);
    ::close(fd);
  } catch (const std::exception &e) {
    said = e.what();
  }
  ::close(sv[1]);
  return said;
}

TEST(FdMessage, OneWholeMessageWithOneDescriptor) {
  const int before = open_fds();
  int32_t pe = 3;
  EXPECT_EQ(exchange(std::string(reinterpret_cast<char *>(&pe), 4), 1), "ok");
  EXPECT_EQ(open_fds(), before);
}

TEST(FdMessage, RefusedMessagesLeakNoDescriptor) {
  const int before = open_fds();
  struct Case {
    std::string payload;
    int nfds;
    const char *says;
  } cases[] = {
      {"ab", 1, "short message"},                                 // a descriptor with a short message
      {"abcd", 0, "no heap descriptor attached"},                 // no descriptor
      {"abcd", 2, "more than one descriptor"},                    // two of them
      {"abcd", 12, "more descriptors than a message may carry"},  // beyond the room: truncated
      {"", 0, "closed the connection"},
  };
  for (const Case &c : cases) {
    std::string said = exchange(c.payload, c.nfds);
    EXPECT_NE(said.find(c.says), std::string::npos)
        << "payload of " << c.payload.size() << " bytes, " << c.nfds << " descriptor(s): " << said;
    EXPECT_NE(said.find("PE 3"), std::string::npos) << said;
    EXPECT_EQ(open_fds(), before) << "descriptors leaked after: " << said;
  }
}

TEST(FdMessage, NothingArrivesInTime) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int32_t who;
  try {
    tdist::recv_descriptor(sv[1], 5, &who, tdist::FdClock::now() + std::chrono::milliseconds(50), 0.05);
    ADD_FAILURE() << "no error";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("PE 5's heap descriptor did not arrive"), std::string::npos)
        << e.what();
  }
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
