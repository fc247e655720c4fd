// The sampled mode's raw report (heap/raw_report.hpp), which `hotscope run` symbolizes after the
// program ended (docs/heap.md, "The report at exit"): read back as written, and symbolized from a
// saved memory map, it makes the same profile as this process's own symbolizer.
#include "capture_here.hpp"
#include "export/export.hpp"
#include "heap/profile.hpp"
#include "heap/raw_report.hpp"
#include "objects/objects.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "symbols/symbols.hpp"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace heap = hotscope::heap;
using hotscope::symbols::Symbolizer;

using hotscope::test_support::capture;

std::string dhat_json(const hotscope::HeapProfile& profile) {
  std::ostringstream out;
  hotscope::exporters::write_dhat_json(profile, out);
  return std::move(out).str();
}

std::string pprof(const hotscope::HeapProfile& profile) {
  std::ostringstream out;
  hotscope::exporters::write_pprof_heap(profile, 512, out);
  return std::move(out).str();
}

heap::RawReport a_report(const std::vector<std::uintptr_t>& stack) {
  heap::RawReport report;
  report.json_path = "/out/heap.json";
  report.pprof_path = "/out/heap.pb.gz";
  report.program = "prog";
  report.command = "prog --flag";
  report.pid = 4242;
  report.memory_map = hotscope::test_support::slurp("/proc/self/maps");
  report.debug_cache = "/cache";
  report.summary = false;
  report.sampling = true;
  report.sample_bytes = 512;
  report.sampled_allocations = 3;
  report.pprof_period = 512;
  report.raw.end_time = 10;
  report.raw.gmax_time = 5;
  report.raw.unknown_frees = 1;
  report.raw.sites.push_back({stack, {.total_bytes = 8, .total_blocks = 1, .curr_bytes = 8}, 0});
  report.raw.sites.push_back({{}, {.total_bytes = 4, .total_blocks = 2}, 1});
  return report;
}

TEST(HeapRawReport, ReadsBackWhatWasWritten) {
  const hotscope::testing::ScratchDir scratch("raw-report");
  const std::vector<std::uintptr_t> stack = capture();
  const heap::RawReport written = a_report(stack);
  const std::string path = (scratch.path() / "heap.raw").string();
  ASSERT_EQ(heap::write_raw_report(path, written), "");
  heap::RawReport read;
  ASSERT_EQ(heap::read_raw_report(path, read), "");
  EXPECT_EQ(read.json_path, written.json_path);
  EXPECT_EQ(read.pprof_path, written.pprof_path);
  EXPECT_EQ(read.program, written.program);
  EXPECT_EQ(read.command, written.command);
  EXPECT_EQ(read.pid, written.pid);
  EXPECT_EQ(read.memory_map, written.memory_map);
  EXPECT_EQ(read.debug_cache, written.debug_cache);
  EXPECT_EQ(read.summary, written.summary);
  EXPECT_EQ(read.sampling, written.sampling);
  EXPECT_EQ(read.sample_bytes, written.sample_bytes);
  EXPECT_EQ(read.sampled_allocations, written.sampled_allocations);
  EXPECT_EQ(read.pprof_period, written.pprof_period);
  EXPECT_EQ(read.raw.end_time, 10u);
  EXPECT_EQ(read.raw.gmax_time, 5u);
  EXPECT_EQ(read.raw.unknown_frees, 1u);
  ASSERT_EQ(read.raw.sites.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const heap::RawSite& site = read.raw.sites[i];
    EXPECT_EQ(std::vector<std::uintptr_t>(site.stack.begin(), site.stack.end()),
              std::vector<std::uintptr_t>(written.raw.sites[i].stack.begin(),
                                          written.raw.sites[i].stack.end()));
    EXPECT_EQ(site.id, written.raw.sites[i].id);
    EXPECT_EQ(site.counts.total_bytes, written.raw.sites[i].counts.total_bytes);
    EXPECT_EQ(site.counts.total_blocks, written.raw.sites[i].counts.total_blocks);
    EXPECT_EQ(site.counts.curr_bytes, written.raw.sites[i].counts.curr_bytes);
  }
}

TEST(HeapRawReport, ACutOrForeignFileIsRefusedWithItsReason) {
  const hotscope::testing::ScratchDir scratch("raw-report-cut");
  const std::string path = (scratch.path() / "heap.raw").string();
  ASSERT_EQ(heap::write_raw_report(path, a_report(capture())), "");
  const std::string whole = hotscope::test_support::slurp(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 9);
  heap::RawReport read;
  EXPECT_NE(heap::read_raw_report(path, read).find("is cut short"), std::string::npos);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "{\"not\": \"a raw report\"}";
  EXPECT_NE(heap::read_raw_report(path, read).find("is not a raw heap report"), std::string::npos);
  EXPECT_NE(heap::read_raw_report((scratch.path() / "none").string(), read), "");
}

// The launcher's view: this process's objects reported from its saved memory map, read from
// their files, name the same frames in the same profile as the symbolizer of the live process.
// The map the program writes at exit (from the loader's list), as the launcher resolves it.
std::string saved_map() {
  return hotscope::objects::with_resolved_paths(hotscope::objects::loaded_objects_map(
      std::filesystem::read_symlink("/proc/self/exe").string()));
}

TEST(HeapRawReport, TheLoadersMapResolvedHasTheCodeMappingsOfTheKernels) {
  std::istringstream kernel(hotscope::test_support::slurp("/proc/self/maps"));
  std::istringstream saved(saved_map());
  const auto key = [](const std::vector<hotscope::objects::CodeMapping>& mappings) {
    std::vector<std::string> lines;
    for (const hotscope::objects::CodeMapping& mapping : mappings) {
      lines.push_back(std::to_string(mapping.start) + "-" + std::to_string(mapping.limit) + " " +
                      std::to_string(mapping.offset) + " " + mapping.path);
    }
    return lines;
  };
  const auto from_kernel = key(hotscope::objects::code_mappings(kernel));
  EXPECT_GE(from_kernel.size(), 3u); // this program, the C library, the loader
  EXPECT_EQ(key(hotscope::objects::code_mappings(saved)), from_kernel);
}

TEST(HeapRawReport, ASavedMemoryMapNamesTheFramesAsTheLiveProcessDoes) {
  const std::vector<std::uintptr_t> stack = capture(); // the report's site points into it
  heap::RawReport report = a_report(stack);
  report.memory_map = saved_map();
  Symbolizer live;
  const hotscope::HeapProfile own = heap::build_profile(report.raw, "prog", 1, live);
  hotscope::symbols::SymbolizerOptions options;
  options.memory_map = report.memory_map;
  Symbolizer saved(std::move(options));
  EXPECT_FALSE(saved.refresh()); // an ended process's objects change no more
  std::istringstream maps(report.memory_map);
  const std::vector<hotscope::objects::CodeMapping> mappings =
      hotscope::objects::code_mappings(maps);
  const hotscope::HeapProfile from_map =
      heap::build_profile(report.raw, "prog", 1, saved, &mappings);
  const std::string json = dhat_json(from_map);
  EXPECT_NE(json.find("capture"), std::string::npos) << json;
  EXPECT_EQ(json, dhat_json(own));
  EXPECT_EQ(pprof(from_map), pprof(own));
}

} // namespace
