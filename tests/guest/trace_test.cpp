// Guest batches end to end: through GuestTrace into the process's collector, then out of a
// snapshot and the exporters, beside the host's own events. Each test runs in its own process
// (gtest_discover_tests), so the collector and the external track numbering start fresh.
#include "guest_image.hpp"

#include "clock/clock.hpp"
#include "export/export.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace hotscope;
using namespace hotscope::guest;
using guest_test::append_text;
using guest_test::GuestImage;
using guest_test::rec;

const ThreadInfo& guest_thread(const Snapshot& snapshot) {
  for (const ThreadInfo& thread : snapshot.threads) {
    if (thread.os_tid == kExternalTidBase) {
      return thread;
    }
  }
  ADD_FAILURE() << "no guest track in the snapshot";
  static const ThreadInfo none;
  return none;
}

const FunctionStats* find(const std::vector<FunctionStats>& functions, const std::string& name) {
  for (const FunctionStats& function : functions) {
    if (function.name == name) {
      return &function;
    }
  }
  return nullptr;
}

// The guest runs a 3 GHz TSC; its tick 3'000'000 is host tick start + 1000 (1 host tick = 1 ns).
struct Guest {
  explicit Guest(std::uint64_t start)
      : trace("guest: sample", image.memory(), ClockAnchor{3'000'000, start + 1000, 3e9, 1e9}) {}
  std::optional<Diagnostic> flush(const std::vector<hotscope_record>& records) {
    return trace.flush(image.put_records(records), records.size(), 4096);
  }
  static std::uint64_t at_ns(std::uint64_t ns) { return 3'000'000 + 3 * (ns - 1000); }

  GuestImage image;
  std::uint64_t dispatch = image.put_location("dispatch_function", "guest.c", 5);
  std::uint64_t call = image.put_location("call_guest_function", "guest.c", 9);
  GuestTrace trace;
};

TEST(GuestTrace, AValidBatchIsItsOwnTrackBesideTheHostsThreads) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  const std::uint64_t start = clock::now_ticks();
  Guest guest(start);
  {
    HOTSCOPE_SCOPE("host_work"); // from 0 to 5000 ns
    clock::advance_manual_clock(5000);
  }
  std::vector<hotscope_record> records{
      rec(HOTSCOPE_RECORD_BEGIN, Guest::at_ns(1100), guest.dispatch),
      rec(HOTSCOPE_RECORD_BEGIN, Guest::at_ns(1200), guest.call)};
  append_text(records, HOTSCOPE_RECORD_MESSAGE_INLINE, Guest::at_ns(1300), "hello from the guest");
  records.push_back(rec(HOTSCOPE_RECORD_END, Guest::at_ns(1500), guest.call));
  records.push_back(rec(HOTSCOPE_RECORD_END, Guest::at_ns(2000), guest.dispatch));
  const auto problem = guest.flush(records);
  ASSERT_FALSE(problem) << problem->to_string();

  const Snapshot s = trace::snapshot();
  const ThreadInfo& thread = guest_thread(s);
  EXPECT_EQ(thread.name, "guest: sample");
  EXPECT_EQ(thread.records.kept, 6u);
  EXPECT_EQ(thread.records.dropped, 0u);
  // The guest's functions, in host nanoseconds, in the process table and the track's own.
  const FunctionStats* dispatch = find(s.functions, "dispatch_function");
  const FunctionStats* call = find(s.functions, "call_guest_function");
  ASSERT_TRUE(dispatch && call);
  EXPECT_EQ(dispatch->file, "guest.c");
  EXPECT_EQ(dispatch->stats.calls, 1u);
  EXPECT_EQ(dispatch->stats.total_ns, 900u);
  EXPECT_EQ(dispatch->stats.self_ns, 600u);
  EXPECT_EQ(call->stats.total_ns, 300u);
  EXPECT_NE(find(thread.functions, "call_guest_function"), nullptr);
  EXPECT_EQ(find(thread.functions, "host_work"), nullptr);

  // Events in one timeline: the guest's fall inside the host scope that ran meanwhile.
  std::vector<std::pair<std::uint64_t, std::string>> timeline;
  for (const TraceEvent& event : s.trace) {
    timeline.emplace_back(event.ns, (event.thread == thread.index ? "guest " : "host ") +
                                        s.names.at(event.name));
  }
  const std::vector<std::pair<std::uint64_t, std::string>> expected{
      {0, "host host_work"},
      {1100, "guest dispatch_function"},
      {1200, "guest call_guest_function"},
      {1300, "guest hello from the guest"},
      {1500, "guest call_guest_function"},
      {2000, "guest dispatch_function"},
      {5000, "host host_work"}};
  EXPECT_EQ(timeline, expected);

  std::ostringstream chrome, tree, folded;
  exporters::write_chrome_json(s, chrome);
  exporters::write_text_tree(s, tree);
  exporters::write_folded(s, folded);
  // The guest is a process of its own in trace.json, with ids Perfetto reads as 32-bit values.
  EXPECT_NE(
      chrome.str().find(
          R"({"ph":"M","name":"process_name","pid":1073741824,"tid":1073741824,"args":{"name":"guest: sample"}})"),
      std::string::npos)
      << chrome.str();
  EXPECT_NE(
      chrome.str().find(
          R"("name":"call_guest_function","cat":"function","pid":1073741824,"tid":1073741824)"),
      std::string::npos);
  EXPECT_EQ(chrome.str().find("4294967296"), std::string::npos);
  EXPECT_NE(tree.str().find("== guest: sample (tid 4294967296) =="), std::string::npos);
  EXPECT_NE(tree.str().find("[0.001ms  ]   > call_guest_function"), std::string::npos)
      << tree.str();
  EXPECT_NE(tree.str().find("    - hello from the guest"), std::string::npos);
  EXPECT_NE(folded.str().find(";guest: sample;dispatch_function;call_guest_function 300\n"),
            std::string::npos)
      << folded.str();
}

TEST(GuestTrace, RejectedBatchesCountAsTheTracksDroppedRecords) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  Guest guest(clock::now_ticks());
  const auto problem = guest.flush({rec(HOTSCOPE_RECORD_BEGIN, Guest::at_ns(1100), guest.dispatch),
                                    rec(HOTSCOPE_RECORD_END, Guest::at_ns(1050), guest.dispatch)});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->record, 1u);
  EXPECT_FALSE(guest.flush({rec(HOTSCOPE_RECORD_BEGIN, Guest::at_ns(1100), guest.dispatch),
                            rec(HOTSCOPE_RECORD_END, Guest::at_ns(1400), guest.dispatch)}));
  const Snapshot s = trace::snapshot();
  const ThreadInfo& thread = guest_thread(s);
  EXPECT_EQ(thread.records.dropped, 2u);
  EXPECT_EQ(thread.records.kept, 2u);
  EXPECT_EQ(thread.records.written, 4u);
  ASSERT_NE(find(s.functions, "dispatch_function"), nullptr);
  EXPECT_EQ(find(s.functions, "dispatch_function")->stats.total_ns, 300u);
  EXPECT_EQ(guest.trace.counts().batches_rejected, 1u);
  EXPECT_EQ(guest.trace.counts().batches_accepted, 1u);
  // The same counts reach the process's statistics (the console's guests tab reads them there).
  ASSERT_TRUE(thread.batches);
  EXPECT_EQ(thread.batches->accepted, 1u);
  EXPECT_EQ(thread.batches->rejected, 1u);
  EXPECT_EQ(thread.batches->records_rejected, 2u);
  EXPECT_EQ(thread.batches->last_rejection, problem->to_string());
}

TEST(GuestTrace, ScopesOpenWhenTheGuestStopsAreClosedThenAndTheTrackEnds) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  const std::uint64_t start = clock::now_ticks();
  {
    Guest guest(start);
    ASSERT_FALSE(guest.flush({rec(HOTSCOPE_RECORD_BEGIN, Guest::at_ns(1000), guest.dispatch)}));
    clock::advance_manual_clock(4000); // the guest loops until the host stops it
    guest.trace.finish();
    EXPECT_EQ(guest.trace.counts().nesting_repairs, 1u);
    const Snapshot s = trace::snapshot();
    ASSERT_NE(find(s.functions, "dispatch_function"), nullptr);
    EXPECT_EQ(find(s.functions, "dispatch_function")->stats.total_ns, 3000u);
    EXPECT_FALSE(guest_thread(s).exited);
  }
  EXPECT_TRUE(guest_thread(trace::snapshot()).exited);
}

} // namespace
