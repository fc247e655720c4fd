// Collector throughput (bench/throughput.sh, docs/performance.md "Collector throughput"): N
// threads each open empty scopes at a fixed rate for a while, with the settings the environment
// gives (the defaults unless HOTSCOPE_* says otherwise), then one table row: records written,
// kept and dropped, and the collector thread's CPU time per record. With --lttng the threads
// fire the LTTng-UST begin/end tracepoints of bench/lttng_tp.h at the same rate instead, for a
// session the script records.
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if HOTSCOPE_BENCH_LTTNG
#include "lttng_tp.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  unsigned threads = 1;
  double records_per_second = 10e6; // per thread: two records per scope
  double seconds = 10;
  unsigned snapshot_clients = 0;
  bool lttng = false;
};

// A thread that falls further behind than this (preempted) skips ahead instead of catching up
// in one burst: the rate stays the asked one, give or take what the scheduler took.
constexpr auto kMostBehind = std::chrono::milliseconds(1);

// The collector thread's id, found by the name it gives itself as it starts.
long collector_tid() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name == "hotscope-drain") {
        return std::stol(task.path().filename().string());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// CPU time of one thread of this process, in ns (the first field of schedstat).
std::uint64_t thread_cpu_ns(long tid) {
  std::ifstream schedstat("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  std::uint64_t ns = 0;
  schedstat >> ns;
  return ns;
}

template <class Event>
void paced_loop(const Options& options, Clock::time_point stop, Event event) {
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(2.0 / options.records_per_second));
  auto next = Clock::now();
  while (next < stop) {
    event();
    next += interval;
    auto now = Clock::now();
    if (now - next > kMostBehind) {
      next = now;
    }
    while (now < next) {
      now = Clock::now();
    }
  }
}

void scopes(const Options& options, Clock::time_point stop) {
  paced_loop(options, stop, [] { HOTSCOPE_SCOPE("empty"); });
}

#if HOTSCOPE_BENCH_LTTNG
std::atomic<std::uint64_t> lttng_emitted{0};
void tracepoints(const Options& options, Clock::time_point stop) {
  static const char location = 0;
  std::uint64_t emitted = 0;
  paced_loop(options, stop, [&] {
    tracepoint(hotscope_bench, begin, &location);
    tracepoint(hotscope_bench, end, &location);
    emitted += 2;
  });
  lttng_emitted += emitted;
}
#endif

} // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Collector throughput: threads writing scopes at a fixed rate"};
  app.add_option("--threads", options.threads, "producing threads")->check(CLI::Range(1, 64));
  app.add_option("--rate", options.records_per_second, "records per second per thread")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", options.seconds, "how long they write")->check(CLI::PositiveNumber);
  app.add_option("--snapshot-clients", options.snapshot_clients,
                 "threads taking trace snapshots in a loop meanwhile (as /v1/trace requests)");
  app.add_flag("--lttng", options.lttng, "fire LTTng-UST tracepoints instead of scopes");
  CLI11_PARSE(app, argc, argv);
#if !HOTSCOPE_BENCH_LTTNG
  if (options.lttng) {
    std::fprintf(stderr, "--lttng: this build has no LTTng-UST (liblttng-ust-dev not found)\n");
    return 2;
  }
#endif

  HOTSCOPE_MESSAGE("start"); // starts the collector before it is looked for
  const long tid = collector_tid();
  if (tid < 0) {
    std::fprintf(stderr, "no thread named hotscope-drain (the collector): is hotscope enabled?\n");
    return 1;
  }
  const hotscope::Snapshot before =
      hotscope::trace::snapshot(hotscope::trace::Contents::StatisticsOnly);
  const std::uint64_t cpu_before = thread_cpu_ns(tid);
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options.seconds));
  std::atomic<bool> producing{true};
  std::atomic<std::uint64_t> snapshots{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < options.snapshot_clients; ++i) {
    threads.emplace_back([&] {
      while (producing.load()) {
        (void)hotscope::trace::snapshot(hotscope::trace::Contents::StatisticsAndTrace);
        ++snapshots;
      }
    });
  }
  std::vector<std::thread> producers;
  for (unsigned i = 0; i < options.threads; ++i) {
    producers.emplace_back([&] {
#if HOTSCOPE_BENCH_LTTNG
      if (options.lttng) {
        tracepoints(options, stop);
        return;
      }
#endif
      scopes(options, stop);
    });
  }
  for (std::thread& producer : producers) {
    producer.join();
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  producing = false;
  for (std::thread& thread : threads) {
    thread.join();
  }
  // Two periods: the collector drains the rest itself, so its CPU time covers every record.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::uint64_t cpu_ns = thread_cpu_ns(tid) - cpu_before;
  const hotscope::Snapshot after =
      hotscope::trace::snapshot(hotscope::trace::Contents::StatisticsOnly);

#if HOTSCOPE_BENCH_LTTNG
  if (options.lttng) {
    std::printf("lttng events emitted: %llu in %.1f s\n",
                static_cast<unsigned long long>(lttng_emitted.load()), elapsed);
    return 0;
  }
#endif
  const std::uint64_t written = after.records.written - before.records.written;
  const std::uint64_t kept = after.records.kept - before.records.kept;
  const std::uint64_t dropped = after.records.dropped - before.records.dropped;
  const double written_rate = static_cast<double>(written) / elapsed / options.threads;
  std::printf(
      "| %u x %.1f M/s | %.1f M/s | %.1f M | %.1f M | %.2f %% | %.2f s (%.0f %%) | %.1f |%s\n",
      options.threads, options.records_per_second / 1e6, written_rate / 1e6,
      static_cast<double>(written) / 1e6, static_cast<double>(kept) / 1e6,
      written ? 100.0 * static_cast<double>(dropped) / static_cast<double>(written) : 0.0,
      static_cast<double>(cpu_ns) / 1e9, 100.0 * static_cast<double>(cpu_ns) / 1e9 / elapsed,
      kept ? static_cast<double>(cpu_ns) / static_cast<double>(kept) : 0.0,
      options.snapshot_clients ? fmt::format(" {} |", snapshots.load()).c_str() : "");
  return 0;
}
