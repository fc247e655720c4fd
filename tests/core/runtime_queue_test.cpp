// hotscope::Queue end to end: names given at run time are interned once, feed the same queue as
// the literal macros, stay bounded, and their flows reach trace.json even from functions that
// open no scope. Each test runs in its own process (gtest_discover_tests), so the name table and
// the collector start fresh every time.
#include "export/export.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace hotscope;
using nlohmann::json;

const QueueStats* find_queue(const Snapshot& s, const std::string& name) {
  for (const QueueStats& queue : s.queues) {
    if (queue.name == name) {
      return &queue;
    }
  }
  return nullptr;
}

TEST(RuntimeQueue, ARuntimeNameFeedsTheQueueOfTheSameLiteralName) {
  const std::string jobs_name = std::string("jo") + "bs";
  const Queue jobs{jobs_name};
  const Queue again{"jobs"};
  EXPECT_EQ(detail::queue_location(jobs_name), detail::queue_location("jobs"));
  EXPECT_NE(detail::queue_location("jobs"), detail::queue_location("other"));
  jobs.set_capacity(8);
  jobs.push(1);
  again.pop(1);
  int item = 0;
  again.push(&item);
  HOTSCOPE_QUEUE_POP("jobs", &item);
  HOTSCOPE_QUEUE_PUSH("jobs", 3);
  jobs.pop(3);
  Queue{"other"}.push(5);

  const Snapshot s = trace::snapshot();
  ASSERT_EQ(s.queues.size(), 2u);
  const QueueStats* q = find_queue(s, "jobs");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->pushed, 3u);
  EXPECT_EQ(q->popped, 3u);
  EXPECT_EQ(q->wait.calls, 3u); // every pop found its push, whichever way each was named
  EXPECT_EQ(q->popped_never_pushed, 0u);
  EXPECT_EQ(q->capacity, 8u);
  const QueueStats* other = find_queue(s, "other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->pushed, 1u);
}

TEST(RuntimeQueue, NamesAreCutLikeAnyRuntimeTextAndKeptForEver) {
  const std::string long_name(300, 'q');
  const hotscope_source_location* location = detail::queue_location(long_name);
  EXPECT_EQ(std::string(location->name), std::string(HOTSCOPE_INLINE_TEXT_MAX, 'q'));
  EXPECT_EQ(detail::queue_location(std::string(HOTSCOPE_INLINE_TEXT_MAX, 'q')), location);
  EXPECT_EQ(std::string(detail::queue_location(std::string("nul\0after", 9))->name), "nul");
  {
    std::string temporary = "short-lived";
    location = detail::queue_location(temporary);
    temporary.assign(40, 'x'); // the interned copy does not follow the caller's string
  }
  EXPECT_STREQ(location->name, "short-lived");
}

TEST(RuntimeQueue, NamesPastTheBoundShareOneQueueAndAreReportedOnce) {
  std::vector<const hotscope_source_location*> locations;
  for (int i = 0; i < HOTSCOPE_QUEUE_NAMES_MAX; ++i) {
    locations.push_back(detail::queue_location("q" + std::to_string(i)));
  }
  testing::internal::CaptureStderr();
  const Queue late{"late"};
  const Queue later{"later"};
  const std::string stderr_text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(stderr_text, "hotscope: \"late\" and later new names are counted as "
                         "(queues past the first 1024 names)\n");
  EXPECT_EQ(detail::queue_location("late"), detail::queue_location("later"));
  EXPECT_EQ(detail::queue_location("q0"), locations.front()); // known names are still found
  late.push(1);
  later.push(2);
  late.pop(2);

  const Snapshot s = trace::snapshot();
  const QueueStats* overflow = find_queue(s, "(queues past the first 1024 names)");
  ASSERT_NE(overflow, nullptr);
  EXPECT_EQ(overflow->pushed, 2u);
  EXPECT_EQ(overflow->popped, 1u);
  EXPECT_EQ(overflow->wait.calls, 1u);
}

// Run under TSan by scripts/test.sh (the suite's name matches its regex).
TEST(RuntimeQueue, ThreadsInterningTheSameNamesAtOnceGetOneQueuePerName) {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::vector<const hotscope_source_location*> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      const Queue queue{"shared-" + std::to_string(t % 2)};
      queue.push(t);
      seen[t] = detail::queue_location("shared-" + std::to_string(t % 2));
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 2; t < kThreads; ++t) {
    EXPECT_EQ(seen[t], seen[t % 2]) << t;
  }
  EXPECT_NE(seen[0], seen[1]);
  const Snapshot s = trace::snapshot();
  ASSERT_EQ(s.queues.size(), 2u);
  EXPECT_EQ(s.queues[0].name, "shared-0");
  EXPECT_EQ(s.queues[0].pushed, kThreads / 2u);
  EXPECT_EQ(s.queues[1].name, "shared-1");
  EXPECT_EQ(s.queues[1].pushed, kThreads / 2u);
}

// Another thread interns names without pause, so it often holds the table's lock at a fork: each
// child must still intern a name of its own (an alarm ends a child that waits for the lock).
TEST(RuntimeQueue, AForkedChildInternsNamesWhateverItsParentWasDoing) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      const Queue queue{i % 2 == 0 ? "even" : "odd"};
    }
  });
  int children_ok = 0;
  constexpr int kForks = 50;
  for (int i = 0; i < kForks; ++i) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(5);
      const Queue queue{"child"};
      _exit(detail::queue_location("child") != nullptr ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    children_ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  stop = true;
  busy.join();
  EXPECT_EQ(children_ok, kForks);
}

// Neither function opens a scope: its push or pop is all the thread records.
void push_unscoped(const Queue& queue, int item) {
  queue.push(item);
}
void pop_unscoped(const Queue& queue, int item) {
  queue.pop(item);
}

// The innermost slice open on its thread when each flow event of trace.json comes, by flow
// phase ("s", "f") and id; also checks every flow event lies inside a slice.
std::map<std::string, std::map<std::uint64_t, json>> flow_slices(const json& trace) {
  std::map<std::int64_t, std::vector<json>> open; // by tid
  std::map<std::string, std::map<std::uint64_t, json>> slices;
  for (const json& event : trace.at("traceEvents")) {
    const std::string ph = event.at("ph");
    if (ph == "B") {
      open[event.at("tid")].push_back(event);
    } else if (ph == "E") {
      open[event.at("tid")].pop_back();
    } else if (ph == "s" || ph == "f") {
      const std::vector<json>& stack = open[event.at("tid")];
      EXPECT_FALSE(stack.empty()) << "a flow event outside any slice: " << event.dump();
      if (ph == "f") {
        EXPECT_EQ(event.value("bp", ""), "e") << event.dump();
      }
      slices[ph][event.at("id")] = stack.empty() ? json() : stack.back();
    }
  }
  return slices;
}

TEST(RuntimeQueue, PushesAndPopsOutsideAnyScopeStillGetTheirArrowInTraceJson) {
  const Queue jobs{"jobs"};
  std::thread producer([&] {
    HOTSCOPE_THREAD_NAME("producer");
    push_unscoped(jobs, 1);
    HOTSCOPE_SCOPE("produce");
    push_unscoped(jobs, 2);
  });
  producer.join();
  std::thread consumer([&] {
    HOTSCOPE_THREAD_NAME("consumer");
    {
      HOTSCOPE_SCOPE("consume");
      pop_unscoped(jobs, 1);
    }
    pop_unscoped(jobs, 2);
  });
  consumer.join();

  std::ostringstream out;
  exporters::write_chrome_json(trace::snapshot(), out);
  const auto slices = flow_slices(json::parse(out.str()));
  ASSERT_EQ(slices.count("s"), 1u) << out.str();
  ASSERT_EQ(slices.count("f"), 1u) << out.str();
  const auto& starts = slices.at("s");
  const auto& finishes = slices.at("f");
  ASSERT_EQ(starts.size(), 2u) << out.str();
  ASSERT_EQ(finishes.size(), 2u) << out.str();
  // Item 1: pushed outside any scope, popped inside "consume"; item 2 the other way round.
  EXPECT_EQ(starts.at(1).at("name"), "push jobs");
  EXPECT_EQ(starts.at(1).at("cat"), "queue");
  EXPECT_EQ(finishes.at(1).at("name"), "consume");
  EXPECT_EQ(starts.at(2).at("name"), "produce");
  EXPECT_EQ(finishes.at(2).at("name"), "pop jobs");
  EXPECT_EQ(finishes.at(2).at("cat"), "queue");
}

} // namespace
