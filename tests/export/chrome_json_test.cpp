#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace hotscope {
namespace {

using nlohmann::json;

std::string chrome_text(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_chrome_json(snapshot, out);
  return out.str();
}

json chrome(const Snapshot& snapshot) {
  return json::parse(chrome_text(snapshot));
}

// Names of the events with phase `ph`, in file order.
std::vector<std::string> names_of(const json& trace, const std::string& ph) {
  std::vector<std::string> names;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == ph) {
      names.push_back(event["name"]);
    }
  }
  return names;
}

TEST(ExportChromeJson, ObjectFormWithMetadataAndNoEmptyElements) {
  const json trace = chrome(testing::known_snapshot());
  ASSERT_TRUE(trace.is_object());
  EXPECT_EQ(trace["displayTimeUnit"], "ns");
  for (const json& event : trace["traceEvents"]) {
    ASSERT_TRUE(event.contains("ph")) << event.dump(); // speedscope rejects the file otherwise
    EXPECT_EQ(event["pid"], 4242);
    if (event["ph"] != "M") {
      EXPECT_TRUE(event["ts"].is_number()) << event.dump();
    }
  }
  const json& first = trace["traceEvents"][0];
  EXPECT_EQ(first["name"], "process_name");
  EXPECT_EQ(first["args"]["name"], "demo");

  std::map<std::int64_t, std::string> thread_names;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      thread_names[event["tid"]] = event["args"]["name"];
    }
  }
  EXPECT_EQ(thread_names,
            (std::map<std::int64_t, std::string>{{4242, "main"}, {4243, "thread 4243"}}));
}

TEST(ExportChromeJson, EveryBeginHasAMatchingEndOnItsThread) {
  const json trace = chrome(testing::known_snapshot());
  std::map<std::int64_t, std::vector<json>> open;
  int ends = 0;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "B") {
      EXPECT_EQ(event["cat"], "function");
      open[event["tid"]].push_back(event);
    } else if (event["ph"] == "E") {
      auto& stack = open[event["tid"]];
      ASSERT_FALSE(stack.empty()) << "E without B: " << event.dump();
      EXPECT_EQ(event["name"], stack.back()["name"]);
      EXPECT_EQ(event["cat"], stack.back()["cat"]);
      EXPECT_GE(event["ts"].get<double>(), stack.back()["ts"].get<double>());
      stack.pop_back();
      ++ends;
    }
  }
  EXPECT_EQ(ends, 3);
  for (const auto& [tid, stack] : open) {
    EXPECT_TRUE(stack.empty()) << "unclosed scope on tid " << tid;
  }
}

TEST(ExportChromeJson, TimesAreMicrosecondsWithThreeDecimals) {
  const std::string text = chrome_text(testing::known_snapshot());
  EXPECT_NE(
      text.find(R"("name":"Tree::insert","cat":"function","pid":4242,"tid":4242,"ts":2000.500})"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("tid":4243,"ts":1500.000})"), std::string::npos) << text;
}

TEST(ExportChromeJson, MessagesAreInstantsAndCountersCarryTheirValue) {
  const json trace = chrome(testing::known_snapshot());
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "i") {
      EXPECT_EQ(event["name"], "gc-peak");
      EXPECT_EQ(event["s"], "t");
      EXPECT_EQ(event["ts"], 3000.0);
    } else if (event["ph"] == "C") {
      EXPECT_EQ(event["name"], "heap");
      EXPECT_EQ(event["args"], (json{{"value", 10592}}));
    }
  }
  EXPECT_EQ(names_of(trace, "i").size(), 1u);
  EXPECT_EQ(names_of(trace, "C").size(), 1u);
}

TEST(ExportChromeJson, OtherDataCarriesClockAndRecordAccounting) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.trace_evicted = 7;
  snapshot.trace_open_scopes = 1;
  snapshot.threads_folded = 3;
  const json other = chrome(snapshot)["otherData"];
  EXPECT_EQ(other["hotscope_version"], "0.1.0");
  EXPECT_EQ(other["clock_source"], "tsc");
  EXPECT_EQ(other["frequency_origin"], "cpuid");
  EXPECT_EQ(other["ticks_per_second"], 3e9);
  EXPECT_EQ(other["records_written"], 20);
  EXPECT_EQ(other["records_kept"], 18);
  EXPECT_EQ(other["records_dropped"], 2);
  EXPECT_EQ(other["trace_evicted"], 7);
  EXPECT_EQ(other["trace_open_scopes"], 1);
  EXPECT_EQ(other["threads_folded"], 3);
}

TEST(ExportChromeJson, AwkwardNamesRoundTrip) {
  const std::vector<std::string> names = {"say \"hi\"", R"(C:\path\to)",
                                          "tab\there\nnewline\x01\x1f", "ünïcødé µs 日本語 🔥",
                                          "a;b,c{}[]:"};
  testing::SnapshotBuilder b;
  const std::uint32_t t = b.thread(4242, "thread \"q\" \\ ü");
  std::uint64_t ns = 0;
  for (const std::string& name : names) {
    b.begin(t, ns += 10, name);
  }
  b.message(t, ns += 10, names[0]);
  b.counter(t, ns += 10, names[1], -5);
  for (auto name = names.rbegin(); name != names.rend(); ++name) {
    b.end(t, ns += 10, *name);
  }
  const json trace = chrome(b.build());
  EXPECT_EQ(names_of(trace, "B"), names);
  EXPECT_EQ(names_of(trace, "E"), std::vector<std::string>(names.rbegin(), names.rend()));
  EXPECT_EQ(names_of(trace, "i"), std::vector<std::string>{names[0]});
  EXPECT_EQ(names_of(trace, "C"), std::vector<std::string>{names[1]});
  EXPECT_EQ(trace["traceEvents"][1]["args"]["name"], "thread \"q\" \\ ü");
}

// Perfetto's JSON importer reads pid and tid as 32-bit values: a guest track's os_tid (2^32 + n)
// would land on the host's thread n. Each guest is a process of its own, named after it.
TEST(ExportChromeJson, GuestTracksAreProcessesOfTheirOwnWith32BitIds) {
  testing::SnapshotBuilder b;
  const std::uint32_t host = b.thread(4242, "main");
  const std::uint32_t first = b.thread(kExternalTidBase, "guest: sample");
  const std::uint32_t second = b.thread(kExternalTidBase + 1, "guest: other");
  b.begin(host, 10, "dispatch").begin(first, 20, "handle").message(second, 25, "hello");
  b.end(first, 30, "handle").end(host, 40, "dispatch");
  const json trace = chrome(b.build());

  std::map<std::int64_t, std::string> process_names;
  std::map<std::string, std::set<std::pair<std::int64_t, std::int64_t>>> ids_by_name;
  for (const json& event : trace["traceEvents"]) {
    const std::int64_t pid = event["pid"];
    const std::int64_t tid = event["tid"];
    EXPECT_GE(pid, 0) << event.dump();
    EXPECT_LE(pid, 0xFFFFFFFF) << event.dump();
    EXPECT_GE(tid, 0) << event.dump();
    EXPECT_LE(tid, 0xFFFFFFFF) << event.dump();
    if (event["name"] == "process_name") {
      process_names[pid] = event["args"]["name"];
    } else {
      ids_by_name[event["name"] == "thread_name" ? event["args"]["name"] : event["name"]].insert(
          {pid, tid});
    }
  }
  ASSERT_EQ(process_names.size(), 3u);
  EXPECT_EQ(process_names[4242], "demo");
  const auto only = [&](const std::string& name) {
    EXPECT_EQ(ids_by_name[name].size(), 1u) << name;
    return *ids_by_name[name].begin();
  };
  using Ids = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(only("main"), Ids(4242, 4242));
  EXPECT_EQ(only("dispatch"), only("main"));
  const auto [sample_pid, sample_tid] = only("guest: sample");
  EXPECT_EQ(process_names[sample_pid], "guest: sample");
  EXPECT_EQ(only("handle"), only("guest: sample"));
  const auto [other_pid, other_tid] = only("guest: other");
  EXPECT_EQ(process_names[other_pid], "guest: other");
  EXPECT_EQ(only("hello"), only("guest: other"));
  // No real process has such a pid (pid_max is at most 2^22), and the guests differ.
  EXPECT_GT(sample_pid, 1 << 22);
  EXPECT_GT(other_pid, 1 << 22);
  EXPECT_NE(sample_pid, other_pid);
}

TEST(ExportChromeJson, InvalidUtf8BecomesReplacementCharacter) {
  testing::SnapshotBuilder b;
  const std::uint32_t t = b.thread(1, "");
  b.message(t, 5, "cut mid-character \xC3");
  const json trace = chrome(b.build()); // throws if the output were not valid JSON
  EXPECT_EQ(names_of(trace, "i"), std::vector<std::string>{"cut mid-character \xEF\xBF\xBD"});
}

} // namespace
} // namespace hotscope
