// The CPU sampler: per-thread CPU-time timers, the signal handler that takes the samples, and
// the thread that arms a timer for each thread of the process (docs/cpu.md).
#include "cpu/cpu.hpp"
#include "cpu/sample_buffer.hpp"
#include "locks/locks.hpp"
#include "threads/threads.hpp"

#include <hotscope/hotscope.hpp>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <thread>

namespace hotscope::cpu {
namespace {

// What our timers' signals carry: a signal without it is someone else's (a kill, a socket's
// out-of-band data) and goes to the handler the program had installed before ours.
char timer_cookie;

// Mapped at the first start, never unmapped (signals in flight); read by the handlers and the
// collector without the sampler's lock.
std::atomic<SampleBuffer*> buffer{nullptr};
std::atomic<std::uint64_t> samples_taken{0};
std::atomic<std::uint64_t> samples_lost{0};
std::atomic<std::uint64_t> samples_incomplete{0};
struct sigaction previous_action {};

void call_previous(int signal, siginfo_t* info, void* context) {
  if ((previous_action.sa_flags & SA_SIGINFO) != 0) {
    if (previous_action.sa_sigaction != nullptr) {
      previous_action.sa_sigaction(signal, info, context);
    }
  } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signal);
  }
  // SIGURG's default action is to ignore it, as we do.
}

// Innermost first, from the interrupted instruction (not the handler's own frames).
void unwind(void* context, Sample& sample) {
  sample.frames = 0;
  sample.complete = false;
  unw_cursor_t cursor;
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(context), UNW_INIT_SIGNAL_FRAME) != 0) {
    return;
  }
  for (;;) {
    unw_word_t ip = 0;
    unw_word_t sp = 0;
    unw_get_reg(&cursor, UNW_REG_IP, &ip);
    unw_get_reg(&cursor, UNW_REG_SP, &sp);
    if (ip == 0) {
      sample.complete = sample.frames != 0;
      return;
    }
    sample.pcs[sample.frames] = ip;
    sample.sps[sample.frames] = sp;
    if (++sample.frames == kMaxFrames) {
      return;
    }
    const int step = unw_step(&cursor);
    if (step <= 0) {
      sample.complete = step == 0;
      return;
    }
  }
}

// Async-signal-safe: no lock, no allocation; errno is kept.
void on_signal(int signal, siginfo_t* info, void* context) {
  if (info == nullptr || info->si_code != SI_TIMER || info->si_value.sival_ptr != &timer_cookie) {
    call_previous(signal, info, context);
    return;
  }
  const int saved_errno = errno;
  std::uint64_t position = 0;
  SampleBuffer* samples = buffer.load(std::memory_order_acquire);
  Sample* sample = samples->reserve(position);
  if (sample == nullptr) {
    samples_lost.fetch_add(1 + static_cast<std::uint64_t>(info->si_overrun),
                           std::memory_order_relaxed);
  } else {
    sample->tid = static_cast<std::int64_t>(syscall(SYS_gettid)); // not cached: fork changes it
    const detail::Ring* ring = detail::tls_ring;
    sample->ring = ring;
    sample->ring_head = ring != nullptr ? ring->head.load(std::memory_order_relaxed) : 0;
    // Expirations the kernel merged into this signal (a timer finer than its tick) count too.
    sample->weight = 1 + static_cast<std::uint32_t>(info->si_overrun);
    unwind(context, *sample);
    if (!sample->complete) {
      samples_incomplete.fetch_add(1, std::memory_order_relaxed);
    }
    samples_taken.fetch_add(1, std::memory_order_relaxed);
    samples->publish(position);
  }
  errno = saved_errno;
}

// A thread's CPU clock, from its id (the kernel's encoding, which pthread_getcpuclockid uses for
// threads of this process it knows by handle).
clockid_t thread_cpu_clock(pid_t tid) {
  constexpr clockid_t kPerThreadScheduler = 4 | 2; // CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED
  return static_cast<clockid_t>(~static_cast<unsigned>(tid) << 3) | kPerThreadScheduler;
}

class Sampler {
public:
  std::string start(unsigned hz) {
    std::lock_guard lock(mutex_);
    if (hz == 0 || hz > kMaxHz) {
      return "the CPU sampling rate must be 1 to " + std::to_string(kMaxHz) + " Hz, not " +
             std::to_string(hz);
    }
    if (thread_.joinable()) {
      if (hz == hz_.load(std::memory_order_relaxed)) {
        return "";
      }
      stop_locked();
    }
    if (std::string problem = install_handler(); !problem.empty()) {
      problem_ = problem;
      return problem;
    }
    problem_.clear();
    hz_.store(hz, std::memory_order_relaxed);
    stopping_ = false;
    try {
      const threads::SignalsBlocked blocked; // so no sample is ever taken of the sampler itself
      thread_ = std::thread([this] {
        locks::own_thread();
        run();
      });
    } catch (const std::system_error& error) {
      hz_.store(0, std::memory_order_relaxed);
      problem_ = std::string("cannot start the CPU sampler's thread: ") + error.what();
      return problem_;
    }
    return "";
  }

  void stop() {
    std::lock_guard lock(mutex_);
    stop_locked();
  }

  Figures figures() {
    std::lock_guard lock(mutex_);
    Figures figures;
    figures.hz = hz_.load(std::memory_order_relaxed);
    figures.samples = samples_taken.load(std::memory_order_relaxed);
    figures.lost = samples_lost.load(std::memory_order_relaxed);
    figures.incomplete = samples_incomplete.load(std::memory_order_relaxed);
    figures.threads = armed_threads_.load(std::memory_order_relaxed);
    figures.problem = problem_;
    return figures;
  }

  unsigned hz() const { return hz_.load(std::memory_order_relaxed); }

  // The child of fork() has no timers (they are not inherited) and no sampler thread: it starts
  // off, with an empty buffer, and may start sampling itself.
  void after_fork_in_child() {
    new (&mutex_) std::mutex;
    new (&wake_) std::condition_variable;
    new (&thread_) std::thread;
    new (&timers_) std::map<pid_t, timer_t>;
    hz_.store(0, std::memory_order_relaxed);
    armed_threads_.store(0, std::memory_order_relaxed);
    if (SampleBuffer* samples = buffer.load(std::memory_order_relaxed)) {
      new (samples) SampleBuffer;
    }
  }

private:
  static constexpr unsigned kMaxHz = 10'000;

  std::string install_handler() {
    if (buffer.load(std::memory_order_acquire) == nullptr) {
      void* memory = mmap(nullptr, sizeof(SampleBuffer), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (memory == MAP_FAILED) {
        return std::string("cannot map the CPU samples' buffer: ") + std::strerror(errno);
      }
      buffer.store(new (memory) SampleBuffer, std::memory_order_release);
    }
    if (handler_installed_) {
      return "";
    }
    // libunwind's set-up is not async-signal-safe: done here, once, rather than in a handler.
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    unw_context_t context;
    unw_cursor_t cursor;
    unw_getcontext(&context);
    unw_init_local(&cursor, &context);
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(kSignal, &action, &previous_action) != 0) {
      return std::string("cannot install the CPU samples' signal handler (SIGURG): ") +
             std::strerror(errno);
    }
    handler_installed_ = true;
    return "";
  }

  // Whether the signal still reaches our handler: a program that installs its own takes it over.
  static bool handler_still_ours() {
    struct sigaction current {};
    sigaction(kSignal, nullptr, &current);
    return (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_signal;
  }

  void stop_locked() {
    if (!thread_.joinable()) {
      return;
    }
    stopping_ = true;
    wake_.notify_all();
    std::thread thread = std::move(thread_);
    mutex_.unlock(); // the sampler thread takes it to look at stopping_
    thread.join();
    mutex_.lock();
    hz_.store(0, std::memory_order_relaxed);
  }

  void run() {
    pthread_setname_np(pthread_self(), "hotscope-cpu");
    const threads::OwnThread own;
    const auto own_tid = static_cast<pid_t>(syscall(SYS_gettid));
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (!handler_still_ours()) {
        problem_ = "the program installed a SIGURG handler of its own: CPU sampling stopped";
        break;
      }
      lock.unlock();
      arm_new_threads(own_tid);
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(kThreadScanMs), [this] { return stopping_; });
    }
    lock.unlock();
    disarm_all();
    lock.lock();
  }

  void arm_new_threads(pid_t own_tid) {
    std::set<pid_t> alive;
    if (DIR* tasks = opendir("/proc/self/task")) {
      while (const dirent* entry = readdir(tasks)) {
        if (const long tid = std::strtol(entry->d_name, nullptr, 10); tid > 0 && tid != own_tid) {
          alive.insert(static_cast<pid_t>(tid));
        }
      }
      closedir(tasks);
    }
    for (auto it = timers_.begin(); it != timers_.end();) {
      if (alive.count(it->first) == 0) {
        timer_delete(it->second);
        it = timers_.erase(it);
      } else {
        ++it;
      }
    }
    const long period_ns = 1'000'000'000L / hz_.load(std::memory_order_relaxed);
    const itimerspec every{{0, period_ns}, {0, period_ns}};
    for (pid_t tid : alive) {
      if (timers_.count(tid) != 0) {
        continue;
      }
      sigevent event{};
      event.sigev_notify = SIGEV_THREAD_ID;
      event.sigev_signo = kSignal;
      event.sigev_value.sival_ptr = &timer_cookie;
      event._sigev_un._tid = tid;
      timer_t timer{};
      // Fails when the thread ended meanwhile: it is simply not sampled.
      if (timer_create(thread_cpu_clock(tid), &event, &timer) == 0) {
        timer_settime(timer, 0, &every, nullptr);
        timers_.emplace(tid, timer);
      }
    }
    armed_threads_.store(timers_.size(), std::memory_order_relaxed);
  }

  void disarm_all() {
    for (const auto& [tid, timer] : timers_) {
      timer_delete(timer);
    }
    timers_.clear();
    armed_threads_.store(0, std::memory_order_relaxed);
  }

  std::mutex mutex_; // start, stop, problem_, stopping_
  std::condition_variable wake_;
  std::thread thread_;
  bool stopping_ = false;
  bool handler_installed_ = false;
  std::string problem_;
  std::atomic<unsigned> hz_{0};
  std::atomic<std::uint64_t> armed_threads_{0};
  std::map<pid_t, timer_t> timers_; // the sampler thread's
};

Sampler& sampler() {
  // Never destroyed: a report at exit may still read its figures.
  static Sampler* const instance = [] {
    auto* made = new Sampler;
    pthread_atfork(nullptr, nullptr, [] { sampler().after_fork_in_child(); });
    return made;
  }();
  return *instance;
}

} // namespace

std::string start(unsigned hz) {
  return sampler().start(hz);
}
void stop() {
  sampler().stop();
}
unsigned hz() {
  return sampler().hz();
}
Figures figures() {
  return sampler().figures();
}
void take(std::vector<Sample>& out) {
  SampleBuffer* samples = buffer.load(std::memory_order_acquire);
  if (samples == nullptr) {
    return;
  }
  while (const Sample* sample = samples->peek()) {
    out.push_back(*sample);
    samples->pop();
  }
}

} // namespace hotscope::cpu
