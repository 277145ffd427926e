// The bootstrap store under hostile or mistaken peers: frame decoder limits, TLS (server
// certificate, mutual TLS, wrong CA / name / no certificate, plain <-> TLS mix-ups), the shared
// secret, watch connections, the join deadline, unauthenticated connection limits.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/frame.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tls.hpp"
#include "core/error.hpp"
#include "test_certs.hpp"

extern "C" int tdist_set_conf_store_tls(int enable, const char *tls_info);

using namespace tdist;

namespace {

StoreAddress loopback(int port, const char *host = "127.0.0.1") { return StoreAddress{false, host, port}; }

int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  return fd;
}

// Reads until EOF or `secs`; returns what arrived.
std::string drain(int fd, int secs = 2) {
  timeval tv{secs, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string s;
  char buf[4096];
  ssize_t k;
  while ((k = recv(fd, buf, sizeof buf, 0)) > 0) s.append(buf, size_t(k));
  return s;
}

std::string error_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

const tdist_test::Pki &pki() {
  static tdist_test::Pki p = [] {
    char tmpl[] = "/tmp/tdist-pki-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) throw std::runtime_error("mkdtemp");
    return tdist_test::make_pki(dir);
  }();
  return p;
}

StoreTlsConfig server_tls(bool verify_client = true) {
  StoreTlsConfig c;
  c.enable = true;
  c.ca_file = pki().ca;
  c.cert_file = pki().server_cert;
  c.key_file = pki().server_key;
  c.verify_client = verify_client;
  return c;
}

StoreTlsConfig client_tls(bool with_cert = true) {
  StoreTlsConfig c;
  c.enable = true;
  c.ca_file = pki().ca;
  if (with_cert) {
    c.cert_file = pki().client_cert;
    c.key_file = pki().client_key;
  }
  return c;
}

StoreServerOptions opts(const std::string &secret, StoreTlsConfig tls = {}) {
  StoreServerOptions o;
  o.secret = secret;
  o.tls = std::move(tls);
  return o;
}

}  // namespace

// ---------------------------------------------------------------- decoder

TEST(FrameDecoder, SplitAnywhereAndBackToBack) {
  std::string stream = encode_frame(StoreOp::kHello, "1", "s") + encode_frame(StoreOp::kSet, "k", "v") +
                       encode_frame(StoreOp::kGet, "key", "");
  for (size_t chunk : {1ul, 3ul, 16ul, 1000ul}) {
    FrameDecoder d;
    std::vector<Frame> got;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      d.append(stream.data() + i, std::min(chunk, stream.size() - i));
      Frame f;
      std::string why;
      while (d.next(&f, &why) == FrameDecoder::kFrame) got.push_back(f);
    }
    ASSERT_EQ(got.size(), 3u) << chunk;
    EXPECT_EQ(got[0].op, StoreOp::kHello);
    EXPECT_EQ(got[1].key, "k");
    EXPECT_EQ(got[1].value, "v");
    EXPECT_EQ(got[2].key, "key");
    EXPECT_EQ(d.buffered(), 0u);
  }
}

TEST(FrameDecoder, PreAuthLimitAndStickyError) {
  FrameDecoder d(kStoreMaxUnauthFrame);
  FrameHeader h{kStoreMagic, uint32_t(StoreOp::kSet), 1, 1u << 20};  // legal size, too big pre-auth
  d.append(reinterpret_cast<const char *>(&h), sizeof h);
  Frame f;
  std::string why;
  ASSERT_EQ(d.next(&f, &why), FrameDecoder::kError);
  EXPECT_NE(why.find("allowed on this connection"), std::string::npos) << why;
  std::string ok = encode_frame(StoreOp::kGet, "a", "");
  d.append(ok.data(), ok.size());
  EXPECT_EQ(d.next(&f, &why), FrameDecoder::kError);  // a failed stream stays failed
}

TEST(FrameDecoder, Parsers) {
  EXPECT_EQ(parse_rank_key("0", 4), 0);
  EXPECT_EQ(parse_rank_key("3", 4), 3);
  for (const char *bad : {"4", "-1", "01", "", " 1", "1 ", "+1", "1x", "99999999999"})
    EXPECT_EQ(parse_rank_key(bad, 4), -1) << bad;
  int64_t d = 0;
  EXPECT_TRUE(parse_add_delta("-5", &d));
  EXPECT_EQ(d, -5);
  for (const char *bad : {"", "x", "1x", " 1", "+1", "99999999999999999999999"})
    EXPECT_FALSE(parse_add_delta(bad, &d)) << bad;
  EXPECT_TRUE(secret_matches("abc", "abc"));
  EXPECT_FALSE(secret_matches("abd", "abc"));
  EXPECT_FALSE(secret_matches("ab", "abc"));
}

// ---------------------------------------------------------------- TLS configuration

TEST(StoreTlsConfig, ParsesAndNamesBadKeys) {
  auto c = parse_store_tls_info(true, "ca=/a;cert=/b, key=/c;verify_client=0;verify_host=0");
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.ca_file, "/a");
  EXPECT_EQ(c.cert_file, "/b");
  EXPECT_EQ(c.key_file, "/c");
  EXPECT_FALSE(c.verify_client);
  EXPECT_FALSE(c.verify_host);
  EXPECT_FALSE(parse_store_tls_info(false, "ca=/a").enable);
  EXPECT_NE(error_of([] { parse_store_tls_info(true, "cafile=/x"); }).find("unknown key 'cafile'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_store_tls_info(true, "verify_host=yes"); }).find("must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_store_tls_info(true, "justapath"); }).find("not key=value"),
            std::string::npos);
}

TEST(StoreTlsConfig, CApiAndEnvironment) {
  EXPECT_EQ(tdist_set_conf_store_tls(2, ""), TDIST_ERR_INVALID_PARAM);
  EXPECT_EQ(tdist_set_conf_store_tls(1, ""), TDIST_ERR_INVALID_PARAM);
  EXPECT_NE(std::string(tdist_last_error_message()).find("must name at least ca="), std::string::npos);
  EXPECT_EQ(tdist_set_conf_store_tls(1, "bogus=1"), TDIST_ERR_INVALID_PARAM);
  std::string info = "ca=" + pki().ca + ";cert=" + pki().client_cert + ";key=" + pki().client_key;
  ASSERT_EQ(tdist_set_conf_store_tls(1, info.c_str()), TDIST_SUCCESS) << tdist_last_error_message();
  setenv("TDIST_STORE_TLS", "0", 1);  // the explicit call wins over the environment
  EXPECT_TRUE(store_tls_config().enable);
  EXPECT_EQ(store_tls_config().cert_file, pki().client_cert);
  ASSERT_EQ(tdist_set_conf_store_tls(0, nullptr), TDIST_SUCCESS);
  EXPECT_FALSE(store_tls_config().enable);
  unsetenv("TDIST_STORE_TLS");
}

TEST(StoreTlsConfig, MissingFilesFailBeforeAnyNetworkWait) {
  StoreTlsConfig c = client_tls();
  c.ca_file = "/nonexistent/ca.pem";
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error_of([&] { StoreClient cl(loopback(1), 0, "", 30, 30, c); });
  EXPECT_NE(e.find("cannot read the CA file '/nonexistent/ca.pem'"), std::string::npos) << e;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  StoreTlsConfig s = server_tls();
  s.key_file = pki().client_key;  // does not match the server certificate
  e = error_of([&] { StoreServer srv(loopback(0), 1, opts("", s)); });
  EXPECT_NE(e.find("private key"), std::string::npos) << e;
  e = error_of([&] { StoreServer srv(loopback(0), 1, opts("", server_tls(/*verify_client=*/false))); });
  EXPECT_NE(e.find("needs a shared secret"), std::string::npos) << e;
}

// ---------------------------------------------------------------- TLS on the wire

TEST(StoreTls, MutualTlsJobWorks) {
  StoreServer server(loopback(0), 2, opts("", server_tls()));
  int port = server.port();
  StoreClient c0(loopback(port), 0, "", 5, 5, client_tls()), c1(loopback(port), 1, "", 5, 5, client_tls());
  std::thread t([&] { EXPECT_EQ(c1.get("k"), std::string(100000, 'x')); });
  c0.set("k", std::string(100000, 'x'));  // larger than one TLS record
  t.join();
  EXPECT_EQ(c0.add("n", 2), 2);
  EXPECT_EQ(c1.add("n", 3), 5);
  c1.finalize();
  c0.finalize();
}

TEST(StoreTls, StrangersAreRefusedAndTheJobIsUnaffected) {
  StoreServer server(loopback(0), 2, opts("", server_tls()));
  int port = server.port();
  StoreClient c0(loopback(port), 0, "", 5, 5, client_tls());
  // no client certificate
  std::string e = error_of([&] { StoreClient x(loopback(port), 1, "", 5, 5, client_tls(false)); });
  EXPECT_NE(e.find("refused the connection"), std::string::npos) << e;
  // a client certificate from a CA the server does not trust
  StoreTlsConfig rogue = client_tls();
  rogue.cert_file = pki().rogue_cert;
  rogue.key_file = pki().rogue_key;
  e = error_of([&] { StoreClient x(loopback(port), 1, "", 5, 5, rogue); });
  EXPECT_NE(e.find("refused the connection"), std::string::npos) << e;
  // a client that trusts another CA does not accept the server
  StoreTlsConfig other_ca = client_tls();
  other_ca.ca_file = pki().rogue_ca;
  e = error_of([&] { StoreClient x(loopback(port), 1, "", 5, 5, other_ca); });
  EXPECT_NE(e.find("certificate verification failed"), std::string::npos) << e;
  // plain TCP to a TLS store: the bytes are not a TLS handshake
  e = error_of([&] { StoreClient x(loopback(port), 1, "", 5, 5); });
  EXPECT_NE(e.find("refused the connection"), std::string::npos) << e;
  // raw garbage
  int fd = raw_connect(port);
  ASSERT_GT(send(fd, "GET / HTTP/1.0\r\n\r\n", 18, 0), 0);
  drain(fd);
  close(fd);
  // the job goes on: rank 1 joins and talks to rank 0
  StoreClient c1(loopback(port), 1, "", 5, 5, client_tls());
  c0.set("a", "1");
  EXPECT_EQ(c1.get("a"), "1");
  c1.finalize();
  c0.finalize();
}

TEST(StoreTls, ServerNameIsChecked) {
  StoreTlsConfig s = server_tls();
  s.cert_file = pki().wrong_name_cert;  // a valid certificate, for other.example
  s.key_file = pki().wrong_name_key;
  StoreServer server(loopback(0), 2, opts("", s));
  std::string e = error_of([&] { StoreClient x(loopback(server.port()), 0, "", 5, 5, client_tls()); });
  EXPECT_NE(e.find("certificate verification failed"), std::string::npos) << e;
  StoreTlsConfig lax = client_tls();
  lax.verify_host = false;  // the operator's explicit choice
  StoreClient c0(loopback(server.port()), 0, "", 5, 5, lax);
  c0.set("x", "y");
  c0.finalize();
  // by name: the real server certificate names localhost
  StoreServer named(loopback(0, "localhost"), 1, opts("", server_tls()));
  StoreClient c(loopback(named.port(), "localhost"), 0, "", 5, 5, client_tls());
  c.finalize();
}

TEST(StoreTls, ServerOnlyTlsWithSecret) {
  StoreServer server(loopback(0), 2, opts("s3cret", server_tls(/*verify_client=*/false)));
  int port = server.port();
  std::string e = error_of([&] { StoreClient x(loopback(port), 0, "wrong", 5, 5, client_tls(false)); });
  EXPECT_NE(e.find("authentication failed"), std::string::npos) << e;
  StoreClient c0(loopback(port), 0, "s3cret", 5, 5, client_tls(false));
  c0.set("k", "v");
  c0.finalize();
}

TEST(StoreTls, TlsClientToPlainStoreFailsClearly) {
  StoreServer server(loopback(0), 1, "");
  std::string e = error_of([&] { StoreClient x(loopback(server.port()), 0, "", 5, 5, client_tls()); });
  EXPECT_NE(e.find("TLS handshake"), std::string::npos) << e;
}

// ---------------------------------------------------------------- watch, deadlines, limits

TEST(StoreWatch, WatcherHearsOfALostRankAtOnce) {
  StoreServer server(loopback(0), 3, "");
  int port = server.port();
  StoreClient c0(loopback(port), 0, "", 5, 5), c1(loopback(port), 1, "", 5, 5);
  StoreClient w0(loopback(port), 0, "", 5, 5, {}, StoreClient::Role::kWatcher);
  // a second watcher for the same rank is refused; a watcher sends no requests
  EXPECT_NE(error_of([&] {
              StoreClient w(loopback(port), 0, "", 5, 5, {}, StoreClient::Role::kWatcher);
            }).find("watchdog joined twice"),
            std::string::npos);
  {
    StoreClient w2(loopback(port), 2, "", 5, 5, {}, StoreClient::Role::kWatcher);
    EXPECT_NE(error_of([&] { w2.set("k", "v"); }).find("sends no requests"), std::string::npos);
  }  // and its connection closing is no loss
  c0.set("still", "fine");
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  int lost = -2;
  std::string msg;
  auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { EXPECT_TRUE(w0.wait_for_failure(pipefd[0], &lost, &msg)); });
  {
    StoreClient c2(loopback(port), 2, "", 5, 5);
  }  // rank 2 leaves without finalize
  t.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(lost, 2);
  EXPECT_NE(msg.find("rank 2 lost"), std::string::npos) << msg;
  // a watcher that joins after the failure hears of it at once
  StoreClient w1(loopback(port), 1, "", 5, 5, {}, StoreClient::Role::kWatcher);
  EXPECT_TRUE(w1.wait_for_failure(pipefd[0], &lost, &msg));
  EXPECT_EQ(lost, 2);
  // stop: the watcher returns false
  ASSERT_EQ(write(pipefd[1], "x", 1), 1);
  close(pipefd[0]);
  close(pipefd[1]);
}

TEST(StoreWatch, StoreGoneIsRankZeroLost) {
  int lost = -2;
  std::string msg;
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  auto server = std::make_unique<StoreServer>(loopback(0), 2, "");
  int port = server->port();
  StoreClient w1(loopback(port), 1, "", 5, 5, {}, StoreClient::Role::kWatcher);
  std::thread t([&] { EXPECT_TRUE(w1.wait_for_failure(pipefd[0], &lost, &msg)); });
  server.reset();  // nobody joined as a rank: the server goes at once
  t.join();
  EXPECT_EQ(lost, 0);
  EXPECT_NE(msg.find("rank 0 lost"), std::string::npos) << msg;
  close(pipefd[0]);
  close(pipefd[1]);
}

TEST(StoreDeadlines, RankThatNeverJoinsIsNamed) {
  StoreServerOptions o;
  o.join_timeout_s = 0.5;
  StoreServer server(loopback(0), 3, o);
  StoreClient c0(loopback(server.port()), 0, "", 5, 10);
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error_of([&] { c0.get("never"); });
  EXPECT_NE(e.find("rank(s) 1, 2 did not join the store within"), std::string::npos) << e;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
}

TEST(StoreDeadlines, SilentStrangersAreDropped) {
  StoreServerOptions o;
  o.hello_timeout_s = 0.3;
  StoreServer server(loopback(0), 1, o);
  int fd = raw_connect(server.port());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(drain(fd, 5), "");  // EOF, no reply
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 2.0);
  EXPECT_GT(s, 0.2);
  close(fd);
}

TEST(StoreLimits, OversizeFrameBeforeHelloIsRejected) {
  StoreServer server(loopback(0), 1, "");
  int fd = raw_connect(server.port());
  FrameHeader h{kStoreMagic, uint32_t(StoreOp::kHello), 1, 1u << 20};  // 1 MiB "secret"
  ASSERT_EQ(send(fd, &h, sizeof h, 0), ssize_t(sizeof h));
  EXPECT_NE(drain(fd).find("allowed on this connection"), std::string::npos);
  close(fd);
}

TEST(StoreLimits, FloodOfStrangersCannotLockOutRanks) {
  StoreServer server(loopback(0), 2, "sec");
  int port = server.port();
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) fds.push_back(raw_connect(port));
  StoreClient c0(loopback(port), 0, "sec", 5, 5), c1(loopback(port), 1, "sec", 5, 5);
  c0.set("k", "v");
  EXPECT_EQ(c1.get("k"), "v");
  for (int fd : fds) close(fd);
  c0.finalize();
  c1.finalize();
}

TEST(StoreLimits, AddRejectsOverflowAndNonNumbers) {
  StoreServer server(loopback(0), 1, "");
  StoreClient c(loopback(server.port()), 0, "", 5, 5);
  c.set("text", "hello");
  EXPECT_NE(error_of([&] { c.add("text", 1); }).find("does not hold a number"), std::string::npos);
  c.set("big", "9223372036854775807");
  EXPECT_NE(error_of([&] { c.add("big", 1); }).find("overflows int64"), std::string::npos);
  EXPECT_EQ(c.add("big", -7), 9223372036854775800);
}
