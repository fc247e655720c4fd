// The program of TasksProgram: an Asio io_context run by two threads, and coroutines of a task
// type of its own (a promise deriving from hotscope::TaskPromise) that wait on Asio timers and
// resume on whichever thread runs the timer's handler. 20 jobs each run 4 slices of 2 ms with
// 10 ms waits between them; one more job waits forever and is destroyed unfinished, its timer's
// handler with it. Built twice: with hotscope (reports through HOTSCOPE_OUT at exit), and
// compiled out, where the same source must leave no trace of hotscope.
#include "support/coroutine_task.hpp"

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

using Job = coroutine_support::CoroutineTask;

// co_await After{context, d}: resumes in the handler of a timer of `d`, on an Asio thread.
struct After {
  asio::io_context& context;
  std::chrono::milliseconds delay;
  std::unique_ptr<asio::steady_timer> timer;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) {
    timer = std::make_unique<asio::steady_timer>(context, delay);
    timer->async_wait([handle](const boost::system::error_code& error) {
      if (!error) {
        handle.resume();
      }
    });
  }
  void await_resume() const noexcept {}
};

std::atomic<int> finished{0};
constexpr int kJobs = 20;

Job job(asio::io_context& context) {
  HOTSCOPE_TASK("job");
  for (int slice = 0; slice < 4; ++slice) {
    std::this_thread::sleep_for(2ms); // the job's own work
    if (slice < 3) {
      co_await After{context, 10ms, nullptr};
    }
  }
  if (++finished == kJobs) {
    context.stop(); // the forgotten job's timer would keep the threads running
  }
}

Job forgotten(asio::io_context& context) {
  HOTSCOPE_TASK("forgotten");
  co_await After{context, 1h, nullptr};
}

} // namespace

int main() {
  asio::io_context context;
  std::vector<Job> jobs;
  for (int i = 0; i < kJobs; ++i) {
    jobs.push_back(job(context));
  }
  jobs.push_back(forgotten(context));
  for (Job& started : jobs) {
    asio::post(context, [handle = started.handle] { handle.resume(); });
  }
  std::thread helper([&] { context.run(); });
  context.run();
  helper.join();
  jobs.clear(); // the forgotten job is destroyed while it waits
  return 0;
}
