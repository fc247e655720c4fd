#include "export/export.hpp"
#include "snapshot_fixture.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace hotscope {
using hotscope::test_support::lines_of;

namespace {

std::string folded(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_folded(snapshot, out);
  return out.str();
}

std::vector<std::string> split(const std::string& stack, char separator) {
  std::vector<std::string> parts;
  std::istringstream in(stack);
  for (std::string part; std::getline(in, part, separator);) {
    parts.push_back(part);
  }
  return parts;
}

TEST(ExportFolded, SelfTimesOfTheKnownSnapshot) {
  const std::string text = folded(testing::known_snapshot());
  EXPECT_EQ(text, "demo;main;main 5001000\n"
                  "demo;main;main;Tree::insert 3000000\n"
                  "demo;thread-4243;load 3000000\n"
                  "# hotscope 0.1.0 clock=tsc records written=20 kept=18 dropped=2\n"
                  "# trace window from 0 ns: evicted=0 open_scopes=0\n");
}

TEST(ExportFolded, LinesFollowTheGrammarAndCountsSumToBusyTime) {
  testing::SnapshotBuilder b;
  const std::uint32_t t = b.thread(7, "worker");
  // Recursion and repeated calls: equal stacks must aggregate into one line.
  b.begin(t, 100, "f").begin(t, 150, "f").end(t, 170, "f").end(t, 200, "f");
  b.begin(t, 300, "f").begin(t, 310, "f").end(t, 340, "f").end(t, 400, "f");
  b.begin(t, 500, "g").end(t, 500, "g"); // zero self time: no line
  const std::string text = folded(b.build());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');

  const std::regex line_grammar(R"(^(.*) (\d+)$)");
  std::uint64_t sum = 0;
  int stacks = 0;
  for (const std::string& line : lines_of(text)) {
    if (line.starts_with("#")) {
      continue;
    }
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, line_grammar)) << line;
    EXPECT_GE(split(match[1], ';').size(), 2u) << line;
    const std::uint64_t count = std::stoull(match[2]);
    EXPECT_GT(count, 0u) << line;
    sum += count;
    ++stacks;
  }
  EXPECT_EQ(stacks, 2); // demo;worker;f and demo;worker;f;f
  EXPECT_EQ(sum, 100u + 100u);
  EXPECT_NE(text.find("demo;worker;f 150\n"), std::string::npos) << text;
  EXPECT_NE(text.find("demo;worker;f;f 50\n"), std::string::npos) << text;
}

TEST(ExportFolded, SeparatorsInsideFramesAreReplaced) {
  testing::SnapshotBuilder b;
  b.snapshot().process_name = "my;app";
  const std::uint32_t t = b.thread(1, "pool\nworker");
  b.begin(t, 0, "a;b\nc\rd").end(t, 10, "a;b\nc\rd");
  EXPECT_EQ(lines_of(folded(b.build()))[0], "my:app;pool:worker;a:b:c:d 10");
}

TEST(ExportFolded, StacksNeverEndInWhatLooksLikeASecondCount) {
  testing::SnapshotBuilder b;
  const std::uint32_t t = b.thread(1, "main");
  b.begin(t, 0, "phase 2").begin(t, 10, "step 12").end(t, 15, "step 12").end(t, 20, "phase 2");
  // The scope is renamed inside the stack too, so it stays one frame in the flame graph.
  EXPECT_EQ(
      lines_of(folded(b.build())),
      (std::vector<std::string>{"demo;main;phase_2 15", "demo;main;phase_2;step_12 5",
                                "# hotscope 0.1.0 clock=tsc records written=0 kept=0 dropped=0",
                                "# trace window from 0 ns: evicted=0 open_scopes=0"}));
}

TEST(ExportFolded, DropCountsAreReportedAtTheEnd) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.trace_evicted = 4;
  const auto lines = lines_of(folded(snapshot));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2],
            "# hotscope 0.1.0 clock=tsc records written=20 kept=18 dropped=2");
  EXPECT_EQ(lines.back(), "# trace window from 0 ns: evicted=4 open_scopes=0");
}

} // namespace
} // namespace hotscope
