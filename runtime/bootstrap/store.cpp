#include "bootstrap/store.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "bootstrap/store_state.hpp"
#include "core/error.hpp"

namespace tdist {

using Clock = std::chrono::steady_clock;

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
    TDIST_CHECK(!rest.empty() && rest[0] == '[' && close != std::string::npos && close + 1 < rest.size() &&
                    rest[close + 1] == ':',
                TDIST_ERR_INVALID_PARAM, "bad store address '%s': expected tcp6://[host]:port", url.c_str());
    a.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 2);
  } else {
    TDIST_THROW(TDIST_ERR_INVALID_PARAM, "bad store address '%s': must start with tcp:// or tcp6://",
                url.c_str());
  }
  char *end = nullptr;
  long port = std::strtol(rest.c_str(), &end, 10);
  TDIST_CHECK(!rest.empty() && end && *end == '\0' && port >= 0 && port <= 65535, TDIST_ERR_INVALID_PARAM,
              "bad port '%s' in store address '%s'", rest.c_str(), url.c_str());
  a.port = int(port);
  return a;
}

namespace {

constexpr int kServerSendTimeoutMs = 5000;  // a client that stops reading cannot stall the server

// Resolves host:port; throws BOOTSTRAP on failure.
std::vector<sockaddr_storage> resolve(const StoreAddress &a, bool passive, socklen_t *len) {
  addrinfo hints{};
  hints.ai_family = a.ipv6 ? AF_INET6 : AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo *res = nullptr;
  std::string port = std::to_string(a.port);
  int rc = getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), port.c_str(), &hints, &res);
  TDIST_CHECK(rc == 0 && res, TDIST_ERR_BOOTSTRAP, "cannot resolve store host '%s': %s", a.host.c_str(),
              gai_strerror(rc));
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

bool is_loopback(const StoreAddress &a) {
  return a.host == "localhost" || a.host.rfind("127.", 0) == 0 || a.host == "::1";
}

}  // namespace

// ---------------------------------------------------------------- server

struct StoreServer::Impl {
  int listen_fd = -1;
  int wake_pipe[2] = {-1, -1};
  int n_ranks = 0;
  StoreServerOptions opts;
  std::shared_ptr<TlsContext> tls;
  std::thread thread;
  std::atomic<bool> stop{false};
  Clock::time_point started = Clock::now();

  struct Conn {
    Channel ch;
    Clock::time_point accepted = Clock::now();
    FrameDecoder dec{kStoreMaxUnauthFrame};
  };
  std::map<int, std::unique_ptr<Conn>> conns;  // by fd
  std::unique_ptr<StoreState> state;           // the request handling (store_state.hpp)

  // Unauthenticated connections allowed at once; beyond that the oldest is dropped, so a flood
  // of strangers can neither exhaust descriptors nor lock out a rank that is about to HELLO.
  size_t max_unauthenticated() const { return size_t(n_ranks + 64); }

  // Best effort: a connection whose send fails is shut down, so poll() reports it and it is
  // dropped in the next round (never dropped here, while callers iterate).
  void send(int fd, StoreOp op, const std::string &key, const std::string &val) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    std::string f = encode_frame(op, key, val);
    if (!it->second->ch.write_all(f.data(), f.size(), kServerSendTimeoutMs)) ::shutdown(fd, SHUT_RDWR);
  }

  void drop(int fd, const std::string &why) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    std::unique_ptr<Conn> c = std::move(it->second);
    conns.erase(it);
    c->ch.close();
    state->close(fd, why, stop.load());
  }

  void on_event(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn &c = *it->second;
    if (c.ch.handshaking()) {
      std::string why;
      int rc = c.ch.handshake_step(&why);
      if (rc < 0) return drop(fd, "TLS handshake failed: " + why);
      if (rc == 0) return;
    }
    char buf[65536];
    while (true) {  // drain: under TLS, poll() cannot see bytes already decrypted
      ssize_t k = c.ch.read_some(buf, sizeof buf);
      if (k == 0) return drop(fd, "connection closed");
      if (k == -2) return drop(fd, "connection error: " + c.ch.last_error());
      if (k < 0) break;
      c.dec.append(buf, size_t(k));
      Frame f;
      std::string why;
      while (true) {
        auto r = c.dec.next(&f, &why);
        if (r == FrameDecoder::kNeedMore) break;
        if (r == FrameDecoder::kError) {
          send(fd, StoreOp::kReplyError, "", "protocol error: " + why);
          return drop(fd, "protocol error: " + why);
        }
        const bool was_authenticated = state->authenticated(fd);
        if (!state->handle(fd, f, now_ms())) return drop(fd, "rejected");
        if (!was_authenticated && state->authenticated(fd))
          c.dec.set_max_payload(kStoreMaxKey + kStoreMaxValue);
      }
    }
  }

  uint64_t now_ms() const {
    return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  }

  void housekeeping() {
    auto now = Clock::now();
    // A rank whose watchdog went silent is stopped or frozen: name it, and let go of it (its
    // connections would otherwise hold the job's end until their timeouts).
    for (int r : state->overdue(now_ms())) {
      state->fail_all(strfmt("rank %d lost: no heartbeat from it for %.1f s (stopped, frozen, or its host is "
                             "unreachable)",
                             r, double(opts.heartbeat_timeout_ms) / 1000),
                      r);
      for (int fd : state->conns_of(r)) drop(fd, "no heartbeat");
    }
    std::vector<int> stale;
    for (auto &[fd, c] : conns)
      if (!state->authenticated(fd) &&
          now - c->accepted > std::chrono::duration<double>(opts.hello_timeout_s))
        stale.push_back(fd);
    for (int fd : stale) drop(fd, "no HELLO in time");
    if (opts.join_timeout_s > 0 && !state->failed() &&
        now - started > std::chrono::duration<double>(opts.join_timeout_s)) {
      std::vector<int> missing_ranks = state->missing_ranks();
      std::string missing;
      for (int r : missing_ranks) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      if (!missing_ranks.empty())
        state->fail_all(strfmt("rank %d lost: rank(s) %s did not join the store within %.0f s",
                               missing_ranks[0], missing.c_str(), opts.join_timeout_s),
                        missing_ranks[0]);
    }
  }

  void accept_one() {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    size_t unauth = 0;
    int oldest = -1;
    for (auto &[cfd, c] : conns)
      if (!state->authenticated(cfd)) {
        ++unauth;
        if (oldest < 0 || c->accepted < conns[oldest]->accepted) oldest = cfd;
      }
    if (unauth >= max_unauthenticated() && oldest >= 0) drop(oldest, "too many unauthenticated connections");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A peer host that vanishes without closing is noticed in about 10 + 3 * 5 s.
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = 10, intvl = 5, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    auto c = std::make_unique<Conn>();
    c->ch = Channel(fd);
    if (tls) {
      try {
        c->ch.start_tls_server(tls);
      } catch (const std::exception &) {
        return;  // c closes fd
      }
    }
    conns.emplace(fd, std::move(c));
    state->open(fd);
  }

  void loop() {
    std::vector<pollfd> pfds;
    while (!stop.load()) {
      pfds.clear();
      pfds.push_back({listen_fd, POLLIN, 0});
      pfds.push_back({wake_pipe[0], POLLIN, 0});
      for (auto &[fd, c] : conns) pfds.push_back({fd, short(POLLIN | (c->ch.want_write() ? POLLOUT : 0)), 0});
      int rc = ::poll(pfds.data(), pfds.size(), 200);
      if (rc < 0 && errno != EINTR) break;
      if (rc > 0) {
        if (pfds[0].revents & POLLIN) accept_one();
        for (size_t i = 2; i < pfds.size(); ++i)
          if (pfds[i].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR)) on_event(pfds[i].fd);
      }
      housekeeping();
    }
  }
};

StoreServer::StoreServer(const StoreAddress &addr, int n_ranks, StoreServerOptions opts)
    : impl_(std::make_unique<Impl>()) {
  TDIST_CHECK(n_ranks >= 1, TDIST_ERR_INVALID_PARAM, "store: n_ranks must be >= 1 (got %d)", n_ranks);
  impl_->n_ranks = n_ranks;
  impl_->opts = std::move(opts);
  impl_->state =
      std::make_unique<StoreState>(n_ranks, impl_->opts.secret,
                                   [impl = impl_.get()](int fd, StoreOp op, const std::string &k,
                                                        const std::string &v) { impl->send(fd, op, k, v); });
  impl_->state->set_heartbeat_timeout_ms(impl_->opts.heartbeat_timeout_ms);
  if (impl_->opts.tls.enable)
    impl_->tls = make_tls_server_context(impl_->opts.tls, !impl_->opts.secret.empty());
  else if (impl_->opts.secret.empty() && !is_loopback(addr))
    std::fprintf(stderr,
                 "tdist: warning: the bootstrap store listens on %s:%d with neither TLS nor a "
                 "shared secret: anyone who reaches the port can join the job (set "
                 "TDIST_STORE_SECRET or enable TLS)\n",
                 addr.host.c_str(), addr.port);
  socklen_t len = 0;
  auto addrs = resolve(addr, true, &len);
  int fd = ::socket(addr.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  TDIST_CHECK(fd >= 0, TDIST_ERR_BOOTSTRAP, "store: socket(): %s", std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (addr.ipv6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);  // only where told
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addrs[0]), len) != 0 || ::listen(fd, 1024) != 0) {
    int e = errno;
    ::close(fd);
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "store: cannot listen on %s%s%s:%d: %s", addr.ipv6 ? "[" : "",
                addr.host.c_str(), addr.ipv6 ? "]" : "", addr.port, std::strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &blen);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  impl_->listen_fd = fd;
  if (::pipe2(impl_->wake_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(fd);
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "store: pipe: %s", std::strerror(e));
  }
  impl_->thread = std::thread([this] { impl_->loop(); });
}

StoreServer::~StoreServer() {
  // Wait (bounded) until every rank that joined has finalized or gone, so late FINALIZE or
  // barrier messages of other ranks are still answered.
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline && !impl_->state->all_done())
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  impl_->stop.store(true);
  if (impl_->wake_pipe[1] >= 0) (void)!::write(impl_->wake_pipe[1], "x", 1);
  if (impl_->thread.joinable()) impl_->thread.join();
  // Listener first: once a client sees its connection close, a new job may bind the same port.
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  impl_->conns.clear();  // closes every connection
  for (int f : impl_->wake_pipe)
    if (f >= 0) ::close(f);
}

// ---------------------------------------------------------------- client

StoreClient::StoreClient(const StoreAddress &addr, int rank, const std::string &secret,
                         double connect_timeout_s, double op_timeout_s, const StoreTlsConfig &tls, Role role)
    : rank_(rank), op_timeout_s_(op_timeout_s) {
  // Configuration errors (missing files) surface before any network wait.
  std::shared_ptr<TlsContext> tctx = tls.enable ? make_tls_client_context(tls) : nullptr;
  auto deadline = Clock::now() + std::chrono::duration<double>(connect_timeout_s);
  socklen_t len = 0;
  std::string last_err;
  int delay_ms = 5;
  while (true) {
    auto addrs = resolve(addr, false, &len);
    int fd = ::socket(addr.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    TDIST_CHECK(fd >= 0, TDIST_ERR_BOOTSTRAP, "store: socket(): %s", std::strerror(errno));
    int rc = ::connect(fd, reinterpret_cast<sockaddr *>(&addrs[0]), len);
    if (rc != 0 && errno == EINPROGRESS) {
      // A silent host must not hold us past the deadline (a blocking connect could).
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd, POLLOUT, 0};
      int err = ETIMEDOUT;
      socklen_t el = sizeof err;
      if (::poll(&p, 1, int(std::clamp<long long>(left, 1, 5000))) == 1)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ch_ = Channel(fd);
      break;
    }
    last_err = std::strerror(errno);
    ::close(fd);
    if (Clock::now() > deadline)
      TDIST_THROW(TDIST_ERR_BOOTSTRAP,
                  "rank 0 lost: rank %d cannot reach the store rank 0 hosts at %s:%d within %.0f s "
                  "(last error: %s; did rank 0 start?)",
                  rank, addr.host.c_str(), addr.port, connect_timeout_s, last_err.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 200);
  }
  if (tctx) {
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    ch_.connect_tls(tctx, addr.host, std::max(left, 5.0));
  }
  std::string r =
      request(role == Role::kWatcher ? StoreOp::kWatch : StoreOp::kHello, std::to_string(rank), secret);
  joined_ = true;
  int64_t hb = 0;
  if (role == Role::kWatcher && parse_add_delta(r, &hb) && hb > 0) heartbeat_ms_ = uint64_t(hb);
}

StoreClient::~StoreClient() = default;

Frame StoreClient::read_frame(double timeout_s, const std::string &what) {
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  Frame f;
  std::string why;
  while (true) {
    auto r = dec_.next(&f, &why);
    if (r == FrameDecoder::kFrame) return f;
    if (r == FrameDecoder::kError) {
      ch_.close();
      TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: bad reply from store: %s", rank_, why.c_str());
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      // A late reply would be misread as the answer to the next request: the connection is
      // unusable from here on.
      ch_.close();
      TDIST_THROW(TDIST_ERR_TIMEOUT, "rank %d: store request for key '%s' timed out after %.0f s", rank_,
                  what.c_str(), timeout_s);
    }
    if (store_lost_ && store_lost_->load()) {
      ch_.close();
      job_failed_ = true;
      TDIST_THROW(TDIST_ERR_BOOTSTRAP,
                  "rank %d: rank 0 lost: the store it hosts stopped answering (no heartbeat reply) while "
                  "waiting for key '%s'",
                  rank_, what.c_str());
    }
    if (!ch_.buffered()) {
      pollfd p{ch_.fd(), POLLIN, 0};
      int rc = ::poll(&p, 1, int(std::min<long long>(left, store_lost_ ? 100 : 1000)));
      if (rc < 0 && errno != EINTR)
        TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: poll on store: %s", rank_, std::strerror(errno));
      if (rc <= 0) continue;
    }
    char buf[65536];
    ssize_t k = ch_.read_some(buf, sizeof buf);
    if (k == 0 || k == -2) {
      std::string e = k == 0 ? "connection closed" : ch_.last_error();
      ch_.close();
      // Before the store accepted us, a closed connection is a refusal (TLS certificate, a
      // stranger's port), not a lost rank 0.
      TDIST_CHECK(joined_, TDIST_ERR_BOOTSTRAP,
                  "rank %d: the store refused the connection before HELLO completed (%s)", rank_, e.c_str());
      job_failed_ = true;
      TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: the store (rank 0) went away (%s): rank 0 lost", rank_,
                  e.c_str());
    }
    if (k > 0) dec_.append(buf, size_t(k));
  }
}

std::string StoreClient::request(StoreOp op, const std::string &key, const std::string &value) {
  TDIST_CHECK(ch_.fd() >= 0, TDIST_ERR_BOOTSTRAP, "rank %d: store connection is closed", rank_);
  TDIST_CHECK(key.size() <= kStoreMaxKey && value.size() <= kStoreMaxValue, TDIST_ERR_INVALID_PARAM,
              "store request too large (key %zu bytes, value %zu bytes)", key.size(), value.size());
  std::string f = encode_frame(op, key, value);
  if (!ch_.write_all(f.data(), f.size(), int(op_timeout_s_ * 1000))) {
    std::string e = ch_.last_error();
    if (!joined_) {
      // Refused before HELLO completed (e.g. our TLS certificate): a TLS alert may say why.
      char b[256];
      if (ch_.read_some(b, sizeof b) == -2 && !ch_.last_error().empty()) e += "; " + ch_.last_error();
      ch_.close();
      TDIST_THROW(TDIST_ERR_BOOTSTRAP,
                  "rank %d: the store refused the connection before HELLO completed (%s)", rank_, e.c_str());
    }
    job_failed_ = true;
    ch_.close();
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: lost the store connection (%s): rank 0 lost", rank_,
                e.c_str());
  }
  Frame r = read_frame(op_timeout_s_, key);
  if (r.op == StoreOp::kReplyError) {
    if (op != StoreOp::kHello && op != StoreOp::kWatch) job_failed_ = true;
    TDIST_THROW(TDIST_ERR_BOOTSTRAP, "rank %d: store refused '%s': %s", rank_, key.c_str(), r.value.c_str());
  }
  TDIST_CHECK(r.op == StoreOp::kReplyOk, TDIST_ERR_BOOTSTRAP, "rank %d: unexpected reply op %u from store",
              rank_, unsigned(r.op));
  return std::move(r.value);
}

void StoreClient::set(const std::string &k, const std::string &v) { request(StoreOp::kSet, k, v); }
std::string StoreClient::get(const std::string &k) { return request(StoreOp::kGet, k, ""); }
int64_t StoreClient::add(const std::string &k, int64_t d) {
  int64_t v = 0;
  std::string r = request(StoreOp::kAdd, k, std::to_string(d));
  TDIST_CHECK(parse_add_delta(r, &v), TDIST_ERR_BOOTSTRAP, "rank %d: store sent a non-number '%.32s'", rank_,
              r.c_str());
  return v;
}
bool StoreClient::check(const std::string &k) { return request(StoreOp::kCheck, k, "") == "1"; }
void StoreClient::del(const std::string &k) { request(StoreOp::kDel, k, ""); }

void StoreClient::finalize(bool wait_for_close) {
  request(StoreOp::kFinalize, "", "");
  if (wait_for_close && !job_failed_) {
    // The server closes every connection after its listener when the job ends; waiting for that
    // means a re-initialised job can never reach the old store.
    auto deadline = Clock::now() + std::chrono::duration<double>(op_timeout_s_);
    char b[256];
    while (Clock::now() < deadline) {
      pollfd p{ch_.fd(), POLLIN, 0};
      if (!ch_.buffered() && ::poll(&p, 1, 100) <= 0) continue;
      ssize_t k = ch_.read_some(b, sizeof b);
      if (k == 0 || k == -2) break;
    }
  }
  ch_.close();
}

bool StoreClient::wait_for_failure(int stop_fd, int *lost_rank, std::string *message) {
  Frame f;
  std::string why;
  char buf[65536];
  const auto beat_every = std::chrono::milliseconds(std::clamp<uint64_t>(heartbeat_ms_ / 4, 50, 2000));
  auto heard = Clock::now(), next_beat = Clock::now() + beat_every;
  auto store_gone = [&](const std::string &m) {
    *lost_rank = 0;
    *message = m;
    job_failed_ = true;
    if (store_lost_) store_lost_->store(true);
    return true;
  };
  while (true) {
    auto r = dec_.next(&f, &why);
    if (r == FrameDecoder::kFrame) {
      heard = Clock::now();
      if (f.op != StoreOp::kReplyError) continue;  // a heartbeat's answer
      *lost_rank = -1;
      int64_t v;
      if (parse_add_delta(f.key, &v) && v >= 0 && v < (int64_t(1) << 30)) *lost_rank = int(v);
      *message = f.value;
      job_failed_ = true;
      return true;
    }
    if (r == FrameDecoder::kError)
      return store_gone("rank 0 lost: the store it hosts sent a bad frame (" + why + ")");
    const auto now = Clock::now();
    if (heartbeat_ms_ > 0) {
      if (now - heard > std::chrono::milliseconds(heartbeat_ms_))
        return store_gone(
            strfmt("rank 0 lost: the store it hosts has not answered for %.1f s (rank 0 stopped, "
                   "frozen, or its host is unreachable)",
                   double(heartbeat_ms_) / 1000));
      if (now >= next_beat) {
        std::string hb = encode_frame(StoreOp::kHeartbeat, "", "");
        if (!ch_.write_all(hb.data(), hb.size(), int(std::min<uint64_t>(heartbeat_ms_, 5000))))
          return store_gone("rank 0 lost: the store connection failed (" + ch_.last_error() + ")");
        next_beat = now + beat_every;
      }
    }
    if (!ch_.buffered()) {
      pollfd p[2] = {{ch_.fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
      int wait_ms = heartbeat_ms_ > 0
                        ? int(std::chrono::duration_cast<std::chrono::milliseconds>(beat_every).count())
                        : 1000;
      int rc = ::poll(p, 2, wait_ms);
      if (rc < 0 && errno != EINTR) {
        *lost_rank = -1;
        *message = strfmt("watchdog poll failed: %s", std::strerror(errno));
        return true;
      }
      if (p[1].revents) return false;
      if (rc <= 0 || !p[0].revents) continue;
    }
    ssize_t k = ch_.read_some(buf, sizeof buf);
    if (k == 0 || k == -2)
      return store_gone(k == 0 ? "rank 0 lost: the store it hosted closed the connection"
                               : "rank 0 lost: the store connection failed (" + ch_.last_error() + ")");
    if (k > 0) dec_.append(buf, size_t(k));
  }
}

}  // namespace tdist
