// The sampled mode end to end, under the preload library: the estimates on a workload whose
// totals are known exactly, with two fixed seeds, and heap.pb.gz read by `go tool pprof`, whose
// totals must be heap.json's.
#include "export/export.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

using hotscope::test_support::slurp;

struct Totals {
  std::uint64_t bytes = 0, blocks = 0, end_bytes = 0, end_blocks = 0, gmax_bytes = 0;
};

Totals dhat_totals(const fs::path& file) {
  const auto profile = nlohmann::json::parse(slurp(file));
  Totals totals;
  for (const auto& pp : profile.at("pps")) {
    totals.bytes += pp.at("tb").get<std::uint64_t>();
    totals.blocks += pp.at("tbk").get<std::uint64_t>();
    totals.end_bytes += pp.at("eb").get<std::uint64_t>();
    totals.end_blocks += pp.at("ebk").get<std::uint64_t>();
    totals.gmax_bytes += pp.at("gb").get<std::uint64_t>();
  }
  return totals;
}

// Runs `program` sampled; returns its exit status. Its stdout goes to dir/out.txt.
int run_sampled(const fs::path& dir, const std::string& program, const std::string& settings) {
  fs::create_directories(dir);
  const int status = std::system(
      ("env HOTSCOPE_OUT=" + dir.string() + " HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_HEAP_SUMMARY=0 " +
       settings + " LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " + program + " >" +
       (dir / "out.txt").string() + " 2>" + (dir / "err.txt").string())
          .c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double relative_error(std::uint64_t estimate, std::uint64_t truth) {
  return std::abs(static_cast<double>(estimate) - static_cast<double>(truth)) /
         static_cast<double>(truth);
}

// 200,000 allocations of ten sizes from 8 bytes to 30,000 (911,160,000 bytes in all), every tenth
// kept: the estimate of bytes allocated must be within 5% of the truth, that of bytes live at the
// end (a tenth of the data) within 10%, for each seed; a seed gives the same profile every time.
TEST(HeapSampled, EstimatesAreWithinAFewPercentOfTheTruth) {
  const hotscope::testing::ScratchDir scratch("sampled-estimate");
  std::uint64_t previous_estimate = 0;
  for (const char* seed : {"1", "20261130"}) {
    const fs::path dir = scratch.path() / seed;
    const std::string settings =
        std::string("HOTSCOPE_HEAP_SAMPLE_BYTES=65536 HOTSCOPE_HEAP_SAMPLE_SEED=") + seed;
    ASSERT_EQ(run_sampled(dir, SAMPLED_PROGRAM, settings), 0) << slurp(dir / "err.txt");
    EXPECT_EQ(slurp(dir / "err.txt"), "");
    std::uint64_t total = 0, live = 0, count = 0;
    std::istringstream(slurp(dir / "out.txt")) >> total >> live >> count;
    ASSERT_EQ(total, 911160000u);
    const Totals estimate = dhat_totals(dir / "heap.json");
    EXPECT_LT(relative_error(estimate.bytes, total), 0.05) << seed << ": " << estimate.bytes;
    // Block counts are noisier: a sampled 8-byte block stands for 8,192 of them. Here the
    // estimate's standard deviation is about 8% of the count.
    EXPECT_LT(relative_error(estimate.blocks, count), 0.25) << seed << ": " << estimate.blocks;
    EXPECT_LT(relative_error(estimate.end_bytes, live), 0.10) << seed << ": " << estimate.end_bytes;
    EXPECT_NE(estimate.bytes, previous_estimate) << "the seed must change the sample";
    previous_estimate = estimate.bytes;

    const fs::path again = dir / "again";
    ASSERT_EQ(run_sampled(again, SAMPLED_PROGRAM, settings), 0);
    EXPECT_EQ(dhat_totals(again / "heap.json").bytes, estimate.bytes);
  }
}

// docs/heap.md's bound: an estimate of B bytes is within 4 standard deviations, sqrt(mean B)
// each, of the full mode's figure.
void expect_within_bound(const char* figure, std::uint64_t estimate, std::uint64_t full,
                         double mean) {
  const double bound = 4 * std::sqrt(mean * static_cast<double>(full));
  EXPECT_LE(std::abs(static_cast<double>(estimate) - static_cast<double>(full)), bound)
      << figure << ": " << estimate << " sampled, " << full << " in the full mode";
}

// The same workload in the full mode and sampled with two seeds: bytes allocated, live at the
// end and at t-gmax within the documented bound of the full mode's.
TEST(HeapSampled, TotalsAndTGmaxAreWithinTheDocumentedBoundOfTheFullModes) {
  const hotscope::testing::ScratchDir scratch("sampled-bound");
  const fs::path full_dir = scratch.path() / "full";
  ASSERT_EQ(run_sampled(full_dir, SAMPLED_PROGRAM, "HOTSCOPE_HEAP_MODE=full"), 0)
      << slurp(full_dir / "err.txt");
  const Totals full = dhat_totals(full_dir / "heap.json");
  // The workload's blocks and stdio's buffer for its one line.
  ASSERT_EQ(full.bytes, 911160000u + 4096);
  ASSERT_GE(full.gmax_bytes, full.end_bytes);
  for (const char* seed : {"5", "20261204"}) {
    const fs::path dir = scratch.path() / seed;
    ASSERT_EQ(
        run_sampled(dir, SAMPLED_PROGRAM,
                    std::string("HOTSCOPE_HEAP_SAMPLE_BYTES=65536 HOTSCOPE_HEAP_SAMPLE_SEED=") +
                        seed),
        0)
        << slurp(dir / "err.txt");
    const Totals sampled = dhat_totals(dir / "heap.json");
    expect_within_bound("bytes allocated", sampled.bytes, full.bytes, 65536);
    expect_within_bound("live at the end", sampled.end_bytes, full.end_bytes, 65536);
    expect_within_bound("at t-gmax", sampled.gmax_bytes, full.gmax_bytes, 65536);
  }
}

// A run with no sample says so, and how to get figures, instead of "Total: 0 bytes".
TEST(HeapSampled, ARunTooShortToBeSampledSaysSo) {
  const hotscope::testing::ScratchDir scratch("sampled-none");
  const fs::path& dir = scratch.path();
  // 373,742 bytes allocated, one sample point per GiB: with this seed none is reached.
  ASSERT_EQ(run_sampled(dir, LIST_TREE_PROGRAM,
                        "HOTSCOPE_HEAP_SUMMARY=1 HOTSCOPE_HEAP_SAMPLE_BYTES=1073741824 "
                        "HOTSCOPE_HEAP_SAMPLE_SEED=1"),
            0)
      << slurp(dir / "err.txt");
  const std::string summary = slurp(dir / "err.txt");
  EXPECT_NE(summary.find("no allocation was sampled, the run was too short to be sampled at this "
                         "rate; lower HOTSCOPE_HEAP_SAMPLE_BYTES or use HOTSCOPE_HEAP_MODE=full"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("Total:"), std::string::npos) << summary;
  EXPECT_EQ(dhat_totals(dir / "heap.json").bytes, 0u);

  // Sampled, the summary gives the estimates as before.
  const fs::path sampled = dir / "sampled";
  ASSERT_EQ(run_sampled(sampled, LIST_TREE_PROGRAM,
                        "HOTSCOPE_HEAP_SUMMARY=1 HOTSCOPE_HEAP_SAMPLE_BYTES=4096 "
                        "HOTSCOPE_HEAP_SAMPLE_SEED=1"),
            0);
  EXPECT_NE(slurp(sampled / "err.txt").find("Total:"), std::string::npos)
      << slurp(sampled / "err.txt");
}

// The command's stdout and stderr.
std::string output_of(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string output;
  char buffer[4096];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    output += buffer;
  }
  if (pipe != nullptr) {
    pclose(pipe);
  }
  return output;
}

// "Showing nodes accounting for 94732250B, 100% of 94732250B total" -> 94732250.
std::uint64_t pprof_total(const fs::path& file, const std::string& sample_index) {
  const std::string command = std::string(GO) +
                              " tool pprof -top -unit=B -sample_index=" + sample_index + " " +
                              file.string();
  const std::string output = output_of(command);
  std::smatch match;
  if (!std::regex_search(output, match, std::regex(R"(of (\d+)B? total)"))) {
    ADD_FAILURE() << command << "\n" << output;
    return 0;
  }
  return std::stoull(match[1]);
}

TEST(HeapSampled, GoToolPprofReadsTheProfileAndAgreesWithHeapJson) {
  const hotscope::testing::ScratchDir scratch("sampled-pprof");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(run_sampled(dir, CONTAINERS_PROGRAM,
                        "HOTSCOPE_HEAP_SAMPLE_BYTES=2048 HOTSCOPE_HEAP_SAMPLE_SEED=3"),
            0)
      << slurp(dir / "err.txt");
  const Totals totals = dhat_totals(dir / "heap.json");
  ASSERT_GT(totals.bytes, 0u);
  const fs::path pprof = dir / "heap.pb.gz";
  EXPECT_EQ(pprof_total(pprof, "alloc_space"), totals.bytes);
  EXPECT_EQ(pprof_total(pprof, "alloc_objects"), totals.blocks);
  EXPECT_EQ(pprof_total(pprof, "inuse_space"), totals.end_bytes);
  EXPECT_EQ(pprof_total(pprof, "inuse_objects"), totals.end_blocks);

  // The default sample type is inuse_space; the workload's functions are named.
  const std::string inuse = output_of(std::string(GO) + " tool pprof -top " + pprof.string());
  EXPECT_NE(inuse.find("Type: inuse_space"), std::string::npos) << inuse;
  const std::string allocated =
      output_of(std::string(GO) + " tool pprof -top -sample_index=alloc_space " + pprof.string());
  EXPECT_NE(allocated.find(" main\n"), std::string::npos) << allocated;
}

// pprof's structure from the symbolizer's: an address's inlined frames are Lines of one Location
// (innermost first), each Location in its object's Mapping, unknown code kept as an address in
// its object.
TEST(HeapSampled, PprofKeepsInlinedFramesInOneLocationAndItsMappings) {
  const hotscope::testing::ScratchDir scratch("sampled-structure");
  hotscope::HeapProfile profile;
  profile.frames = {"[root]", "0x401010: leaf (a.h:3)", "0x401010: caller (a.cpp:9)",
                    "0x402020: ??? (in /opt/lib/libx.so)", "0x401040: main (a.cpp:20)"};
  profile.frame_details = {{},
                           {0x401010, "leaf", "a.h", 3, 1, true},
                           {0x401010, "caller", "a.cpp", 9, 1, false},
                           {0x7f0000002020, "", "", 0, 2, false},
                           {0x401040, "main", "a.cpp", 20, 1, false}};
  profile.mappings = {{0x400000, 0x500000, 0, "/opt/bin/prog"},
                      {0x7f0000000000, 0x7f0000100000, 0x1000, "/opt/lib/libx.so"}};
  profile.sites.push_back(hotscope::HeapSite{4096, 4, 0, 0, 0, 0, 0, 1024, 1, {1, 2, 3, 4}});
  const fs::path file = scratch.path() / "structure.pb.gz";
  {
    std::ofstream out(file, std::ios::binary);
    hotscope::exporters::write_pprof_heap(profile, 1, out);
  }
  const std::string raw = output_of(std::string(GO) + " tool pprof -raw " + file.string());
  // -raw lists each Location as "ID: ADDRESS M=MAPPING FUNCTION FILE:LINE", its further Lines
  // on the next lines, then the Mappings.
  EXPECT_TRUE(std::regex_search(
      raw, std::regex(R"(\d+: 0x401010 M=1 leaf a\.h:3 s=0\s+caller a\.cpp:9 s=0)")))
      << raw;
  EXPECT_TRUE(std::regex_search(raw, std::regex(R"(\d+: 0x7f0000002020 M=2\s)"))) << raw;
  EXPECT_NE(raw.find("0x400000/0x500000/0x0 /opt/bin/prog"), std::string::npos) << raw;
  EXPECT_NE(raw.find("0x7f0000000000/0x7f0000100000/0x1000 /opt/lib/libx.so"), std::string::npos)
      << raw;
  const std::string top = output_of(std::string(GO) + " tool pprof -top " + file.string());
  EXPECT_EQ(top.find("Main binary filename not available"), std::string::npos) << top;
}

// In the full mode heap.pb.gz holds every block: period 1, the exact figures.
TEST(HeapSampled, FullModeWritesTheExactFiguresAsPprofToo) {
  const hotscope::testing::ScratchDir scratch("sampled-full");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(run_sampled(dir, LIST_TREE_PROGRAM, "HOTSCOPE_HEAP_MODE=full"), 0)
      << slurp(dir / "err.txt");
  const Totals totals = dhat_totals(dir / "heap.json");
  EXPECT_EQ(totals.bytes, 373742u);
  EXPECT_EQ(pprof_total(dir / "heap.pb.gz", "alloc_space"), totals.bytes);
  EXPECT_EQ(pprof_total(dir / "heap.pb.gz", "inuse_objects"), totals.end_blocks);
}

// The report at exit loads libhotscope-pprof.so to write heap.pb.gz, and no C++ runtime with it:
// loading libstdc++.so into a C program was most of the report's cost for a short program
// (docs/performance.md). The loader's LD_DEBUG=files lines name each object it loads.
TEST(HeapSampled, TheReportLoadsNoCxxRuntimeIntoACProgram) {
  const hotscope::testing::ScratchDir scratch("sampled-no-libstdcxx");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(run_sampled(dir, SAMPLED_PROGRAM, "LD_DEBUG=files"), 0) << slurp(dir / "err.txt");
  const std::string loaded = slurp(dir / "err.txt");
  ASSERT_NE(loaded.find("libhotscope-pprof.so [0];  dynamically loaded"), std::string::npos)
      << loaded;
  EXPECT_EQ(loaded.find("libstdc++"), std::string::npos) << loaded;
  EXPECT_GT(fs::file_size(dir / "heap.pb.gz"), 0u);
}

// The preload library needs the C library alone: a C program that does not link libm gets none
// loaded for the sampler's logarithm or the weights' exponential (src/heap/sampling_math.hpp),
// only with the report module the program loads at exit to write its own report.
TEST(HeapSampled, ThePreloadLibraryLoadsNoLibmIntoACProgram) {
  const hotscope::testing::ScratchDir scratch("sampled-no-libm");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(run_sampled(dir, SAMPLED_PROGRAM, "LD_DEBUG=files"), 0) << slurp(dir / "err.txt");
  const std::string loaded = slurp(dir / "err.txt");
  const std::size_t report_module = loaded.find("libhotscope-pprof.so [0];  dynamically loaded");
  ASSERT_NE(report_module, std::string::npos) << loaded;
  const std::size_t libm = loaded.find("file=libm.so.6");
  EXPECT_TRUE(libm == std::string::npos || libm > report_module) << loaded;
  EXPECT_GT(dhat_totals(dir / "heap.json").blocks, 0u);
}

// The preload library carries libgcc's unwinder: a sampled profile walks its few stacks with it
// and loads no unwinder library into the program (libunwind's _Unwind_* would come before the
// program's libgcc_s in its symbol search); the full mode loads libunwind at start, for its
// many uncached walks.
TEST(HeapSampled, TheSampledModeLoadsNoUnwinderLibrary) {
  const hotscope::testing::ScratchDir scratch("sampled-no-unwinder");
  for (const std::string mode : {"sampled", "full"}) {
    const fs::path dir = scratch.path() / mode;
    ASSERT_EQ(run_sampled(dir, SAMPLED_PROGRAM, "LD_DEBUG=files HOTSCOPE_HEAP_MODE=" + mode), 0)
        << slurp(dir / "err.txt");
    // (The report module the program loads at exit to write its own report needs libunwind.)
    const std::string loaded = slurp(dir / "err.txt");
    EXPECT_EQ(loaded.find("libgcc_s"), std::string::npos) << mode << ": " << loaded;
    EXPECT_EQ(loaded.find("libunwind.so.8 [0];  needed by " + std::string(HOTSCOPE_PRELOAD)),
              std::string::npos)
        << loaded;
    EXPECT_EQ(loaded.find("libunwind.so.8 [0];  dynamically loaded") != std::string::npos,
              mode == "full")
        << mode << ": " << loaded;
    EXPECT_GT(dhat_totals(dir / "heap.json").blocks, 0u) << mode;
  }
}

// The bootstrap arena serves the heap library's own start-up (a C library whose dlsym allocates
// while the real allocator is looked up): free's short path must send those blocks to the hooks,
// never to the real free, which would abort the program.
TEST(HeapSampled, BootstrapArenaBlocksNeverReachTheRealFree) {
  for (const std::string mode : {"sampled", "full"}) {
    const hotscope::testing::ScratchDir scratch("sampled-arena-" + mode);
    const fs::path& dir = scratch.path();
    const int status =
        std::system(("env HOTSCOPE_OUT=" + dir.string() + " HOTSCOPE_HEAP_MODE=" + mode +
                     " HOTSCOPE_HEAP_SAMPLE_BYTES=4096 HOTSCOPE_HEAP_SUMMARY=0 LD_PRELOAD='" +
                     ARENA_SHIM + " " + HOTSCOPE_PRELOAD + "' " + ARENA_PROGRAM + " >" +
                     (dir / "out.txt").string() + " 2>" + (dir / "err.txt").string())
                        .c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << mode << ": " << slurp(dir / "err.txt");
    std::smatch match;
    const std::string out = slurp(dir / "out.txt");
    ASSERT_TRUE(std::regex_search(out, match, std::regex(R"(arena blocks freed: (\d+))"))) << out;
    EXPECT_GT(std::stoi(match[1]), 0) << mode << ": the shim's blocks did not come from the arena";
    EXPECT_GT(dhat_totals(dir / "heap.json").blocks, 0u) << mode;
  }
}

} // namespace
