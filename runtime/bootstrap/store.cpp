#include "bootstrap/store.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/error.hpp"

namespace tdist {

using Clock = std::chrono::steady_clock;

std::string validate_frame_header(const FrameHeader &h) {
  if (h.magic != kStoreMagic) return strfmt("bad magic 0x%08x", h.magic);
  if (h.key_len > kStoreMaxKey) return strfmt("key length %u exceeds %u", h.key_len, kStoreMaxKey);
  if (h.val_len > kStoreMaxValue)
    return strfmt("value length %u exceeds %u", h.val_len, kStoreMaxValue);
  switch (static_cast<StoreOp>(h.op)) {
    case StoreOp::kHello: case StoreOp::kSet: case StoreOp::kGet: case StoreOp::kAdd:
    case StoreOp::kDel: case StoreOp::kCheck: case StoreOp::kFinalize:
    case StoreOp::kReplyOk: case StoreOp::kReplyError:
      return {};
  }
  return strfmt("unknown op %u", h.op);
}

StoreAddress parse_store_address(const std::string &url) {
  StoreAddress a;
  std::string rest;
  if (url.rfind("tcp://", 0) == 0) {
    rest = url.substr(6);
    auto colon = rest.rfind(':');
    TDIST_CHECK(colon != std::string::npos && colon > 0, TDIST_ERR_INVALID_PARAM,
                "bad store address '%s': expected tcp://host:port", url.c_str());
    a.host = rest.substr(0, colon);
    rest = rest.substr(colon + 1);
  } else if (url.rfind("tcp6://", 0) == 0) {
    a.ipv6 = true;
    rest = url.substr(7);
    auto close = rest.find(']');
    TDIST_CHECK(!rest.empty() && rest[0] == '[' && close != std::string::npos &&
                    close + 1 < rest.size() && rest[close + 1] == ':',
                TDIST_ERR_INVALID_PARAM, "bad store address '%s': expected tcp6://[host]:port",
                url.c_str());
    a.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 2);
  } else {
    TDIST_THROW(TDIST_ERR_INVALID_PARAM,
                "bad store address '%s': must start with tcp:// or tcp6://", url.c_str());
  }
  char *end = nullptr;
  long port = std::strtol(rest.c_str(), &end, 10);
  TDIST_CHECK(!rest.empty() && end && *end == '\0' && port >= 0 && port <= 65535,
              TDIST_ERR_INVALID_PARAM, "bad port '%s' in store address '%s'", rest.c_str(),
              url.c_str());
  a.port = int(port);
  return a;
}

namespace {

bool send_all(int fd, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  while (n) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    c += k;
    n -= size_t(k);
  }
  return true;
}

bool send_frame(int fd, StoreOp op, const std::string &key, const std::string &val) {
  FrameHeader h{kStoreMagic, uint32_t(op), uint32_t(key.size()), uint32_t(val.size())};
  std::string buf(sizeof h + key.size() + val.size(), '\0');
  std::memcpy(buf.data(), &h, sizeof h);
  std::memcpy(buf.data() + sizeof h, key.data(), key.size());
  std::memcpy(buf.data() + sizeof h + key.size(), val.data(), val.size());
  return send_all(fd, buf.data(), buf.size());
}

// Resolves host:port; throws BOOTSTRAP on failure.
std::vector<sockaddr_storage> resolve(const StoreAddress &a, bool passive, socklen_t *len) {
  addrinfo hints{};
  hints.ai_family = a.ipv6 ? AF_INET6 : AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo *res = nullptr;
  std::string port = std::to_string(a.port);
  int rc = getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), port.c_str(), &hints, &res);
  TDIST_CHECK(rc == 0 && res, TDIST_ERR_BOOTSTRAP, "cannot resolve store host '%s': %s",
              a.host.c_str(), gai_strerror(rc));
  std::vector<sockaddr_storage> out;
  for (auto *r = res; r; r = r->ai_next) {
    sockaddr_storage ss{};
    std::memcpy(&ss, r->ai_addr, r->ai_addrlen);
    *len = r->ai_addrlen;
    out.push_back(ss);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- server

struct StoreServer::Impl {
  int listen_fd = -1;
  int wake_pipe[2] = {-1, -1};
  int n_ranks = 0;
  std::string secret;
  std::thread thread;
  std::atomic<bool> stop{false};

  struct Conn {
    int fd;
    int rank = -1;  // -1 until HELLO
    bool finalized = false;
    std::string inbuf;
  };
  std::map<int, Conn> conns;
  std::map<std::string, std::string> kv;
  std::map<std::string, std::vector<int>> waiters;  // key -> fds blocked in GET
  std::string failure;                              // non-empty once a rank was lost
  std::set<int> finalized_ranks;
  std::set<int> seen_ranks;
  std::set<int> gone_ranks;  // connection closed (after finalize, or lost)
  std::mutex mu;  // guards finalized_ranks / seen_ranks for the destructor

  void fail_all(const std::string &why) {
    if (failure.empty()) failure = why;
    for (auto &[key, fds] : waiters)
      for (int fd : fds) send_frame(fd, StoreOp::kReplyError, key, failure);
    waiters.clear();
  }

  void drop(int fd, const char *why) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn c = std::move(it->second);
    conns.erase(it);
    for (auto &[key, fds] : waiters) std::erase(fds, fd);
    ::close(fd);
    if (c.rank >= 0) {
      std::lock_guard<std::mutex> g(mu);
      gone_ranks.insert(c.rank);
    }
    if (c.rank >= 0 && !c.finalized && !stop.load())
      fail_all(strfmt("rank %d lost (%s before finalize)", c.rank, why));
  }

  // Handles one complete frame. Returns false if the connection must be dropped.
  bool handle(Conn &c, StoreOp op, std::string key, std::string val) {
    if (c.rank < 0 && op != StoreOp::kHello) {
      send_frame(c.fd, StoreOp::kReplyError, key, "first message must be HELLO");
      return false;
    }
    if (!failure.empty() && op != StoreOp::kFinalize) {
      send_frame(c.fd, StoreOp::kReplyError, key, failure);
      return true;
    }
    switch (op) {
      case StoreOp::kHello: {
        char *end = nullptr;
        long r = std::strtol(key.c_str(), &end, 10);
        bool secret_ok = val.size() == secret.size();
        unsigned diff = 0;
        for (size_t i = 0; secret_ok && i < val.size(); ++i) diff |= unsigned(val[i] ^ secret[i]);
        if (!secret_ok || diff) {
          send_frame(c.fd, StoreOp::kReplyError, key, "authentication failed");
          return false;
        }
        if (key.empty() || *end || r < 0 || r >= n_ranks) {
          send_frame(c.fd, StoreOp::kReplyError, key, strfmt("rank '%s' out of range", key.c_str()));
          return false;
        }
        {
          std::lock_guard<std::mutex> g(mu);
          if (seen_ranks.count(int(r))) {
            send_frame(c.fd, StoreOp::kReplyError, key, strfmt("rank %ld joined twice", r));
            return false;
          }
          seen_ranks.insert(int(r));
        }
        c.rank = int(r);
        return send_frame(c.fd, StoreOp::kReplyOk, key, "");
      }
      case StoreOp::kSet: {
        auto w = waiters.find(key);
        if (w != waiters.end()) {
          for (int fd : w->second) send_frame(fd, StoreOp::kReplyOk, key, val);
          waiters.erase(w);
        }
        kv[key] = std::move(val);
        return send_frame(c.fd, StoreOp::kReplyOk, key, "");
      }
      case StoreOp::kGet: {
        auto it = kv.find(key);
        if (it != kv.end()) return send_frame(c.fd, StoreOp::kReplyOk, key, it->second);
        waiters[key].push_back(c.fd);
        return true;
      }
      case StoreOp::kAdd: {
        char *end = nullptr;
        long long d = std::strtoll(val.c_str(), &end, 10);
        if (val.empty() || *end) {
          send_frame(c.fd, StoreOp::kReplyError, key, "ADD needs a decimal delta");
          return true;
        }
        long long cur = 0;
        if (auto it = kv.find(key); it != kv.end()) cur = std::strtoll(it->second.c_str(), nullptr, 10);
        cur += d;
        std::string s = std::to_string(cur);
        kv[key] = s;
        if (auto w = waiters.find(key); w != waiters.end()) {
          for (int fd : w->second) send_frame(fd, StoreOp::kReplyOk, key, s);
          waiters.erase(w);
        }
        return send_frame(c.fd, StoreOp::kReplyOk, key, s);
      }
      case StoreOp::kDel:
        kv.erase(key);
        return send_frame(c.fd, StoreOp::kReplyOk, key, "");
      case StoreOp::kCheck:
        return send_frame(c.fd, StoreOp::kReplyOk, key, kv.count(key) ? "1" : "0");
      case StoreOp::kFinalize: {
        c.finalized = true;
        {
          std::lock_guard<std::mutex> g(mu);
          finalized_ranks.insert(c.rank);
        }
        return send_frame(c.fd, StoreOp::kReplyOk, key, "");
      }
      default:
        send_frame(c.fd, StoreOp::kReplyError, key, "op not valid in a request");
        return false;
    }
  }

  void on_readable(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn &c = it->second;
    char buf[65536];
    ssize_t k = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (k == 0) return drop(fd, "connection closed");
    if (k < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return drop(fd, "connection error");
    }
    c.inbuf.append(buf, size_t(k));
    while (c.inbuf.size() >= sizeof(FrameHeader)) {
      FrameHeader h;
      std::memcpy(&h, c.inbuf.data(), sizeof h);
      std::string bad = validate_frame_header(h);
      if (!bad.empty()) {
        send_frame(fd, StoreOp::kReplyError, "", "protocol error: " + bad);
        return drop(fd, "protocol error");
      }
      size_t need = sizeof h + size_t(h.key_len) + size_t(h.val_len);
      if (c.inbuf.size() < need) break;
      std::string key = c.inbuf.substr(sizeof h, h.key_len);
      std::string val = c.inbuf.substr(sizeof h + h.key_len, h.val_len);
      c.inbuf.erase(0, need);
      if (!handle(c, static_cast<StoreOp>(h.op), std::move(key), std::move(val)))
        return drop(fd, "rejected");
    }
  }

  void loop() {
    while (!stop.load()) {
      std::vector<pollfd> pfds;
      pfds.push_back({listen_fd, POLLIN, 0});
      pfds.push_back({wake_pipe[0], POLLIN, 0});
      for (auto &[fd, c] : conns) pfds.push_back({fd, POLLIN, 0});
      int rc = ::poll(pfds.data(), pfds.size(), 200);
      if (rc < 0 && errno != EINTR) break;
      if (rc <= 0) continue;
      if (pfds[0].revents & POLLIN) {
        int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          timeval tv{5, 0};  // a client that stops reading cannot stall the server for long
          setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
          conns.emplace(fd, Conn{fd, -1, false, {}});
        }
      }
      for (size_t i = 2; i < pfds.size(); ++i)
        if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) on_readable(pfds[i].fd);
    }
  }
};

StoreServer::StoreServer(const StoreAddress &addr, int n_ranks, std::string secret)
    : impl_(std::make_unique<Impl>()) {
  impl_->n_ranks = n_ranks;
  impl_->secret = std::move(secret);
  socklen_t len = 0;
  auto addrs = resolve(addr, true, &len);
  int fd = ::socket(addr.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  TDIST_CHECK(fd >= 0, TDIST_ERR_BOOTSTRAP, "store: socket(): %s", std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addrs[0]), len) != 0 || ::listen(fd, 1024) != 0) {
    int e = errno;
    ::close(fd);
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "store: cannot listen on %s%s%s:%d: %s",
                addr.ipv6 ? "[" : "", addr.host.c_str(), addr.ipv6 ? "]" : "", addr.port,
                std::strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &blen);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  impl_->listen_fd = fd;
  TDIST_CHECK(::pipe2(impl_->wake_pipe, O_CLOEXEC) == 0, TDIST_ERR_BOOTSTRAP, "store: pipe: %s",
              std::strerror(errno));
  impl_->thread = std::thread([this] { impl_->loop(); });
}

StoreServer::~StoreServer() {
  // Wait (bounded) until every rank that joined has finalized or gone, so late FINALIZE or
  // barrier messages of other ranks are still answered.
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> g(impl_->mu);
      bool all_done = true;
      for (int r : impl_->seen_ranks)
        if (!impl_->finalized_ranks.count(r) && !impl_->gone_ranks.count(r)) all_done = false;
      if (all_done) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  impl_->stop.store(true);
  if (impl_->wake_pipe[1] >= 0) (void)!::write(impl_->wake_pipe[1], "x", 1);
  if (impl_->thread.joinable()) impl_->thread.join();
  // Listener first: once a client sees its connection close, a new job may bind the same port.
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  for (auto &[fd, c] : impl_->conns) ::close(fd);
  for (int f : impl_->wake_pipe)
    if (f >= 0) ::close(f);
}

// ---------------------------------------------------------------- client

StoreClient::StoreClient(const StoreAddress &addr, int rank, const std::string &secret,
                         double connect_timeout_s, double op_timeout_s)
    : rank_(rank), op_timeout_s_(op_timeout_s) {
  auto deadline = Clock::now() + std::chrono::duration<double>(connect_timeout_s);
  socklen_t len = 0;
  std::string last_err;
  int delay_ms = 5;
  while (true) {
    auto addrs = resolve(addr, false, &len);
    int fd = ::socket(addr.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    TDIST_CHECK(fd >= 0, TDIST_ERR_BOOTSTRAP, "store: socket(): %s", std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addrs[0]), len) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fd_ = fd;
      break;
    }
    last_err = std::strerror(errno);
    ::close(fd);
    if (Clock::now() > deadline)
      TDIST_THROW(TDIST_ERR_BOOTSTRAP,
                  "rank %d: cannot reach the store at %s:%d within %.0f s (last error: %s)", rank,
                  addr.host.c_str(), addr.port, connect_timeout_s, last_err.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 200);
  }
  request(StoreOp::kHello, std::to_string(rank), secret);
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::string StoreClient::request(StoreOp op, const std::string &key, const std::string &value) {
  TDIST_CHECK(fd_ >= 0, TDIST_ERR_BOOTSTRAP, "store connection is closed");
  TDIST_CHECK(key.size() <= kStoreMaxKey && value.size() <= kStoreMaxValue, TDIST_ERR_INVALID_PARAM,
              "store request too large (key %zu bytes, value %zu bytes)", key.size(), value.size());
  if (!send_frame(fd_, op, key, value))
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: lost the store connection (%s)", rank_,
                std::strerror(errno));
  auto deadline = Clock::now() + std::chrono::duration<double>(op_timeout_s_);
  std::string in;
  FrameHeader h{};
  size_t need = sizeof h;
  bool have_header = false;
  while (in.size() < need) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      // A late reply would be misread as the answer to the next request: the connection is
      // unusable from here on.
      ::close(fd_);
      fd_ = -1;
      TDIST_THROW(TDIST_ERR_TIMEOUT, "rank %d: store request for key '%s' timed out after %.0f s",
                  rank_, key.c_str(), op_timeout_s_);
    }
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (rc < 0 && errno != EINTR)
      TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: poll on store: %s", rank_, std::strerror(errno));
    if (rc <= 0) continue;
    char buf[65536];
    size_t want = std::min(sizeof buf, need - in.size());
    ssize_t k = ::recv(fd_, buf, want, 0);
    if (k == 0)
      TDIST_THROW(TDIST_ERR_BOOTSTRAP,
                  "rank %d: the store (rank 0) closed the connection: rank 0 is gone", rank_);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: store recv: %s", rank_, std::strerror(errno));
    }
    in.append(buf, size_t(k));
    if (!have_header && in.size() >= sizeof h) {
      std::memcpy(&h, in.data(), sizeof h);
      std::string bad = validate_frame_header(h);
      TDIST_CHECK(bad.empty(), TDIST_ERR_BOOTSTRAP, "rank %d: bad reply from store: %s", rank_,
                  bad.c_str());
      have_header = true;
      need = sizeof h + h.key_len + h.val_len;
    }
  }
  std::string val = in.substr(sizeof h + h.key_len, h.val_len);
  if (static_cast<StoreOp>(h.op) == StoreOp::kReplyError)
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: store refused '%s': %s", rank_, key.c_str(),
                val.c_str());
  TDIST_CHECK(static_cast<StoreOp>(h.op) == StoreOp::kReplyOk, TDIST_ERR_BOOTSTRAP,
              "rank %d: unexpected reply op %u from store", rank_, h.op);
  return val;
}

void StoreClient::set(const std::string &k, const std::string &v) { request(StoreOp::kSet, k, v); }
std::string StoreClient::get(const std::string &k) { return request(StoreOp::kGet, k, ""); }
int64_t StoreClient::add(const std::string &k, int64_t d) {
  return std::strtoll(request(StoreOp::kAdd, k, std::to_string(d)).c_str(), nullptr, 10);
}
bool StoreClient::check(const std::string &k) { return request(StoreOp::kCheck, k, "") == "1"; }
void StoreClient::del(const std::string &k) { request(StoreOp::kDel, k, ""); }
void StoreClient::finalize(bool wait_for_close) {
  request(StoreOp::kFinalize, "", "");
  if (!wait_for_close) return;
  // The server closes every connection after its listener when the job ends; waiting for that
  // means a re-initialised job can never reach the old store.
  auto deadline = Clock::now() + std::chrono::duration<double>(op_timeout_s_);
  char b;
  while (Clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0 && ::recv(fd_, &b, 1, 0) <= 0) break;
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace tdist
