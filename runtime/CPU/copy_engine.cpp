// SDMA on the CPU backend: one helper copy thread per process, fed by the device ABI's bulk copies
// when SDMA is the only engine selected; tdist_quiet (and the runtime's quiet at a host barrier and
// at finalize) drains it.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "CPU/backend.hpp"

namespace tdist::cpu {

namespace {

class CopyEngine {
 public:
  void submit(std::function<void()> job) {
    std::unique_lock<std::mutex> g(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    q_.push_back(std::move(job));
    ++pending_;
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> g(mu_);
    done_cv_.wait(g, [&] { return pending_ == 0; });
  }
  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> g(mu_);
    while (true) {
      cv_.wait(g, [&] { return stop_ || !q_.empty(); });
      if (q_.empty() && stop_) return;
      auto job = std::move(q_.front());
      q_.pop_front();
      g.unlock();
      job();
      g.lock();
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> q_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

CopyEngine &copy_engine() {
  static CopyEngine e;
  return e;
}

}  // namespace

void copy_engine_submit(std::function<void()> job) { copy_engine().submit(std::move(job)); }
void copy_engine_drain() { copy_engine().drain(); }

}  // namespace tdist::cpu
