// The control plane's team collectives in one process: one thread per rank, each with its own
// ControlPlane (rank 0 serves the store). Teams that share no rank run at once; an expiry names the
// team and the member waited for, and what that member did instead when it made another team
// collective of the same round.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/control.hpp"
#include "core/error.hpp"

using namespace tdist;

namespace {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

// Runs body(cp) on `n` ranks at once; rank r's ControlPlane bounds each operation by op_s(r). A rank
// whose body returns false leaves without finalize (a store request that expired leaves its
// connection unusable; the store then reports the rank lost to the others).
void on_ranks(int n, const std::function<double(int)> &op_s,
              const std::function<bool(ControlPlane &)> &body) {
  const int port = free_port();
  std::vector<std::thread> ts;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        BootstrapConfig bc;
        bc.rank = r;
        bc.n_ranks = n;
        bc.address = "tcp://127.0.0.1:" + std::to_string(port);
        bc.secret = "unit";
        bc.connect_timeout_s = 20;
        bc.op_timeout_s = op_s(r);
        ControlPlane cp(bc);
        if (body(cp)) cp.finalize();
      } catch (const std::exception &e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto &t : ts) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

void on_ranks(int n, double op_s, const std::function<void(ControlPlane &)> &body) {
  on_ranks(
      n, [op_s](int) { return op_s; },
      [&](ControlPlane &cp) {
        body(cp);
        return true;
      });
}

TeamScope scope(int index, int start, int stride, int size, uint64_t seq) {
  TeamScope s;
  s.prefix = ControlPlane::team_prefix(index, start, stride, size);
  for (int i = 0; i < size; ++i) s.members.push_back(start + i * stride);
  s.seq = seq;
  s.label = "team " + std::to_string(index);
  return s;
}

}  // namespace

TEST(TeamControl, DisjointTeamsRunAtOnce) {
  // {0, 2} all-gathers 20 rounds while {1, 3} runs 50 barriers, then the world all-gathers.
  on_ranks(4, 20, [](ControlPlane &cp) {
    const int r = cp.rank();
    if (r % 2 == 0) {
      for (uint64_t s = 0; s < 20; ++s) {
        auto all = cp.team_allgather(scope(1, 0, 2, 2, s), std::to_string(r * 1000 + int(s)), false);
        ASSERT_EQ(all.size(), 2u);
        EXPECT_EQ(all[0], std::to_string(int(s)));
        EXPECT_EQ(all[1], std::to_string(2000 + int(s)));
      }
    } else {
      for (uint64_t s = 0; s < 50; ++s) cp.team_barrier(scope(1, 1, 2, 2, s));
    }
    auto all = cp.allgather(std::to_string(r));
    for (int q = 0; q < 4; ++q) EXPECT_EQ(all[size_t(q)], std::to_string(q));
  });
}

TEST(TeamControl, BarrierOfManyMembersUsesSeveralCounters) {
  // 70 members: two arrival counters (63 + 7), the last to fill one adds to the round's total.
  on_ranks(70, 30, [](ControlPlane &cp) {
    for (uint64_t s = 0; s < 3; ++s) cp.team_barrier(scope(0, 0, 1, 70, s));
  });
}

// An expiry names what the member knew when it began to wait: the members that had not arrived when
// it did (team {0, 2, 4} of 5 ranks; rank 4 never comes). The first member to give up closes its
// store connection, after which the store reports it lost to the others, so each case observes the
// member with the shortest bound.
TEST(TeamControl, BarrierExpiryNamesTheMembersWaitedFor) {
  for (int late : {0, 1}) {  // 0: rank 2 arrives first (waits for 0 and 4); 1: rank 2 arrives second
    std::string err, others[5];
    on_ranks(
        5, [](int r) { return r == 2 ? 1.0 : 5.0; },
        [&](ControlPlane &cp) {
          const int r = cp.rank();
          try {
            if (r % 2 == 1) {
              cp.team_barrier(scope(1, 1, 2, 2, 0));  // outside team 4: never involved
              return true;
            }
            if (r == 4) return true;
            const int first = late ? 0 : 2;
            if (r != first) std::this_thread::sleep_for(std::chrono::milliseconds(200));
            cp.team_barrier(scope(4, 0, 2, 3, 0));
            ADD_FAILURE() << "rank " << r << " passed a barrier that rank 4 never reached";
          } catch (const Error &e) {
            if (r == 2) {
              EXPECT_EQ(e.code(), TDIST_ERR_TIMEOUT) << e.what();
              err = e.what();
            } else {
              others[r] = e.what();
            }
          }
          return false;
        });
    const char *want =
        late ? "team 4 barrier #0: not every member arrived (when this one, member 1, did, member 2 "
               "(world PE 4) had not) within 1 s"
             : "team 4 barrier #0: not every member arrived (when this one, member 1, did, member 0 "
               "(world PE 0), member 2 (world PE 4) had not) within 1 s";
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_NE(others[0].find("rank 2 lost"), std::string::npos) << others[0];
  }
}

TEST(TeamControl, AllGatherExpiryNamesTheMissingMember) {
  std::string err;
  on_ranks(
      3, [](int r) { return r == 0 ? 1.0 : 5.0; },
      [&](ControlPlane &cp) {
        if (cp.rank() == 2) return true;  // never contributes
        try {
          cp.team_allgather(scope(2, 0, 1, 3, 0), "x");
          ADD_FAILURE() << "the all-gather completed without member 2";
        } catch (const Error &e) {
          if (cp.rank() == 0) {
            EXPECT_EQ(e.code(), TDIST_ERR_TIMEOUT);
            err = e.what();
          }
        }
        return false;
      });
  EXPECT_NE(err.find("rank 0: team 2 all-gather #0: member 2 (world PE 2) did not contribute within 1 s"),
            std::string::npos)
      << err;
}
