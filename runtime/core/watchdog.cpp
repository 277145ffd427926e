#include "core/watchdog.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/control.hpp"
#include "bootstrap/store.hpp"
#include "core/error.hpp"
#include "core/fault.hpp"

namespace tdist {

namespace {

class Watchdog {
 public:
  Watchdog(std::unique_ptr<StoreClient> client, int my_pe) : client_(std::move(client)), my_pe_(my_pe) {
    TDIST_CHECK(::pipe2(stop_pipe_, O_CLOEXEC) == 0, TDIST_ERR_BOOTSTRAP, "watchdog: pipe: %s",
                std::strerror(errno));
    thread_ = std::thread([this] { run(); });
  }
  ~Watchdog() {
    (void)!::write(stop_pipe_[1], "x", 1);
    if (thread_.joinable()) thread_.join();
    for (int f : stop_pipe_) ::close(f);
  }

 private:
  void run();
  std::unique_ptr<StoreClient> client_;
  int my_pe_;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

std::mutex g_mu;  // guards g_dog, g_message, g_rank
std::unique_ptr<Watchdog> g_dog;
std::string g_message;
int g_rank = -1;

void Watchdog::run() {
  int lost = -1;
  std::string msg;
  if (!client_->wait_for_failure(stop_pipe_[0], &lost, &msg)) return;
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_message.empty()) {
      g_message = msg;
      g_rank = lost;
    }
  }
  std::fprintf(stderr, "tdist[pe %d]: %s; aborting every wait of this PE\n", my_pe_, msg.c_str());
  record_peer_lost(lost);  // published by the transport (the heap's flag, woken waiters, the GPU)
}

}  // namespace

void start_watchdog(const ControlPlane &cp) {
  auto client = cp.connect_watcher();
  std::lock_guard<std::mutex> g(g_mu);
  g_dog.reset();
  g_message.clear();
  g_rank = -1;
  g_dog = std::make_unique<Watchdog>(std::move(client), cp.rank());
}

void stop_watchdog() {
  std::unique_ptr<Watchdog> d;
  {
    std::lock_guard<std::mutex> g(g_mu);
    d = std::move(g_dog);
  }
  d.reset();  // joins outside the lock: the thread takes g_mu when it reports
}

std::string peer_lost_message() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_message;
}

int peer_lost_rank() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_rank;
}

}  // namespace tdist
