#include "export/common.hpp"
#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace hotscope {
namespace {

std::string table(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_table(snapshot, out);
  return out.str();
}

// The lines from the first one starting with `first` up to the next blank line.
std::vector<std::string> block(const std::string& text, const std::string& first) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (lines.empty() ? line.starts_with(first) : !line.empty()) {
      lines.push_back(line);
    } else if (!lines.empty()) {
      break;
    }
  }
  return lines;
}

std::size_t code_points(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

TEST(ExportTable, DurationsCarryUnits) {
  using exporters::detail::human_duration;
  EXPECT_EQ(human_duration(0), "0 ns");
  EXPECT_EQ(human_duration(850), "850 ns");
  EXPECT_EQ(human_duration(999.6), "1.00 µs");
  EXPECT_EQ(human_duration(1234), "1.23 µs");
  EXPECT_EQ(human_duration(4'560'000), "4.56 ms");
  EXPECT_EQ(human_duration(999'999), "1.00 ms");
  EXPECT_EQ(human_duration(7.891e9), "7.89 s");
  EXPECT_EQ(human_duration(3600e9), "3600.00 s");
}

TEST(ExportTable, BytesCarryBinaryUnits) {
  using exporters::detail::human_bytes;
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.00 KiB");
  EXPECT_EQ(human_bytes(1536), "1.50 KiB");
  EXPECT_EQ(human_bytes(1'048'570), "1023.99 KiB");
  EXPECT_EQ(human_bytes(1'048'571), "1.00 MiB"); // not "1024.00 KiB"
  EXPECT_EQ(human_bytes(3'355'443), "3.20 MiB");
  EXPECT_EQ(human_bytes(1ull << 30), "1.00 GiB");
  EXPECT_EQ(human_bytes(UINT64_MAX), "16.00 EiB");
}

TEST(ExportTable, HeaderReportsClockAndDrops) {
  const std::string text = table(testing::known_snapshot());
  EXPECT_TRUE(text.starts_with("hotscope 0.1.0: demo (pid 4242)\n"
                               "duration: 10.00 ms\n"
                               "clock: tsc, 3.000 GHz (cpuid); invariant TSC\n"
                               "records: written=20 kept=18 dropped=2\n"
                               "WARNING: 2 records dropped"))
      << text;

  Snapshot clean = testing::known_snapshot();
  clean.records.dropped = 0;
  EXPECT_EQ(table(clean).find("WARNING"), std::string::npos);
}

TEST(ExportTable, FunctionRowsInOrderWithUnitsAndShare) {
  const std::string text = table(testing::known_snapshot());
  const auto rows = block(text, "  Function");
  ASSERT_EQ(rows.size(), 4u) << text;
  EXPECT_EQ(rows[0], "  Function      Calls      Avg      P50      P95      P99    Total  % Total");
  EXPECT_EQ(rows[1], "  main              1  8.00 ms  8.00 ms  8.00 ms  8.00 ms  8.00 ms   80.01%");
  EXPECT_EQ(rows[2], "  Tree::insert      1  3.00 ms  3.00 ms  3.00 ms  3.00 ms  3.00 ms   30.00%");
  EXPECT_EQ(rows[3], "  load              2  1.50 ms  1.50 ms  1.50 ms  1.50 ms  3.00 ms   30.00%");
  EXPECT_NE(text.find("it exceeds 100% when several threads run a function at once"),
            std::string::npos);
}

TEST(ExportTable, LongNamesAreCutAndColumnsStayAligned) {
  Snapshot snapshot = testing::known_snapshot();
  const std::string long_name =
      "ns::Class<std::vector<std::pair<int, double>>>::method_µ(" + std::string(40, 'x') + ")";
  snapshot.functions[1].name = long_name;
  snapshot.functions[2].stats.total_ns = 1'234'567'890'123; // widens the Total column
  const auto rows = block(table(snapshot), "  Function");
  ASSERT_EQ(rows.size(), 4u);
  const std::string cut = rows[2].substr(2, rows[2].find("…") + std::string("…").size() - 2);
  EXPECT_EQ(code_points(cut), 60u);
  EXPECT_TRUE(long_name.starts_with(cut.substr(0, cut.size() - std::string("…").size())));
  for (const std::string& row : rows) {
    EXPECT_EQ(code_points(row), code_points(rows[0])) << row;
  }
  EXPECT_NE(rows[3].find("1234.57 s"), std::string::npos) << rows[3];
}

TEST(ExportTable, ThreadsAndCounters) {
  const std::string text = table(testing::known_snapshot());
  const auto main_thread = block(text, "== main (tid 4242) ==");
  ASSERT_EQ(main_thread.size(), 4u) << text;
  EXPECT_EQ(main_thread[0], "== main (tid 4242) == records: written=12 kept=11 dropped=1");
  EXPECT_TRUE(main_thread[2].starts_with("  main ")) << main_thread[2];
  EXPECT_TRUE(main_thread[3].starts_with("  Tree::insert ")) << main_thread[3];
  const auto loader = block(text, "== thread 4243 (tid 4243) ==");
  ASSERT_EQ(loader.size(), 3u) << text;
  EXPECT_TRUE(loader[2].starts_with("  load ")) << loader[2];

  const auto counters = block(text, "Counters");
  ASSERT_EQ(counters.size(), 3u) << text;
  EXPECT_EQ(counters[1], "  Counter  Updates   Last    Min    Max");
  EXPECT_EQ(counters[2], "  heap           1  10592  10592  10592");
}

TEST(ExportTable, AllocationColumnsOnlyWhenAllocationsWereRecorded) {
  const std::string timing_only = table(testing::known_snapshot());
  EXPECT_EQ(timing_only.find("Alloc"), std::string::npos);
  EXPECT_EQ(timing_only.find("allocations:"), std::string::npos);

  const std::string text = table(testing::known_snapshot_with_allocations());
  EXPECT_NE(text.find("\nallocations: 2.00 MiB in 10 blocks, of which 10 B in 1 blocks outside "
                      "any scope\n"),
            std::string::npos)
      << text;
  const auto rows = block(text, "  Function");
  ASSERT_EQ(rows.size(), 4u) << text;
  EXPECT_EQ(rows[0], "  Function      Calls      Avg      P50      P95      P99    Total  % Total"
                     "  Alloc Self  Blocks Self  Alloc Total  Blocks Total");
  EXPECT_EQ(rows[1], "  main              1  8.00 ms  8.00 ms  8.00 ms  8.00 ms  8.00 ms   80.01%"
                     "    1.50 KiB            3     2.00 MiB             8");
  EXPECT_EQ(rows[2], "  Tree::insert      1  3.00 ms  3.00 ms  3.00 ms  3.00 ms  3.00 ms   30.00%"
                     "    2.00 MiB            5     2.00 MiB             5");
  EXPECT_EQ(rows[3], "  load              2  1.50 ms  1.50 ms  1.50 ms  1.50 ms  3.00 ms   30.00%"
                     "       100 B            1        100 B             1");
  const auto loader = block(text, "== thread 4243 (tid 4243) ==");
  ASSERT_EQ(loader.size(), 3u) << text;
  EXPECT_TRUE(loader[1].ends_with("Blocks Total")) << loader[1];
}

TEST(ExportTable, CpuColumnsOnlyWhenTheCpuWasSampled) {
  const std::string timing_only = table(testing::known_snapshot());
  EXPECT_EQ(timing_only.find("CPU Self"), std::string::npos);
  EXPECT_EQ(timing_only.find("cpu samples:"), std::string::npos);

  Snapshot snapshot = testing::known_snapshot_with_cpu();
  snapshot.functions[0].cpu_self_ns = 2'000'000; // main: 8 ms of wall time
  snapshot.functions[0].cpu_total_ns = 6'000'000;
  const std::string text = table(snapshot);
  EXPECT_NE(text.find("\ncpu samples: 10 of 10.00 ms (100.00 ms of CPU), lost 0, incomplete "
                      "stacks 0\n"),
            std::string::npos)
      << text;
  // Periods the kernel's tick merged: the signals they came in.
  snapshot.cpu.signals = 3;
  EXPECT_NE(table(snapshot).find("\ncpu samples: 10 of 10.00 ms (100.00 ms of CPU) in 3 signals "
                                 "(the kernel's tick merged about 3 periods into each), lost 0"),
            std::string::npos)
      << table(snapshot);
  const auto rows = block(text, "  Function");
  ASSERT_EQ(rows.size(), 4u) << text;
  EXPECT_TRUE(rows[0].ends_with("% Total  CPU Self  CPU Total  CPU/Wall")) << rows[0];
  EXPECT_TRUE(rows[1].starts_with("  main")) << rows[1];
  EXPECT_TRUE(rows[1].ends_with("2.00 ms    6.00 ms     75.0%")) << rows[1];
  const auto threads = block(text, "  Thread");
  ASSERT_GE(threads.size(), 3u) << text;
  EXPECT_TRUE(threads[0].ends_with("CPU Samples")) << threads[0];
  EXPECT_TRUE(threads[1].ends_with(" 8")) << threads[1];
}

TEST(ExportTable, AFunctionWithOnlyAnOpenCallHasNoDurations) {
  Snapshot snapshot = testing::known_snapshot_with_allocations();
  FunctionStats open;
  open.name = "serve";
  open.allocated_self = open.allocated_total = {64, 1};
  snapshot.functions.push_back(open);
  const auto rows = block(table(snapshot), "  Function");
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[4], "  serve             0        -        -        -        -        -        -"
                     "        64 B            1         64 B             1");
}

} // namespace
} // namespace hotscope
