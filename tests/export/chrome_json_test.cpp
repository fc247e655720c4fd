#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>
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

TEST(ExportChromeJson, InvalidUtf8BecomesReplacementCharacter) {
  testing::SnapshotBuilder b;
  const std::uint32_t t = b.thread(1, "");
  b.message(t, 5, "cut mid-character \xC3");
  const json trace = chrome(b.build()); // throws if the output were not valid JSON
  EXPECT_EQ(names_of(trace, "i"), std::vector<std::string>{"cut mid-character \xEF\xBF\xBD"});
}

} // namespace
} // namespace hotscope
