#include "cpu/cpu.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

using namespace hotscope;

std::int64_t this_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::atomic<std::uint64_t> sink{0};

// Spins for `seconds` of this thread's CPU time.
void spin_cpu(double seconds) {
  const double until = thread_cpu_seconds() + seconds;
  std::uint64_t x = 1;
  while (thread_cpu_seconds() < until) {
    for (int i = 0; i < 10'000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
  }
  sink += x;
}

std::string name_at(std::uint64_t address) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_sname == nullptr) {
    return "";
  }
  return info.dli_sname;
}

std::uint64_t samples_of_thread(const Snapshot& s, std::int64_t tid) {
  for (const CpuThreadSamples& t : s.cpu.threads) {
    if (t.os_tid == tid) {
      return t.samples;
    }
  }
  return 0;
}

const FunctionStats* find(const std::vector<FunctionStats>& functions, const std::string& name) {
  for (const FunctionStats& f : functions) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

bool sampler_thread_exists() {
  const std::string self = "/proc/self/task/";
  for (const auto& entry : std::filesystem::directory_iterator(self)) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "hotscope-cpu") {
      return true;
    }
  }
  return false;
}

} // namespace

// Outside the anonymous namespace: the tests derive from it, and a unity build compiles this file
// as an included one, where GCC warns of such a base (-Wsubobject-linkage).
class CpuSampler : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(hotscope::cpu::start(kHz), "");
    hotscope::trace::reset();
  }
  void TearDown() override { hotscope::cpu::stop(); }
  static constexpr unsigned kHz = 997;
};

extern "C" __attribute__((noinline)) void hotscope_test_leaf_spin(double seconds) {
  spin_cpu(seconds);
  asm volatile("" ::: "memory"); // not a tail call: this frame stays on the stack
}

extern "C" __attribute__((noinline)) void hotscope_test_scope_owner(double seconds) {
  HOTSCOPE_SCOPE("owned_scope");
  hotscope_test_leaf_spin(seconds);
  asm volatile("" ::: "memory");
}

TEST(CpuSamplerOff, CostsNothingNoThreadNoHandler) {
  EXPECT_EQ(cpu::hz(), 0u);
  EXPECT_FALSE(sampler_thread_exists());
  struct sigaction action {};
  ASSERT_EQ(sigaction(cpu::kSignal, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, SIG_DFL) << "no handler is installed before sampling starts";
  EXPECT_EQ(trace::snapshot().cpu.samples, 0u);
}

TEST_F(CpuSampler, AScopeSitsBetweenTheFrameThatOpenedItAndTheFramesItEncloses) {
  hotscope_test_scope_owner(0.3);
  const Snapshot s = trace::snapshot();
  ASSERT_GT(s.cpu.samples, 50u) << "0.3 s of CPU at ~1 kHz";
  // One signal per period, or fewer where the kernel's tick is coarser than 1 ms.
  EXPECT_GE(s.cpu.signals, s.cpu.samples / 10);
  EXPECT_LE(s.cpu.signals, s.cpu.samples);
  std::uint64_t placed = 0;   // between the owner and the leaf it calls
  std::uint64_t in_owner = 0; // right inside the owner, wherever the sample landed
  std::uint64_t with_scope = 0;
  std::string misplaced; // the frames of stacks whose scope is not right inside the owner
  for (const CpuStack& stack : s.cpu.stacks) {
    for (std::size_t i = 0; i < stack.frames.size(); ++i) {
      const CpuFrame& frame = stack.frames[i];
      if (!frame.is_scope() || s.cpu.scopes[frame.scope].name != "owned_scope") {
        continue;
      }
      with_scope += stack.samples;
      const bool inner_ok = i > 0 && !stack.frames[i - 1].is_scope() &&
                            name_at(stack.frames[i - 1].address) == "hotscope_test_leaf_spin";
      const bool outer_ok = i + 1 < stack.frames.size() && !stack.frames[i + 1].is_scope() &&
                            name_at(stack.frames[i + 1].address) == "hotscope_test_scope_owner";
      placed += inner_ok && outer_ok ? stack.samples : 0;
      in_owner += outer_ok ? stack.samples : 0;
      for (std::size_t j = 0; !outer_ok && j < stack.frames.size() && j < 8; ++j) {
        const CpuFrame& each = stack.frames[j];
        misplaced += (each.is_scope() ? s.cpu.scopes[each.scope].name : name_at(each.address)) +
                     (j + 1 < stack.frames.size() ? " < " : "\n");
      }
    }
  }
  EXPECT_GE(with_scope, s.cpu.samples * 9 / 10);
#if defined(__SANITIZE_THREAD__)
  // In a TSan build a few samples come out without the owner right outside the scope on a loaded
  // machine (4 of 298, 8 of 287; the cause is not known, the stacks are printed): a bound there,
  // equality elsewhere.
  EXPECT_GE(in_owner, with_scope * 95 / 100)
#else
  EXPECT_EQ(in_owner, with_scope)
#endif
      << "the scope frame sits right inside the frame that opened it; innermost first:\n"
      << misplaced;
  // A few samples land in the owner's own code (a sanitizer's calls there) rather than the leaf.
  EXPECT_GE(placed, with_scope * 95 / 100) << "and encloses the leaf the owner calls";
  EXPECT_EQ(s.cpu.incomplete, 0u);
  const FunctionStats* owned = find(s.functions, "owned_scope");
  ASSERT_NE(owned, nullptr);
  EXPECT_GT(owned->cpu_self_ns, 200'000'000u);
  EXPECT_EQ(owned->cpu_self_ns, owned->cpu_total_ns);
  EXPECT_GE(owned->stats.total_ns, owned->cpu_total_ns / 2);
}

TEST_F(CpuSampler, AThreadBlockedInReadGetsNoSamples) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::atomic<std::int64_t> reader_tid{0};
  std::thread reader([&] {
    reader_tid = this_tid();
    HOTSCOPE_SCOPE("waits_in_read");
    char byte = 0;
    EXPECT_EQ(read(fds[0], &byte, 1), 1);
  });
  std::thread spinner([] { spin_cpu(0.3); });
  spinner.join();
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  const Snapshot s = trace::snapshot();
  EXPECT_EQ(samples_of_thread(s, reader_tid), 0u);
  const FunctionStats* waits = find(s.functions, "waits_in_read");
  ASSERT_NE(waits, nullptr);
  EXPECT_GT(waits->stats.total_ns, 250'000'000u) << "wall time it waited";
  EXPECT_LT(waits->cpu_total_ns, 20'000'000u) << "no CPU while it waited";
}

TEST_F(CpuSampler, AThreadStartedAfterSamplingBeganIsSampled) {
  std::atomic<std::int64_t> tid{0};
  std::thread late([&] {
    tid = this_tid();
    spin_cpu(0.3); // longer than the sampler takes to find it (kThreadScanMs)
  });
  late.join();
  const Snapshot s = trace::snapshot();
  EXPECT_GT(samples_of_thread(s, tid), 100u);
}

namespace {
std::atomic<int> program_handler_calls{0};
void program_handler(int) {
  ++program_handler_calls;
}
std::atomic<int> profiling_ticks{0};
void on_profiling_tick(int) {
  ++profiling_ticks;
}
} // namespace

TEST(CpuSamplerSignals, AProgramsHandlerOfTheSignalStillGetsItsOwnSignals) {
  cpu::stop();
  struct sigaction mine {};
  mine.sa_handler = program_handler;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(cpu::kSignal, &mine, nullptr), 0);
  ASSERT_EQ(cpu::start(997), "");
  struct sigaction now {};
  sigaction(cpu::kSignal, nullptr, &now);
  if ((now.sa_flags & SA_SIGINFO) == 0) { // ctest runs each test in a process of its own
    GTEST_SKIP() << "the sampler's handler was installed by an earlier test in this process";
  }
  raise(cpu::kSignal); // not a timer's: the program's
  EXPECT_EQ(program_handler_calls.load(), 1);
  cpu::stop();
}

TEST(CpuSamplerSignals, AHandlerInstalledAfterwardsStopsSamplingAndSaysSo) {
  ASSERT_EQ(cpu::start(997), "");
  struct sigaction mine {};
  mine.sa_handler = program_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction ours {};
  ASSERT_EQ(sigaction(cpu::kSignal, &mine, &ours), 0);
  for (int i = 0; i < 100 && cpu::figures().problem.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(cpu::figures().problem.find("SIGURG handler of its own"), std::string::npos)
      << cpu::figures().problem;
  cpu::stop();
  ASSERT_EQ(sigaction(cpu::kSignal, &ours, nullptr), 0); // ours again, for the next tests
}

// A program that profiles itself with setitimer(ITIMER_PROF) and SIGPROF, as gperftools does,
// keeps its ticks while hotscope samples: the sampler never touches SIGPROF.
TEST_F(CpuSampler, AProgramsOwnSigprofProfilerKeepsWorking) {
  struct sigaction tick {};
  tick.sa_handler = on_profiling_tick;
  sigemptyset(&tick.sa_mask);
  tick.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(SIGPROF, &tick, nullptr), 0);
  const itimerval every_ms{{0, 1000}, {0, 1000}};
  ASSERT_EQ(setitimer(ITIMER_PROF, &every_ms, nullptr), 0);
  // The kernel's tick bounds both rates (250 Hz here), and fewer ticks arrive on a loaded machine
  // (20 in 0.2 s of CPU time under ASan beside a build): the test spins until 20 ticks and 50
  // samples have come, for 4 s of CPU time at most; a sampler that took SIGPROF away would leave
  // no tick at all.
  for (int slices = 0;
       slices < 80 && (profiling_ticks.load() <= 20 ||
                       trace::snapshot(trace::Contents::StatisticsOnly).cpu.samples <= 50);
       ++slices) {
    spin_cpu(0.05);
  }
  const itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  EXPECT_GT(profiling_ticks.load(), 20);
  EXPECT_GT(trace::snapshot().cpu.samples, 50u);
}

// The threads of this process, counted with system calls only: a child forked from a
// multi-threaded process must not allocate (an allocator's lock may have been held at the fork).
int threads_counted_without_allocating() {
  const int tasks = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tasks < 0) {
    return -1;
  }
  int threads = 0;
  alignas(8) char entries[4096];
  for (;;) {
    const long read = syscall(SYS_getdents64, tasks, entries, sizeof entries);
    if (read <= 0) {
      break;
    }
    for (long at = 0; at < read;) {
      const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
      threads += entry->d_name[0] != '.' ? 1 : 0;
      at += entry->d_reclen;
    }
  }
  close(tasks);
  return threads;
}

TEST_F(CpuSampler, AForkedChildStartsWithoutASampler) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    _exit(cpu::hz() == 0 && threads_counted_without_allocating() == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(cpu::hz(), kHz) << "the parent samples on";
}
