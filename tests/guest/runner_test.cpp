// The guest runners end to end (docs/guest.md): the sample guest and the hostile guests, on KVM
// (skipped where /dev/kvm cannot be used) and as a child process (everywhere). Each case starts
// its own guest with its own track name, so the process-wide trace keeps them apart.
#include "clock/clock.hpp"
#include "guest/runner/runner.hpp"
#include "support/scratch_dir.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hotscope::guest {
namespace {

enum class Transport { Kvm, Process };

// Modes of guest/hostile/hostile.c.
enum HostileMode : std::uint64_t {
  kBehave = 0,
  kCountOverCapacity = 1,
  kAddressOutside = 2,
  kAddressStraddlesEnd = 3,
  kFloodFlushes = 4,
  kReturnWithoutFlush = 5,
  kLoopForever = 6,
  kCrash = 7,
  kPrintTooLong = 8,
  kPrivilegedInstruction = 9,
  kWriteHostStructures = 10,
  kUnknownPort = 11,
  kCloseChannelAndLoop = 12,
  kFillBuffer = 13,
  kHeapUnknownFree = 14,
  kHeapDoubleFree = 15,
  kHeapAbsurdSize = 16,
  kHeapTooManyLive = 17,
  kUnknownHostFunction = 18,
};

class RunnerTest : public ::testing::TestWithParam<Transport> {
protected:
  void SetUp() override {
    if (GetParam() == Transport::Kvm) {
      if (const std::string why = kvm_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << "KVM guest tests need /dev/kvm: " << why;
      }
    }
    options_.print = [this](std::string_view text) { prints_.emplace_back(text); };
    options_.diagnostic = [this](const std::string& line) { diagnostics_.push_back(line); };
    // The sample guest's host function 0; "now" moves 1000 ns per call.
    options_.host_functions = {
        {"host_time_ns", [this](std::uint64_t) { return 1000 * ++host_calls_; }}};
  }

  std::string image(const std::string& name) const {
    return std::string(HOTSCOPE_GUEST_DIR) + "/" + name +
           (GetParam() == Transport::Kvm ? ".elf" : "-process");
  }

  std::unique_ptr<Runner> start(const std::string& name, const std::string& track) {
    options_.track_name = track;
    std::string error;
    auto runner = GetParam() == Transport::Kvm ? start_kvm_guest(image(name), options_, error)
                                               : start_process_guest(image(name), options_, error);
    EXPECT_TRUE(runner) << error;
    return runner;
  }

  // The diagnostics so far, one string, for EXPECT messages and substring checks.
  std::string all_diagnostics() const {
    std::string text;
    for (const std::string& line : diagnostics_) {
      text += line + "\n";
    }
    return text;
  }

  RunnerOptions options_;
  std::vector<std::string> prints_;
  std::vector<std::string> diagnostics_;
  std::uint64_t host_calls_ = 0;
};

// The events of one track in the snapshot, in order.
std::vector<const TraceEvent*> track_events(const Snapshot& snapshot, const ThreadInfo& track) {
  std::vector<const TraceEvent*> events;
  for (const TraceEvent& event : snapshot.trace) {
    if (&snapshot.threads.at(event.thread) == &track) {
      events.push_back(&event);
    }
  }
  return events;
}

const ThreadInfo* find_track(const Snapshot& snapshot, const std::string& name) {
  for (const ThreadInfo& thread : snapshot.threads) {
    if (thread.name.find(name) != std::string::npos) {
      return &thread;
    }
  }
  return nullptr;
}

const FunctionStats* find_function(const ThreadInfo& thread, const std::string& name) {
  for (const FunctionStats& function : thread.functions) {
    if (function.name.find(name) != std::string::npos) {
      return &function;
    }
  }
  return nullptr;
}

std::string unique_track(const std::string& what) {
  static int next = 0;
  return "guest: " + what + "-" + std::to_string(next++) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

TEST_P(RunnerTest, SampleGuestNestedCallsReachTheTraceOnTheHostsTimeline) {
  const std::string track = unique_track("sample");
  auto runner = start("sample-guest", track);
  ASSERT_TRUE(runner);
  ASSERT_EQ(prints_, std::vector<std::string>{"sample guest ready"});

  std::vector<std::uint64_t> results;
  for (std::uint64_t i = 0; i < 4; ++i) {
    HOTSCOPE_SCOPE("runner_test_call");
    const CallResult result = runner->call(i);
    ASSERT_TRUE(result.returned) << all_diagnostics();
    results.push_back(result.value);
  }
  runner->finish();
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
  EXPECT_EQ(std::set<std::uint64_t>(results.begin(), results.end()).size(), 4u);
  EXPECT_EQ(runner->counts().calls, 5u); // init and four calls
  EXPECT_EQ(runner->trace_counts().batches_rejected, 0u);
  EXPECT_EQ(runner->trace_counts().nesting_repairs, 0u);
  EXPECT_GE(runner->trace_counts().batches_accepted, 5u); // one flush before each return

  const Snapshot snapshot = trace::snapshot();
  const ThreadInfo* guest = find_track(snapshot, track);
  ASSERT_NE(guest, nullptr);
  const FunctionStats* dispatch = find_function(*guest, "hotscope_guest_dispatch");
  const FunctionStats* handle = find_function(*guest, "handle_request");
  const FunctionStats* parse = find_function(*guest, "parse_request");
  const FunctionStats* compute = find_function(*guest, "compute");
  const FunctionStats* checksum = find_function(*guest, "checksum");
  ASSERT_TRUE(dispatch && handle && parse && compute && checksum);
  EXPECT_EQ(dispatch->stats.calls, 4u);
  EXPECT_EQ(handle->stats.calls, 4u);
  EXPECT_EQ(compute->stats.calls, 4u);
  EXPECT_EQ(checksum->stats.calls, 4u * 2 + 2); // parse, compute, and the slow path of 0 and 3
  EXPECT_GE(handle->stats.total_ns, parse->stats.total_ns + compute->stats.total_ns);

  // Nesting and messages on the guest's track, and its time inside the host's scopes.
  std::vector<std::string> opened;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> host_calls;
  std::uint64_t host_begin = 0;
  bool saw_nested_parse = false, saw_runtime_message = false, saw_static_message = false,
       saw_stack_frame = false;
  std::uint64_t guest_first = UINT64_MAX, guest_last = 0;
  std::vector<std::uint64_t> guest_dispatch_begins;
  for (const TraceEvent& event : snapshot.trace) {
    const std::string& name = snapshot.names.at(event.name);
    const ThreadInfo& thread = snapshot.threads.at(event.thread);
    if (&thread != guest) {
      if (name == "runner_test_call" && event.kind == EventKind::Begin) {
        host_begin = event.ns;
      } else if (name == "runner_test_call" && event.kind == EventKind::End) {
        host_calls.emplace_back(host_begin, event.ns);
      }
      continue;
    }
    if (event.kind == EventKind::Begin) {
      if (name.find("parse_request") != std::string::npos && opened.size() >= 2 &&
          opened.back().find("handle_request") != std::string::npos) {
        saw_nested_parse = true;
      }
      if (name.find("hotscope_guest_dispatch") != std::string::npos) {
        guest_dispatch_begins.push_back(event.ns);
      }
      opened.push_back(name);
    } else if (event.kind == EventKind::End) {
      opened.pop_back();
    } else if (event.kind == EventKind::Message) {
      saw_runtime_message |= name == "request 3";
      saw_static_message |= name == "slow path";
      saw_stack_frame |= name.find("handle_request") != std::string::npos;
    }
    if (event.kind != EventKind::Counter) {
      guest_first = std::min(guest_first, event.ns);
      guest_last = std::max(guest_last, event.ns);
    }
  }
  EXPECT_TRUE(saw_nested_parse);
  EXPECT_TRUE(saw_runtime_message);
  EXPECT_TRUE(saw_static_message);
  EXPECT_TRUE(saw_stack_frame) << "the stack of request 0, symbolized from the guest's ELF";
  // Each guest dispatch starts inside the host scope of its call (1 ms for the clock anchor).
  // Earlier tests' calls are in the trace too: this test's are the last four.
  ASSERT_GE(host_calls.size(), 4u);
  host_calls.erase(host_calls.begin(), host_calls.end() - 4);
  ASSERT_EQ(guest_dispatch_begins.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GE(guest_dispatch_begins[i] + 1'000'000, host_calls[i].first) << i;
    EXPECT_LE(guest_dispatch_begins[i], host_calls[i].second + 1'000'000) << i;
  }
}

TEST_P(RunnerTest, RejectedBatchesAreDiagnosedAndTheGuestCarriesOn) {
  struct Case {
    HostileMode mode;
    std::string expected;
  };
  for (const Case& c : {Case{kCountOverCapacity, "1025 records flushed from a buffer of 1024"},
                        Case{kAddressOutside, "memory"}, Case{kAddressStraddlesEnd, "memory"},
                        Case{kPrintTooLong, "print host call of 1073741824 bytes refused"}}) {
    SCOPED_TRACE(c.mode);
    diagnostics_.clear();
    auto runner = start("hostile-guest", unique_track("hostile"));
    ASSERT_TRUE(runner);
    const CallResult bad = runner->call(c.mode);
    EXPECT_TRUE(bad.returned);
    ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
    EXPECT_NE(diagnostics_[0].find(c.expected), std::string::npos) << diagnostics_[0];
    EXPECT_FALSE(runner->stopped());
    if (c.mode != kPrintTooLong) {
      EXPECT_EQ(runner->trace_counts().batches_rejected, 1u);
    }
    const CallResult good = runner->call(kBehave);
    EXPECT_TRUE(good.returned);
    EXPECT_EQ(good.value, 42u);
    EXPECT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  }
}

TEST_P(RunnerTest, AGuestThatFloodsFlushesIsStopped) {
  options_.max_flushes_per_call = 500;
  auto runner = start("hostile-guest", unique_track("flood"));
  ASSERT_TRUE(runner);
  EXPECT_FALSE(runner->call(kFloodFlushes).returned);
  EXPECT_TRUE(runner->stopped());
  EXPECT_EQ(runner->counts().flushes, 501u);
  ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  EXPECT_NE(diagnostics_[0].find("flushed more than 500 times in one call"), std::string::npos);
  EXPECT_FALSE(runner->call(kBehave).returned) << "a stopped guest is not entered again";
}

TEST_P(RunnerTest, AGuestThatNeverFlushesBeforeReturningIsReported) {
  auto runner = start("hostile-guest", unique_track("no-flush"));
  ASSERT_TRUE(runner);
  const CallResult result = runner->call(kReturnWithoutFlush);
  ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  if (GetParam() == Transport::Kvm) {
    // The VM returns; its buffer still holds the dispatch and "never flushed" BEGINs.
    EXPECT_TRUE(result.returned);
    EXPECT_NE(diagnostics_[0].find("returned with 2 records it never flushed"), std::string::npos)
        << diagnostics_[0];
    EXPECT_EQ(runner->call(kBehave).value, 42u);
  } else {
    // The process exits in the middle of a call.
    EXPECT_FALSE(result.returned);
    EXPECT_NE(diagnostics_[0].find("exited with status 0 during a call"), std::string::npos)
        << diagnostics_[0];
  }
}

TEST_P(RunnerTest, AGuestThatLoopsForeverIsStoppedByTheTimeLimit) {
  options_.time_limit = std::chrono::milliseconds(300);
  auto runner = start("hostile-guest", unique_track("loop"));
  ASSERT_TRUE(runner);
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(runner->call(kLoopForever).returned);
  const auto waited = std::chrono::steady_clock::now() - before;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(20));
  EXPECT_TRUE(runner->stopped());
  ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  EXPECT_NE(diagnostics_[0].find("ran longer than the 300 ms time limit"), std::string::npos)
      << diagnostics_[0];
}

TEST_P(RunnerTest, AGuestThatCrashesIsStoppedAndTheHostCarriesOn) {
  auto runner = start("hostile-guest", unique_track("crash"));
  ASSERT_TRUE(runner);
  EXPECT_FALSE(runner->call(kCrash).returned);
  EXPECT_TRUE(runner->stopped());
  ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  EXPECT_NE(diagnostics_[0].find("crashed"), std::string::npos) << diagnostics_[0];
  runner.reset();
  // A new guest runs as if nothing happened.
  diagnostics_.clear();
  auto next = start("hostile-guest", unique_track("after-crash"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->call(kBehave).value, 42u);
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
}

TEST_P(RunnerTest, PrivilegedInstructionsAndTheHostsStructuresAreOutOfReach) {
  for (const HostileMode mode : {kPrivilegedInstruction, kWriteHostStructures}) {
    SCOPED_TRACE(mode);
    diagnostics_.clear();
    auto runner = start("hostile-guest", unique_track("privileged"));
    ASSERT_TRUE(runner);
    EXPECT_FALSE(runner->call(mode).returned);
    EXPECT_TRUE(runner->stopped());
    ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
    EXPECT_NE(diagnostics_[0].find("crashed"), std::string::npos) << diagnostics_[0];
  }
}

TEST_P(RunnerTest, ImagesThatAreNotGuestsAreRefused) {
  std::string error;
  const std::string not_elf = std::string(HOTSCOPE_GUEST_DIR) + "/../CMakeCache.txt";
  auto runner = GetParam() == Transport::Kvm ? start_kvm_guest(not_elf, options_, error)
                                             : start_process_guest(not_elf, options_, error);
  EXPECT_FALSE(runner);
  EXPECT_NE(error.find("not an ELF file"), std::string::npos) << error;
  runner = GetParam() == Transport::Kvm
               ? start_kvm_guest("/nonexistent/guest.elf", options_, error)
               : start_process_guest("/nonexistent/guest", options_, error);
  EXPECT_FALSE(runner);
  EXPECT_NE(error.find("cannot be read"), std::string::npos) << error;
}

// The runtime's flush of a full buffer, in the middle of a call and of open scopes: every record
// written arrives, once, in order, and the nesting holds across the flushes.
TEST_P(RunnerTest, AFullBufferFlushedInsideACallLosesAndReordersNothing) {
  const std::string track = unique_track("fill");
  auto runner = start("hostile-guest", track);
  ASSERT_TRUE(runner);
  const GuestCounts before = runner->trace_counts();
  const std::uint64_t flushes_before = runner->counts().flushes;
  const CallResult result = runner->call(kFillBuffer);
  ASSERT_TRUE(result.returned) << all_diagnostics();
  EXPECT_EQ(result.value, 1000u);
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
  // Written: the dispatch and fill scopes (2 records each) and 1,000 items of BEGIN, COUNTER, END.
  constexpr std::uint64_t kWritten = 2 + 2 + 1000 * 3;
  const GuestCounts& after = runner->trace_counts();
  EXPECT_EQ(after.records_accepted - before.records_accepted, kWritten);
  EXPECT_EQ(after.batches_rejected, 0u);
  EXPECT_EQ(after.nesting_repairs, 0u);
  // 3,004 records through a buffer of 1,024: two full-buffer flushes inside the call, one before
  // it returns.
  EXPECT_EQ(runner->counts().flushes - flushes_before, 3u);
  EXPECT_EQ(after.batches_accepted - before.batches_accepted, 3u);
  runner->finish();

  const Snapshot snapshot = trace::snapshot();
  const ThreadInfo* guest = find_track(snapshot, track);
  ASSERT_NE(guest, nullptr);
  std::vector<std::string> open;
  std::int64_t next_index = 0;
  std::uint64_t items = 0, flushes_inside_fill = 0;
  for (const TraceEvent* event : track_events(snapshot, *guest)) {
    const std::string& name = snapshot.names.at(event->name);
    if (event->kind == EventKind::Begin) {
      if (name == "item") {
        ++items;
        EXPECT_EQ(open, (std::vector<std::string>{"hotscope_guest_dispatch", "fill"}));
      }
      flushes_inside_fill += name == "host_call flush" && open.size() >= 2 && open[1] == "fill";
      open.push_back(name);
    } else if (event->kind == EventKind::End) {
      ASSERT_FALSE(open.empty());
      open.pop_back();
    } else if (event->kind == EventKind::Counter && name == "item_index") {
      EXPECT_EQ(event->value, next_index++);
      EXPECT_EQ(open.back(), "item");
    }
  }
  EXPECT_EQ(items, 1000u);
  EXPECT_EQ(next_index, 1000);
  EXPECT_EQ(flushes_inside_fill, 2u);
  EXPECT_TRUE(open.empty());
}

// Every exit to the host is a span on the guest's track, inside the guest's scope that made it,
// holding the host's time and nothing of the guest's.
TEST_P(RunnerTest, ExitsToTheHostAreSpansOnTheGuestsTrack) {
  const std::string track = unique_track("host-calls");
  auto runner = start("sample-guest", track);
  ASSERT_TRUE(runner);
  ASSERT_TRUE(runner->call(1).returned) << all_diagnostics();
  runner->finish();
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
  EXPECT_EQ(host_calls_, 2u);
  EXPECT_EQ(runner->counts().host_calls, 2u);

  const Snapshot snapshot = trace::snapshot();
  const ThreadInfo* guest = find_track(snapshot, track);
  ASSERT_NE(guest, nullptr);
  std::vector<std::string> open;
  std::map<std::string, std::vector<std::string>> inside; // span -> innermost guest scope, each
  std::int64_t request_host_ns = -1;
  std::string previous;
  for (const TraceEvent* event : track_events(snapshot, *guest)) {
    const std::string& name = snapshot.names.at(event->name);
    if (previous.rfind("host_call ", 0) == 0) { // a span holds nothing: its end comes next
      EXPECT_EQ(event->kind, EventKind::End) << previous << " then " << name;
    }
    previous.clear();
    if (event->kind == EventKind::Begin) {
      if (name.rfind("host_call ", 0) == 0) {
        inside[name].push_back(open.empty() ? "" : open.back());
        previous = name;
      }
      open.push_back(name);
    } else if (event->kind == EventKind::End) {
      ASSERT_FALSE(open.empty());
      open.pop_back();
    } else if (event->kind == EventKind::Counter && name == "request_host_ns") {
      request_host_ns = event->value;
    }
  }
  EXPECT_TRUE(open.empty());
  ASSERT_EQ(inside["host_call print"].size(), 1u);
  EXPECT_NE(inside["host_call print"][0].find("hotscope_guest_init"), std::string::npos);
  ASSERT_EQ(inside["host_call host_time_ns"].size(), 2u);
  for (const std::string& scope : inside["host_call host_time_ns"]) {
    EXPECT_NE(scope.find("handle_request"), std::string::npos) << scope;
  }
  // Flushes: before the print and as init returns; before each host call and as the call returns.
  EXPECT_EQ(inside["host_call flush"].size(), 5u);
  EXPECT_EQ(runner->counts().flushes, 5u);
  EXPECT_EQ(request_host_ns, 1000) << "the host function's results reached the guest";
}

TEST_P(RunnerTest, AnUnknownHostFunctionIsReportedAndTheGuestGetsAllOnes) {
  auto runner = start("hostile-guest", unique_track("unknown-function"));
  ASSERT_TRUE(runner);
  const CallResult result = runner->call(kUnknownHostFunction);
  ASSERT_TRUE(result.returned);
  EXPECT_EQ(result.value, UINT64_MAX);
  ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  EXPECT_NE(diagnostics_[0].find("host call of function 99, which the host does not provide (it "
                                 "has 1)"),
            std::string::npos)
      << diagnostics_[0];
  EXPECT_EQ(runner->call(kBehave).value, 42u);
  // A guest that keeps calling it does not flood the host's output.
  EXPECT_EQ(runner->call(kUnknownHostFunction).value, UINT64_MAX);
  EXPECT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
  EXPECT_EQ(runner->counts().unknown_host_calls, 2u);
  EXPECT_EQ(runner->counts().host_calls, 2u);
}

TEST_P(RunnerTest, TheImageIsIdentifiedByItsSizeAndSha256) {
  const std::string track = unique_track("identity");
  auto runner = start("sample-guest", track);
  ASSERT_TRUE(runner);
  const GuestImage& identity = runner->image();
  EXPECT_EQ(identity.path, image("sample-guest"));
  EXPECT_EQ(identity.track, track);
  EXPECT_EQ(identity.bytes, std::filesystem::file_size(identity.path));
  // coreutils' sha256sum, on its own.
  FILE* pipe = popen(("sha256sum " + identity.path).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char digest[65] = {};
  ASSERT_EQ(std::fread(digest, 1, 64, pipe), 64u);
  pclose(pipe);
  EXPECT_EQ(identity.sha256, std::string(digest));
}

// The sample guest's allocator, three requests (guest/sample/sample.cpp). Per request r: a
// 64-byte line, a token of 24 + 8 * (r % 3) bytes resized to 100 (a realloc counts as a new
// allocation of its new size), a 16-byte history entry on odd r that is never freed:
//   r = 0: 64 + 24 + 100 = 188 bytes, 3 blocks; r = 1: 64 + 32 + 100 + 16 = 212, 4;
//   r = 2: 64 + 40 + 100 = 204, 3. Total: 604 bytes in 10 blocks.
// The peak is in request 2, once the token has grown: history 16 + line 64 + token 100 = 180
// bytes in 3 blocks. At the end only request 1's history entry lives: 16 bytes in 1 block.
TEST_P(RunnerTest, TheSampleGuestsHeapProfileHasTheTotalsWorkedOutByHand) {
  auto runner = start("sample-guest", unique_track("heap"));
  ASSERT_TRUE(runner);
  for (std::uint64_t request = 0; request < 3; ++request) {
    ASSERT_TRUE(runner->call(request).returned) << all_diagnostics();
  }
  runner->finish();
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
  const GuestHeap& heap = runner->heap();
  ASSERT_TRUE(heap.used());
  const heap::Totals totals = heap.totals();
  EXPECT_EQ(totals.total_bytes, 604u);
  EXPECT_EQ(totals.total_blocks, 10u);
  EXPECT_EQ(totals.peak_bytes, 180u);
  EXPECT_EQ(totals.peak_blocks, 3u);
  EXPECT_EQ(totals.live_bytes, 16u);
  EXPECT_EQ(totals.live_blocks, 1u);
  const GuestHeapCounts& counts = heap.counts();
  EXPECT_EQ(counts.allocations, 7u);
  EXPECT_EQ(counts.reallocs, 3u);
  EXPECT_EQ(counts.frees, 6u);
  EXPECT_EQ(counts.unknown_frees + counts.double_frees + counts.unknown_reallocs +
                counts.allocations_over_live + counts.over_live_bound + counts.stacks_over_bound,
            0u);

  // DHAT's model: the sites add up to the same figures, their frames named from the image.
  const HeapProfile profile = heap.profile(clock::now_ticks(), "runner_test");
  std::uint64_t total_bytes = 0, gmax_bytes = 0, end_bytes = 0;
  for (const HeapSite& site : profile.sites) {
    total_bytes += site.total_bytes;
    gmax_bytes += site.gmax_bytes;
    end_bytes += site.end_bytes;
    EXPECT_FALSE(site.frames.empty());
  }
  EXPECT_EQ(total_bytes, 604u);
  EXPECT_EQ(gmax_bytes, 180u);
  EXPECT_EQ(end_bytes, 16u);
  // A resized block keeps the site of its allocation, as in DHAT: arena::resize is in no stack.
  const std::string object = std::filesystem::path(image("sample-guest")).filename().string();
  std::set<std::string> functions;
  for (const std::string& frame : profile.frames) {
    for (const char* name :
         {"arena::allocate", "arena::resize", "parse_request", "remember", "handle_request"}) {
      if (frame.find(std::string(": ") + name) != std::string::npos) {
        functions.insert(name);
        EXPECT_NE(frame.find("(in " + object + ")"), std::string::npos) << frame;
      }
    }
  }
  EXPECT_EQ(functions, (std::set<std::string>{"arena::allocate", "parse_request", "remember",
                                              "handle_request"}));
  EXPECT_EQ(profile.sites.size(), 3u); // the line, the token, the history entry
  EXPECT_LE(profile.gmax_us, profile.end_us);
}

// The guest's heap is hostile input: what does not add up is counted and reported once per kind,
// and host memory stays bounded.
TEST_P(RunnerTest, HostileHeapEventsAreCountedAndReportedNeverTrusted) {
  auto runner = start("hostile-guest", unique_track("heap-hostile"));
  ASSERT_TRUE(runner);
  struct Case {
    HostileMode mode;
    std::string expected;
  };
  for (const Case& c : {Case{kHeapUnknownFree, "guest heap: free of 0x300000, which is not a live "
                                               "block at hotscope_guest_"},
                        Case{kHeapDoubleFree, "guest heap: double free of 0x300000"},
                        Case{kHeapAbsurdSize, "HEAP_ALLOC of 1125899906842624 bytes is more than "
                                              "a guest can have"},
                        Case{kHeapTooManyLive, "past 65536 live blocks: not profiled"}}) {
    SCOPED_TRACE(c.mode);
    diagnostics_.clear();
    ASSERT_TRUE(runner->call(c.mode).returned) << all_diagnostics();
    ASSERT_EQ(diagnostics_.size(), 1u) << all_diagnostics();
    EXPECT_NE(diagnostics_[0].find(c.expected), std::string::npos) << diagnostics_[0];
  }
  const GuestHeapCounts& counts = runner->heap().counts();
  EXPECT_EQ(counts.unknown_frees, 1u);
  EXPECT_EQ(counts.double_frees, 1u);
  EXPECT_EQ(runner->trace_counts().batches_rejected, 1u); // the absurd size
  EXPECT_EQ(counts.allocations, 1u + 70000u);
  EXPECT_EQ(counts.over_live_bound, 70000u - GuestHeap::kMaxLiveBlocks);
  EXPECT_EQ(runner->heap().totals().live_blocks, GuestHeap::kMaxLiveBlocks);
  diagnostics_.clear();
  EXPECT_EQ(runner->call(kBehave).value, 42u);
  EXPECT_TRUE(diagnostics_.empty()) << all_diagnostics();
}

INSTANTIATE_TEST_SUITE_P(Transports, RunnerTest,
                         ::testing::Values(Transport::Kvm, Transport::Process),
                         [](const auto& info) {
                           return info.param == Transport::Kvm ? "Kvm" : "Process";
                         });

// Process only: a child that closes its channel but lives on is killed, not waited for.
TEST(ProcessRunner, AChildThatClosesItsChannelAndLivesOnIsKilled) {
  std::vector<std::string> diagnostics;
  RunnerOptions options;
  options.diagnostic = [&](const std::string& line) { diagnostics.push_back(line); };
  std::string error;
  auto runner = start_process_guest(std::string(HOTSCOPE_GUEST_DIR) + "/hostile-guest-process",
                                    options, error);
  ASSERT_TRUE(runner) << error;
  EXPECT_FALSE(runner->call(kCloseChannelAndLoop).returned);
  EXPECT_TRUE(runner->stopped());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_NE(diagnostics[0].find("closed its channel without exiting (killed) during a call"),
            std::string::npos)
      << diagnostics[0];
}

// KVM only: an exit through a port that is not hotscope's stops the guest.
TEST(KvmRunner, AnUnknownPortStopsTheGuest) {
  if (const std::string why = kvm_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "KVM guest tests need /dev/kvm: " << why;
  }
  std::vector<std::string> diagnostics;
  RunnerOptions options;
  options.diagnostic = [&](const std::string& line) { diagnostics.push_back(line); };
  std::string error;
  auto runner =
      start_kvm_guest(std::string(HOTSCOPE_GUEST_DIR) + "/hostile-guest.elf", options, error);
  ASSERT_TRUE(runner) << error;
  EXPECT_FALSE(runner->call(kUnknownPort).returned);
  EXPECT_TRUE(runner->stopped());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_NE(diagnostics[0].find("wrote to I/O port 0x80, which is not a hotscope port"),
            std::string::npos)
      << diagnostics[0];
}

// KVM only: a process guest's image (linked at 4 MiB) does not fit in 4 MiB of guest memory.
// Stripped, so that it is not recognised as a process guest first (elf_image.hpp, wrong_kind).
TEST(KvmRunner, ASegmentOutsideGuestMemoryIsRefused) {
  if (const std::string why = kvm_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "KVM guest tests need /dev/kvm: " << why;
  }
  const hotscope::testing::ScratchDir scratch("kvm-segment");
  const std::string stripped = (scratch.path() / "stripped-guest-process").string();
  ASSERT_EQ(std::system(("objcopy --strip-all " + std::string(HOTSCOPE_GUEST_DIR) +
                         "/sample-guest-process " + stripped)
                            .c_str()),
            0);
  RunnerOptions options;
  options.memory_bytes = 4u << 20;
  std::string error;
  EXPECT_FALSE(start_kvm_guest(stripped, options, error));
  EXPECT_NE(error.find("is outside guest memory"), std::string::npos) << error;
}

} // namespace
} // namespace hotscope::guest
