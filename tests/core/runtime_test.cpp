// The macros end to end: records go through the real rings and collector. Each test runs in
// its own process (gtest_discover_tests), so the global collector starts fresh every time.
#include "clock/clock.hpp"
#include "export/export.hpp"
#include "trace/trace.hpp"

#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include "support/forked_child_skips.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace hotscope;

const FunctionStats* find(const std::vector<FunctionStats>& functions, const std::string& name) {
  for (const auto& f : functions) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

const ThreadInfo* find_thread(const Snapshot& s, std::int64_t tid) {
  for (const auto& t : s.threads) {
    if (t.os_tid == tid) {
      return &t;
    }
  }
  return nullptr;
}

std::int64_t this_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

void inner_for(std::uint64_t ns) {
  HOTSCOPE_SCOPE("inner");
  clock::advance_manual_clock(ns);
}

TEST(Runtime, NestedScopesAreExactUnderTheManualClock) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  {
    HOTSCOPE_SCOPE("outer");
    clock::advance_manual_clock(100);
    inner_for(30);
    clock::advance_manual_clock(20);
    inner_for(50);
  }
  const Snapshot s = trace::snapshot();
  const auto* outer = find(s.functions, "outer");
  const auto* inner = find(s.functions, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->stats.total_ns, 200u);
  EXPECT_EQ(outer->stats.self_ns, 120u);
  EXPECT_EQ(inner->stats.calls, 2u);
  EXPECT_EQ(inner->stats.total_ns, 80u);
  EXPECT_EQ(inner->stats.p50_ns, 30u);
  EXPECT_EQ(inner->stats.max_ns, 50u);
  EXPECT_EQ(s.clock.source, "manual");
}

void named_function() {
  HOTSCOPE_FUNCTION();
}

TEST(Runtime, FunctionScopesAreNamedAfterTheFunction) {
  named_function();
  const Snapshot s = trace::snapshot();
  const auto* f = find(s.functions, "{anonymous}::named_function");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->stats.calls, 1u);
  EXPECT_NE(f->file.find("runtime_test.cpp"), std::string::npos);
  EXPECT_GT(f->line, 0u);
}

void throws_from_depth(int depth) {
  HOTSCOPE_SCOPE("thrower");
  if (depth == 0) {
    throw std::runtime_error("boom");
  }
  throws_from_depth(depth - 1);
}

TEST(Runtime, ExceptionsThrownThroughScopesCloseThem) {
  {
    HOTSCOPE_SCOPE("catcher");
    EXPECT_THROW(throws_from_depth(5), std::runtime_error);
  }
  const Snapshot s = trace::snapshot();
  EXPECT_EQ(find(s.functions, "thrower")->stats.calls, 6u);
  EXPECT_EQ(find(s.functions, "catcher")->stats.calls, 1u);
  EXPECT_EQ(s.trace_open_scopes, 0u);
}

int recurse(int depth) {
  HOTSCOPE_FUNCTION();
  return depth == 0 ? 0 : 1 + recurse(depth - 1);
}

TEST(Runtime, TenThousandDeepRecursion) {
  EXPECT_EQ(recurse(9999), 9999);
  const Snapshot s = trace::snapshot();
  const auto* f = find(s.functions, "{anonymous}::recurse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->stats.calls, 10000u);
  EXPECT_EQ(s.records.dropped, 0u);
  EXPECT_EQ(s.trace_open_scopes, 0u);
  // Self times of all levels add up to the outermost call, which is the longest.
  EXPECT_NEAR(static_cast<double>(f->stats.self_ns), static_cast<double>(f->stats.max_ns), 2.0);
  EXPECT_GT(f->stats.total_ns, f->stats.max_ns);
}

TEST(Runtime, ManyShortLivedThreadsLoseNothing) {
  constexpr int kThreads = 600;
  constexpr int kScopesPerThread = 25;
  std::vector<std::thread> batch;
  for (int i = 0; i < kThreads; ++i) {
    batch.emplace_back([] {
      for (int j = 0; j < kScopesPerThread; ++j) {
        HOTSCOPE_SCOPE("short_lived");
      }
    });
    if (batch.size() == 8) {
      for (auto& t : batch) {
        t.join();
      }
      batch.clear();
    }
  }
  for (auto& t : batch) {
    t.join();
  }
  const Snapshot s = trace::snapshot();
  EXPECT_EQ(find(s.functions, "short_lived")->stats.calls,
            static_cast<std::uint64_t>(kThreads) * kScopesPerThread);
  EXPECT_EQ(s.records.dropped, 0u);
  // Per-thread statistics are kept for the newest exited threads only; the rest are merged.
  EXPECT_GE(s.threads_folded, kThreads - trace::Aggregator::kExitedThreadsKept);
  std::size_t threads_with_stats = 0;
  for (const auto& t : s.threads) {
    threads_with_stats += t.functions.empty() ? 0 : 1;
  }
  EXPECT_LE(threads_with_stats, trace::Aggregator::kExitedThreadsKept + 2);
}

// A daemon: forked twice, in a new session, it records four rings' worth in rounds of a
// sixteenth of a ring. Its own collector thread drains them as they come: on an idle machine
// none is dropped; on a loaded one (sanitizers, parallel builds) the collector may lag, but it
// keeps more than one ring holds, which is all a child without a collector keeps.
TEST(Runtime, AForkedChildThatDaemonizesHasItsRecordsDrainedAsTheyCome) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  // The daemon's new collector thread allocates as it starts: 1 run in 5 under ASan.
  HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN("the parent's collector or agent thread");
  int result_pipe[2];
  ASSERT_EQ(pipe(result_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(result_pipe[0]);
    setsid();
    if (fork() != 0) {
      _exit(0); // the first child ends at once; the grandchild is the daemon
    }
    const std::uint64_t round = detail::current_ring()->capacity / 2 / 16; // scopes
    for (int i = 0; i < 64; ++i) {
      for (std::uint64_t j = 0; j < round; ++j) {
        HOTSCOPE_SCOPE("daemon_work");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const Snapshot s = trace::snapshot();
    const FunctionStats* work = find(s.functions, "daemon_work");
    const std::uint64_t figures[4] = {64 * round, work ? work->stats.calls : 0, s.records.dropped,
                                      round * 16};
    _exit(write(result_pipe[1], figures, sizeof figures) == sizeof figures ? 0 : 1);
  }
  close(result_pipe[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(status, 0);
  pollfd ready{result_pipe[0], POLLIN, 0};
  ASSERT_EQ(poll(&ready, 1, 30'000), 1) << "the daemon did not answer within 30 s";
  std::uint64_t figures[4] = {};
  ASSERT_EQ(read(result_pipe[0], figures, sizeof figures), static_cast<ssize_t>(sizeof figures));
  close(result_pipe[0]);
  const auto [scopes, kept_calls, dropped, ring_scopes] = figures;
  std::printf("daemon: %llu of %llu calls kept, %llu records dropped\n",
              static_cast<unsigned long long>(kept_calls), static_cast<unsigned long long>(scopes),
              static_cast<unsigned long long>(dropped));
  EXPECT_GT(kept_calls, ring_scopes);
  EXPECT_EQ(2 * kept_calls + dropped, 2 * scopes); // whole scopes kept, the rest counted
}

TEST(Runtime, RingOverflowAccountingIsExact) {
  trace::pause_collector_for_testing(true);
  trace::collect_now();
  std::uint64_t capacity = 0;
  const std::uint64_t kScopes = 2 * trace::Settings{}.ring_records; // more than a ring holds
  std::int64_t tid = 0;
  std::thread flood([&] {
    tid = this_tid();
    capacity = detail::current_ring()->capacity;
    for (std::uint64_t i = 0; i < kScopes; ++i) {
      HOTSCOPE_SCOPE("flood");
    }
    HOTSCOPE_MESSAGE(std::string("a runtime message that needs payload records"));
  });
  flood.join();
  trace::pause_collector_for_testing(false);
  const Snapshot s = trace::snapshot();
  const ThreadInfo* t = find_thread(s, tid);
  ASSERT_NE(t, nullptr);
  const std::uint64_t written = 2 * kScopes + 1 + 2; // scopes, message header + 2 payload
  EXPECT_EQ(t->records.kept + t->records.dropped, written);
  EXPECT_EQ(t->records.written, written);
  EXPECT_EQ(t->records.kept, capacity);
  EXPECT_GT(t->records.dropped, 0u);
  // Every kept BEGIN has its END, so the kept scopes are whole calls.
  EXPECT_EQ(find(t->functions, "flood")->stats.calls, capacity / 2);
  EXPECT_EQ(s.records.written, s.records.kept + s.records.dropped);
}

TEST(Runtime, ARingPastItsWakeMarkWakesTheCollector) {
  trace::pause_collector_for_testing(true); // no periodic drain: the ring surely passes its mark
  const std::uint64_t wakes_before = trace::early_wakes();
  std::thread writer([] {
    const std::uint64_t capacity = detail::current_ring()->capacity;
    for (std::uint64_t i = 0; i < capacity / 8 + 1; ++i) { // a quarter of the ring and a scope
      HOTSCOPE_SCOPE("fill");
    }
  });
  writer.join();
  // The collector counts the wake when it runs; not a timing goal, a generous bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (trace::early_wakes() == wakes_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  trace::pause_collector_for_testing(false);
  EXPECT_GT(trace::early_wakes(), wakes_before);
}

// How many of the whole pages holding records [first, first + count) of the ring are resident.
std::size_t resident_pages(const detail::Ring& ring, std::uint64_t first, std::uint64_t count) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin =
      (reinterpret_cast<std::uintptr_t>(ring.slots + first) + page - 1) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(ring.slots + first + count) & ~(page - 1);
  std::vector<unsigned char> in_core((end - begin) / page);
  mincore(reinterpret_cast<void*>(begin), end - begin, in_core.data());
  return static_cast<std::size_t>(
      std::count_if(in_core.begin(), in_core.end(), [](unsigned char bits) { return bits & 1; }));
}

// Resident ring memory follows the thread's rate: pages of a slow ring go back to the system
// once drained; a ring drained in big passes keeps its pages.
TEST(Runtime, ASlowRingsDrainedPagesGoBackToTheSystemAFastRingsStay) {
  trace::pause_collector_for_testing(true); // the passes are the test's collect_now() calls
  std::size_t slow_resident = 0;
  std::size_t slow_pages = 0;
  std::size_t fast_resident = 0;
  std::size_t fast_pages = 0;
  std::thread writer([&] {
    const detail::Ring& ring = *detail::current_ring();
    const std::uint64_t slow_records = ring.capacity / 512; // a pass well under the share
    const std::uint64_t first = ring.head.load();
    for (std::uint64_t i = 0; i < slow_records / 2; ++i) {
      HOTSCOPE_SCOPE("slow");
    }
    trace::collect_now();
    slow_pages = (slow_records * sizeof(hotscope_record)) / sysconf(_SC_PAGESIZE) - 1;
    slow_resident = resident_pages(ring, first, slow_records);
    const std::uint64_t fast_first = ring.head.load();
    const std::uint64_t fast_records = ring.capacity / 8;
    for (std::uint64_t i = 0; i < fast_records / 2; ++i) {
      HOTSCOPE_SCOPE("fast");
    }
    trace::collect_now();
    fast_pages = (fast_records * sizeof(hotscope_record)) / sysconf(_SC_PAGESIZE) - 1;
    fast_resident = resident_pages(ring, fast_first, fast_records);
  });
  writer.join();
  trace::pause_collector_for_testing(false);
  ASSERT_GT(slow_pages, 0u);
  EXPECT_EQ(slow_resident, 0u) << "of " << slow_pages << " pages";
  EXPECT_GE(fast_resident, fast_pages) << "of " << fast_pages << " pages";
}

void allocating_leaf(std::size_t bytes) {
  HOTSCOPE_SCOPE("leaf");
  detail::record_allocation(bytes);
}

void allocating_work(std::size_t bytes) {
  HOTSCOPE_SCOPE("work");
  detail::record_allocation(bytes);
  allocating_leaf(2 * bytes);
  allocating_leaf(3 * bytes);
}

TEST(Runtime, AllocationsAreAttributedToScopesOnEveryThread) {
  std::int64_t tid_a = 0;
  std::int64_t tid_b = 0;
  bool ring_before_first_scope = true;
  std::thread a([&] {
    tid_a = this_tid();
    allocating_work(10);
  });
  std::thread b([&] {
    tid_b = this_tid();
    detail::record_allocation(1000); // no ring yet, so no scope either: not recorded
    ring_before_first_scope = detail::tls_ring != nullptr;
    allocating_work(100);
    detail::record_allocation(5); // outside any scope
  });
  a.join();
  b.join();
  EXPECT_FALSE(ring_before_first_scope) << "record_allocation must never register a ring";
  const Snapshot s = trace::snapshot();
  const ThreadInfo* ta = find_thread(s, tid_a);
  const ThreadInfo* tb = find_thread(s, tid_b);
  ASSERT_TRUE(ta && tb);
  EXPECT_EQ(find(ta->functions, "work")->allocated_self, (AllocationCounts{10, 1}));
  EXPECT_EQ(find(ta->functions, "work")->allocated_total, (AllocationCounts{60, 3}));
  EXPECT_EQ(find(ta->functions, "leaf")->allocated_self, (AllocationCounts{50, 2}));
  EXPECT_EQ(find(tb->functions, "work")->allocated_total, (AllocationCounts{600, 3}));
  EXPECT_EQ(tb->allocations.all, (AllocationCounts{605, 4}));
  EXPECT_EQ(tb->allocations.outside_scopes, (AllocationCounts{5, 1}));
  EXPECT_EQ(find(s.functions, "work")->allocated_self, (AllocationCounts{110, 2}));
  EXPECT_EQ(find(s.functions, "work")->allocated_total, (AllocationCounts{660, 6}));
  EXPECT_EQ(find(s.functions, "leaf")->allocated_total, (AllocationCounts{550, 4}));
  EXPECT_EQ(s.allocations.all, (AllocationCounts{665, 7}));
  EXPECT_EQ(s.allocations.outside_scopes, (AllocationCounts{5, 1}));
  EXPECT_EQ(find(s.functions, "leaf")->stats.calls, 4u);
  EXPECT_EQ(s.records.dropped, 0u);
}

TEST(Runtime, AllocationsNeverTakeTheSlotOfAPendingEnd) {
  trace::pause_collector_for_testing(true);
  trace::collect_now();
  const std::uint64_t kAllocations = trace::Settings{}.ring_records * 5 / 4; // more than a ring
  std::uint64_t capacity = 0;
  std::int64_t tid = 0;
  std::thread flood([&] {
    tid = this_tid();
    capacity = detail::current_ring()->capacity;
    HOTSCOPE_SCOPE("allocating");
    for (std::uint64_t i = 0; i < kAllocations; ++i) {
      detail::record_allocation(8);
    }
  });
  flood.join();
  trace::pause_collector_for_testing(false);
  const Snapshot s = trace::snapshot();
  const ThreadInfo* t = find_thread(s, tid);
  ASSERT_NE(t, nullptr);
  const std::uint64_t written = kAllocations + 2;
  EXPECT_EQ(t->records.written, written);
  EXPECT_EQ(t->records.kept, capacity);
  EXPECT_EQ(t->records.kept + t->records.dropped, written);
  // The scope kept its END, and every kept allocation is attributed to it.
  const FunctionStats* f = find(t->functions, "allocating");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->stats.calls, 1u);
  EXPECT_EQ(f->allocated_self, (AllocationCounts{8 * (capacity - 2), capacity - 2}));
  EXPECT_EQ(t->allocations.all, f->allocated_self);
  EXPECT_EQ(s.trace_open_scopes, 0u);
}

TEST(Runtime, MessagesThreadNamesAndCountersReachTheTrace) {
  std::thread named([] {
    HOTSCOPE_THREAD_NAME(std::string("worker-") + std::to_string(7));
    HOTSCOPE_SCOPE("work");
    HOTSCOPE_MESSAGE("literal message");
    const std::string dynamic = "request " + std::to_string(12345);
    HOTSCOPE_MESSAGE(dynamic);
    HOTSCOPE_MESSAGE(std::string(300, 'y'));             // cut at HOTSCOPE_INLINE_TEXT_MAX
    HOTSCOPE_MESSAGE(static_cast<const char*>(nullptr)); // a constant, but not text
    HOTSCOPE_COUNTER("queue_depth", 17);
  });
  named.join();
  const Snapshot s = trace::snapshot();
  bool named_thread = false;
  for (const auto& t : s.threads) {
    named_thread |= t.name == "worker-7";
  }
  EXPECT_TRUE(named_thread);
  std::vector<std::string> messages;
  for (const TraceEvent& e : s.trace) {
    if (e.kind == EventKind::Message) {
      messages.push_back(s.names[e.name]);
    }
  }
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0], "literal message");
  EXPECT_EQ(messages[1], "request 12345");
  EXPECT_EQ(messages[2], std::string(HOTSCOPE_INLINE_TEXT_MAX, 'y'));
  EXPECT_EQ(messages[3], "(null)");
  ASSERT_EQ(s.counters.size(), 1u);
  EXPECT_EQ(s.counters[0].name, "queue_depth");
  EXPECT_EQ(s.counters[0].last, 17);
}

void set_depth(std::int64_t value) {
  HOTSCOPE_COUNTER("depth", value);
}

// Two threads update one counter. The main thread's ring is drained first (registered first) and
// holds the latest value by time, 111; the other thread's 222 is older but drained last. Every
// output says 111, as the trace's latest C event does.
TEST(Runtime, ACountersLastValueIsTheLatestByTimeInEveryOutput) {
  clock::use_manual_clock_for_testing();
  trace::pause_collector_for_testing(true);
  trace::reset(); // the window starts on the manual clock
  set_depth(1);
  clock::advance_manual_clock(10'000);
  std::thread([] { set_depth(222); }).join();
  clock::advance_manual_clock(10'000);
  set_depth(111);
  const Snapshot s = trace::snapshot();
  ASSERT_EQ(s.counters.size(), 1u);
  EXPECT_EQ(s.counters[0].updates, 3u);
  EXPECT_EQ(s.counters[0].last, 111);

  std::ostringstream stats;
  exporters::write_stats_json(s, stats);
  EXPECT_EQ(nlohmann::json::parse(stats.str()).at("counters").at(0).at("last"), 111);
  std::ostringstream metrics;
  exporters::write_prometheus(s, metrics);
  EXPECT_NE(metrics.str().find("hotscope_series_last_value{series=\"depth\"} 111\n"),
            std::string::npos)
      << metrics.str();
  std::ostringstream table;
  exporters::write_table(s, table);
  const std::string report = table.str();
  const std::size_t row = report.find("depth", report.find("\nCounters\n"));
  ASSERT_NE(row, std::string::npos) << report;
  std::istringstream cells(report.substr(row));
  std::string name, updates, last;
  cells >> name >> updates >> last;
  EXPECT_EQ(last, "111") << report;
  std::ostringstream chrome;
  exporters::write_chrome_json(s, chrome);
  double latest_ts = -1;
  std::int64_t latest_value = 0;
  const nlohmann::json trace_json = nlohmann::json::parse(chrome.str());
  for (const auto& event : trace_json.at("traceEvents")) {
    if (event.at("ph") == "C" && event.at("ts").get<double>() >= latest_ts) {
      latest_ts = event.at("ts").get<double>();
      latest_value = event.at("args").at("value").get<std::int64_t>();
    }
  }
  EXPECT_EQ(latest_value, 111) << chrome.str();
}

} // namespace

#if !HOTSCOPE_WITH_AGENT
// A build without the agent (HOTSCOPE_AGENT=OFF) records as usual; asked for the agent, it says
// why there is none.
TEST(Runtime, WithoutTheAgentStartAgentSaysItIsNotBuilt) {
  EXPECT_EQ(hotscope::start_agent().problem(),
            "hotscope: this hotscope was built without the live agent (HOTSCOPE_AGENT=OFF)");
}
#endif
