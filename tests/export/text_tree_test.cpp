#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace hotscope {
namespace {

std::string text_tree(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_text_tree(snapshot, out);
  return out.str();
}

TEST(ExportTextTree, KnownSnapshotListing) {
  EXPECT_EQ(text_tree(testing::known_snapshot()),
            "hotscope 0.1.0: demo (pid 4242), 10.000ms measured\n"
            "clock: tsc, 3.000 GHz (cpuid); invariant TSC\n"
            "records: written=20 kept=18 dropped=2\n"
            "trace window: from 0.000ms, 8 events, evicted=0 open_scopes=0\n"
            "\n"
            "== main (tid 4242) ==\n"
            "[1.000ms  ] > main\n"
            "[2.000ms  ]   > Tree::insert\n"
            "[3.000ms  ]     - gc-peak\n"
            "[3.000ms  ]     # heap = 10592\n"
            "[5.000ms  ]   < Tree::insert\n"
            "[9.001ms  ] < main\n"
            "\n"
            "== thread 4243 (tid 4243) ==\n"
            "[1.500ms  ] > load\n"
            "[4.500ms  ] < load\n");
}

TEST(ExportTextTree, NestingWidthsAndQuietThreads) {
  testing::SnapshotBuilder b;
  b.snapshot().duration_ns = 123'500'000'000;
  b.snapshot().records = {9, 9, 0};
  b.snapshot().clock = {"monotonic", "fixed", 1e9, false, "HOTSCOPE_CLOCK=monotonic"};
  b.snapshot().trace_start_ns = 58'000'000;
  b.snapshot().trace_evicted = 12;
  b.snapshot().trace_open_scopes = 1;
  const std::uint32_t boot = b.thread(100, "boot");
  const std::uint32_t idle = b.thread(101, "idle");
  b.snapshot().threads[idle].exited = true;
  b.begin(boot, 58'314'000, "load_gdt")
      .begin(boot, 58'320'000, "init_idt")
      .message(boot, 58'321'999, "vectors ready")
      .end(boot, 58'350'000, "init_idt")
      .counter(boot, 58'351'000, "irqs", -3)
      .end(boot, 58'356'000, "load_gdt")
      .begin(boot, 1'234'000'000, "run")
      .end(boot, 123'456'789'000, "run"); // still open at the snapshot: ends at duration
  EXPECT_EQ(text_tree(b.build()),
            "hotscope 0.1.0: demo (pid 4242), 123500.000ms measured\n"
            "clock: monotonic, 1.000 GHz (fixed); HOTSCOPE_CLOCK=monotonic\n"
            "records: written=9 kept=9 dropped=0\n"
            "trace window: from 58.000ms, 8 events, evicted=12 open_scopes=1\n"
            "\n"
            "== boot (tid 100) ==\n"
            "[58.314ms ] > load_gdt\n"
            "[58.320ms ]   > init_idt\n"
            "[58.321ms ]     - vectors ready\n"
            "[58.350ms ]   < init_idt\n"
            "[58.351ms ]   # irqs = -3\n"
            "[58.356ms ] < load_gdt\n"
            "[1234.000ms] > run\n"
            "[123456.789ms] < run\n"
            "\n"
            "== idle (tid 101, exited) ==\n"
            "(no events in the trace window)\n");
}

} // namespace
} // namespace hotscope
