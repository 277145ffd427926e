// The bootstrap store in one process: protocol checks and hostile clients.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "bootstrap/store.hpp"
#include "bootstrap/store_state.hpp"
#include "core/error.hpp"

using namespace tdist;

namespace {

StoreAddress loopback(int port) { return StoreAddress{false, "127.0.0.1", port}; }

int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  return fd;
}

// Reads until EOF or 1 s; returns what arrived.
std::string drain(int fd) {
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string s;
  char buf[4096];
  ssize_t k;
  while ((k = recv(fd, buf, sizeof buf, 0)) > 0) s.append(buf, size_t(k));
  return s;
}

}  // namespace

TEST(StoreAddress, Parses) {
  auto a = parse_store_address("tcp://127.0.0.1:8666");
  EXPECT_FALSE(a.ipv6);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8666);
  auto b = parse_store_address("tcp6://[::1]:9000");
  EXPECT_TRUE(b.ipv6);
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 9000);
  for (const char *bad : {"udp://1.2.3.4:5", "tcp://host", "tcp://host:99999", "tcp6://::1:80", "tcp://:80x",
                          "", "tcp6://[::1]"}) {
    try {
      parse_store_address(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error &e) {
      EXPECT_EQ(e.code(), TDIST_ERR_INVALID_PARAM) << bad;
    }
  }
}

TEST(StoreProtocol, HeaderValidation) {
  EXPECT_EQ(validate_frame_header({kStoreMagic, 2, 10, 10}), "");
  EXPECT_NE(validate_frame_header({0xdeadbeef, 2, 0, 0}).find("magic"), std::string::npos);
  EXPECT_NE(validate_frame_header({kStoreMagic, 2, kStoreMaxKey + 1, 0}).find("key length"),
            std::string::npos);
  EXPECT_NE(validate_frame_header({kStoreMagic, 2, 0, kStoreMaxValue + 1}).find("value length"),
            std::string::npos);
  EXPECT_NE(validate_frame_header({kStoreMagic, 55, 0, 0}).find("unknown op"), std::string::npos);
}

TEST(Store, SetGetAddAcrossClients) {
  StoreServer server(loopback(0), 2, "s3cret");
  int port = server.port();
  StoreClient c0(loopback(port), 0, "s3cret", 5, 5), c1(loopback(port), 1, "s3cret", 5, 5);
  std::thread t([&] { EXPECT_EQ(c1.get("k"), "value"); });  // blocks until c0 sets it
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c0.set("k", "value");
  t.join();
  EXPECT_EQ(c0.add("n", 3), 3);
  EXPECT_EQ(c1.add("n", 4), 7);
  EXPECT_TRUE(c1.check("k"));
  c1.del("k");
  EXPECT_FALSE(c0.check("k"));
  c0.finalize();
  c1.finalize();
}

TEST(Store, GetTimesOutWithKeyName) {
  StoreServer server(loopback(0), 1, "");
  StoreClient c(loopback(server.port()), 0, "", 5, 0.2);
  try {
    c.get("never-set");
    ADD_FAILURE() << "get returned";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), TDIST_ERR_TIMEOUT);
    EXPECT_NE(std::string(e.what()).find("never-set"), std::string::npos);
  }
}

TEST(Store, ForeignClientsCannotJoinOrBreakIt) {
  StoreServer server(loopback(0), 2, "right");
  int port = server.port();
  // wrong secret
  try {
    StoreClient bad(loopback(port), 0, "wrong", 5, 5);
    ADD_FAILURE() << "joined with a wrong secret";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  // garbage bytes
  {
    int fd = raw_connect(port);
    const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_GT(send(fd, junk, sizeof junk, 0), 0);
    std::string reply = drain(fd);
    EXPECT_NE(reply.find("protocol error"), std::string::npos);
    close(fd);
  }
  // oversize length: rejected from the header, before any allocation
  {
    int fd = raw_connect(port);
    FrameHeader h{kStoreMagic, uint32_t(StoreOp::kSet), 16, 0xFFFFFFF0u};
    ASSERT_EQ(send(fd, &h, sizeof h, 0), ssize_t(sizeof h));
    EXPECT_NE(drain(fd).find("value length"), std::string::npos);
    close(fd);
  }
  // request before HELLO, and early disconnect mid-frame
  {
    int fd = raw_connect(port);
    FrameHeader h{kStoreMagic, uint32_t(StoreOp::kGet), 1, 0};
    send(fd, &h, sizeof h, 0);
    send(fd, "k", 1, 0);
    EXPECT_NE(drain(fd).find("first message must be HELLO"), std::string::npos);
    close(fd);
    int fd2 = raw_connect(port);
    send(fd2, &h, 8, 0);  // half a header, then gone
    close(fd2);
  }
  // rank out of range
  try {
    StoreClient bad(loopback(port), 7, "right", 5, 5);
    ADD_FAILURE();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
  }
  // the real job is unaffected
  StoreClient c0(loopback(port), 0, "right", 5, 5), c1(loopback(port), 1, "right", 5, 5);
  c0.set("a", "1");
  EXPECT_EQ(c1.get("a"), "1");
  // a second rank 0 is refused
  try {
    StoreClient dup(loopback(port), 0, "right", 5, 5);
    ADD_FAILURE();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("joined twice"), std::string::npos);
  }
  c0.finalize();
  c1.finalize();
}

TEST(Store, LostRankFailsEveryoneWithItsName) {
  StoreServer server(loopback(0), 3, "");
  int port = server.port();
  StoreClient c0(loopback(port), 0, "", 5, 5);
  std::string err;
  std::thread waiter([&] {
    try {
      c0.get("never");
    } catch (const Error &e) {
      err = e.what();
    }
  });
  {
    StoreClient c2(loopback(port), 2, "", 5, 5);
  }  // rank 2 disconnects without finalize
  waiter.join();
  EXPECT_NE(err.find("rank 2 lost"), std::string::npos) << err;
  try {
    c0.set("x", "y");
    ADD_FAILURE();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 lost"), std::string::npos);
  }
}

TEST(StoreRounds, ParseRoundKey) {
  uint64_t s = 99;
  EXPECT_TRUE(parse_round_key("bar/0", &s) && s == 0);
  EXPECT_TRUE(parse_round_key("bar/12/go", &s) && s == 12);
  EXPECT_TRUE(parse_round_key("ag/7/3", &s) && s == 7);
  EXPECT_TRUE(parse_round_key("bc/18446744073709551615", &s) && s == UINT64_MAX);
  for (const char *no : {"job_id", "bar", "bar/", "bar/x", "bar/01", "bar/1x", "ba/1",
                         "bar/18446744073709551616", "/1", "xbar/1", "ag//1"})
    EXPECT_FALSE(parse_round_key(no, &s)) << no;
}

// The store forgets a round's keys once every rank has moved past it: memory stays flat however
// many barriers and all-gathers run (the request handling alone, no sockets).
TEST(StoreRounds, KeysOfFinishedRoundsAreDeleted) {
  std::vector<std::tuple<int, StoreOp, std::string, std::string>> sent;
  StoreState st(2, "s", [&](int c, StoreOp op, const std::string &k, const std::string &v) {
    sent.emplace_back(c, op, k, v);
  });
  auto req = [&](int conn, StoreOp op, std::string key, std::string val = "") {
    Frame f{op, std::move(key), std::move(val)};
    EXPECT_TRUE(st.handle(conn, f));
  };
  st.open(10);
  st.open(11);
  req(10, StoreOp::kHello, "0", "s");
  req(11, StoreOp::kHello, "1", "s");
  req(10, StoreOp::kSet, "job_id", "abc");  // not a round: kept
  size_t most = 0;
  for (uint64_t seq = 0; seq < 3000; seq += 2) {
    std::string bar = "bar/" + std::to_string(seq);
    req(10, StoreOp::kAdd, bar, "1");
    req(11, StoreOp::kAdd, bar, "1");
    req(11, StoreOp::kSet, bar + "/go", "1");
    req(10, StoreOp::kGet, bar + "/go");
    req(11, StoreOp::kGet, bar + "/go");
    std::string ag = "ag/" + std::to_string(seq + 1) + "/";
    req(11, StoreOp::kGet, ag + "0");  // waits: rank 0 has not contributed yet
    req(10, StoreOp::kSet, ag + "0", std::string(200, 'x'));
    req(10, StoreOp::kSet, ag + "1", std::string(200, 'y'));
    req(10, StoreOp::kGet, ag + "1");
    most = std::max(most, st.keys());
  }
  EXPECT_LE(most, 8u);  // the current round and the one before, plus job_id
  EXPECT_EQ(st.waiting(), 0u);
  // every GET was answered with the value set (the waiter too)
  size_t replies = 0;
  for (auto &[c, op, k, v] : sent) replies += op == StoreOp::kReplyOk;
  EXPECT_EQ(replies, 2 + 1 + 1500 * 9);
  req(10, StoreOp::kFinalize, "");
  req(11, StoreOp::kFinalize, "");
  EXPECT_EQ(st.keys(), 1u);  // job_id
  EXPECT_EQ(st.rounds_held(), 0u);
  EXPECT_TRUE(st.all_done());
}

TEST(StoreRounds, ParseTeamRoundKey) {
  TeamRoundKey k;
  EXPECT_TRUE(parse_team_round_key("tm/3.1.2.4/0", &k));
  EXPECT_EQ(k.team, "3.1.2.4");
  EXPECT_EQ(k.start, 1u);
  EXPECT_EQ(k.stride, 2u);
  EXPECT_EQ(k.size, 4u);
  EXPECT_EQ(k.seq, 0u);
  EXPECT_TRUE(parse_team_round_key("tm/0.0.1.8/17/ag/3", &k) && k.seq == 17 && k.team == "0.0.1.8");
  EXPECT_TRUE(parse_team_round_key("tm/1.0.2.2/18446744073709551615/go", &k) && k.seq == UINT64_MAX);
  for (const char *no : {"tm", "tm/", "tm/1.0.2.2", "tm/1.0.2.2/", "tm/1.0.2/3", "tm/1.0.0.2/3",
                         "tm/1.0.2.0/3", "tm/01.0.2.2/3", "tm/1.0.2.2/03", "tm/1.0.2.2/3x", "tm/1..2.2/3",
                         "tm/1.0.2.2.5/3", "xtm/1.0.2.2/3", "bar/1", "tm/1.0.2.2/99999999999999999999"})
    EXPECT_FALSE(parse_team_round_key(no, &k)) << no;
  uint64_t s = 0;
  EXPECT_FALSE(parse_round_key("tm/1.0.2.2/3", &s));  // a team's rounds are not the world's
}

// Two teams that share no rank ({0, 2} and {1, 3}) run different numbers of rounds at once; each
// team's keys go once its own members are past them, whatever the other team does; a rank outside
// a team that names one of its keys moves nothing; finalize leaves no team round held.
TEST(StoreRounds, TeamKeysOfFinishedRoundsAreDeleted) {
  StoreState st(4, "", [](int, StoreOp, const std::string &, const std::string &) {});
  auto req = [&](int rank, StoreOp op, std::string key, std::string val = "") {
    Frame f{op, std::move(key), std::move(val)};
    EXPECT_TRUE(st.handle(10 + rank, f));
  };
  for (int r = 0; r < 4; ++r) {
    st.open(10 + r);
    req(r, StoreOp::kHello, std::to_string(r));
  }
  size_t most = 0;
  const std::string even = "tm/1.0.2.2/", odd = "tm/1.1.2.2/";
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    // the even team: an all-gather each round
    const std::string e = even + std::to_string(seq) + "/ag/";
    req(0, StoreOp::kSet, e + "0", "a");
    req(2, StoreOp::kSet, e + "1", "b");
    req(0, StoreOp::kGet, e + "1");
    req(2, StoreOp::kGet, e + "0");
    // the odd team: three barriers per round of the even team
    for (uint64_t k = 0; k < 3; ++k) {
      const std::string b = odd + std::to_string(seq * 3 + k) + "/b/0";
      req(1, StoreOp::kAdd, b, "1");
      req(3, StoreOp::kAdd, b, "2");
      req(3, StoreOp::kSet, odd + std::to_string(seq * 3 + k) + "/go", "1");
      req(1, StoreOp::kGet, odd + std::to_string(seq * 3 + k) + "/go");
    }
    most = std::max(most, st.keys());
  }
  EXPECT_LE(most, 8u);  // each team's current round and the one before
  const size_t held = st.team_rounds_held();
  EXPECT_EQ(held, 2u);  // each team's last round
  // rank 1 is not in the even team: naming a later round of it moves nothing
  req(1, StoreOp::kCheck, even + "5000/ag/0");
  req(0, StoreOp::kGet, even + "999/ag/1");  // still there for a late reader
  EXPECT_EQ(st.team_rounds_held(), held);
  EXPECT_EQ(st.rounds_held(), 0u);  // and the world's rounds are untouched by team keys
  for (int r = 0; r < 4; ++r) req(r, StoreOp::kFinalize, "");
  EXPECT_EQ(st.team_rounds_held(), 0u);
  EXPECT_EQ(st.keys(), 0u);
}

// A watchdog that stops sending heartbeats is overdue after the timeout; one that left is not.
TEST(StoreHeartbeat, SilentWatchdogIsOverdue) {
  std::vector<std::tuple<int, StoreOp, std::string, std::string>> sent;
  StoreState st(2, "", [&](int c, StoreOp op, const std::string &k, const std::string &v) {
    sent.emplace_back(c, op, k, v);
  });
  st.set_heartbeat_timeout_ms(1000);
  for (int c : {1, 2, 3, 4}) st.open(c);
  Frame f{StoreOp::kWatch, "0", ""};
  ASSERT_TRUE(st.handle(1, f, 100));
  EXPECT_EQ(std::get<3>(sent.back()), "1000");  // the watchdog learns the timeout
  f = {StoreOp::kWatch, "1", ""};
  ASSERT_TRUE(st.handle(2, f, 100));
  f = {StoreOp::kHello, "1", ""};
  ASSERT_TRUE(st.handle(3, f, 100));
  f = {StoreOp::kHeartbeat, "", ""};
  ASSERT_TRUE(st.handle(1, f, 900));
  EXPECT_TRUE(st.overdue(1000).empty());
  EXPECT_EQ(st.overdue(1500), std::vector<int>{1});  // rank 1's watchdog last spoke at 100
  EXPECT_EQ(st.conns_of(1), (std::vector<int>{2, 3}));
  ASSERT_TRUE(st.handle(1, f, 1800));
  EXPECT_EQ(st.overdue(2500), std::vector<int>{1});
  st.close(2, "closed", false);  // a watchdog that left (finalize) is not watched any more
  EXPECT_TRUE(st.overdue(2500).empty());
  f = {StoreOp::kHeartbeat, "", ""};
  EXPECT_FALSE(st.handle(3, f, 2600));  // only watch connections beat
}
