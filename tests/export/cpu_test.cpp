// The CPU samples' outputs: cpu.folded's lines, and write_all's CPU files only when there were
// samples (cpu.pb.gz is decoded by pprof_wire_test).
#include "export/export.hpp"
#include "objects/objects.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hotscope {
namespace {

namespace fs = std::filesystem;

std::string cpu_folded(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_cpu_folded(snapshot, out);
  return out.str();
}

// The test program's frame as "export_test+0xOFFSET", OFFSET in its file: from the line of
// /proc/self/maps that maps it (whatever layout the linker chose).
std::string program_frame() {
  Dl_info info{};
  const void* code = reinterpret_cast<const void*>(&testing::cpu_fixture_code);
  EXPECT_NE(dladdr(code, &info), 0);
  EXPECT_EQ(info.dli_sname, nullptr) << "the test program exports no symbol";
  const std::uint64_t address = testing::code_address(code);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uint64_t begin = 0, end = 0, offset = 0;
    char dash = 0;
    std::string permissions;
    std::istringstream fields(line);
    fields >> std::hex >> begin >> dash >> end >> permissions >> offset;
    if (address >= begin && address < end) {
      std::ostringstream name;
      name << fs::read_symlink("/proc/self/exe").filename().string() << "+0x" << std::hex
           << address - begin + offset;
      return name.str();
    }
  }
  ADD_FAILURE() << "no mapping holds the test program's code";
  return "";
}

TEST(ExportCpuFolded, OneLinePerStackRootFirstWithItsSamples) {
#ifndef HOTSCOPE_TEST_SYMBOLS_MODULE
  GTEST_SKIP() << "built without the heap profiler, so without libhotscope-symbols.so";
#endif
  // Named by the symbolizer module (libdw: the program's own functions too), an address in no
  // mapping as itself, a stack without frames as [unknown]; return addresses are named after
  // their call.
  EXPECT_EQ(cpu_folded(testing::known_snapshot_with_cpu()),
            "0x10 1\n"
            "[unknown] 1\n"
            "std::terminate();hotscope::testing::cpu_fixture_code(int);main 2\n"
            "std::terminate();main;hotscope::testing::cpu_fixture_code(int);Tree::insert;rand 6\n");
}

TEST(ExportCpuFolded, WithoutTheModuleFramesAreNamedByDynamicSymbolsOrFileOffsets) {
  const auto mappings = objects::code_mappings();
  EXPECT_EQ(objects::name_from_dynamic_symbols(
                testing::code_address(reinterpret_cast<const void*>(&std::rand)), mappings),
            "rand");
  EXPECT_EQ(objects::name_from_dynamic_symbols(
                testing::code_address(reinterpret_cast<const void*>(&testing::cpu_fixture_code)),
                mappings),
            program_frame());
  EXPECT_EQ(objects::name_from_dynamic_symbols(0x10, mappings), "0x10");
}

TEST(ExportCpuFolded, StacksThatReadAlikeAddUpAndFramesStayFrames) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.cpu.samples = 7;
  snapshot.cpu.scopes = {{"phase 2", "a.cpp", 1}, {"a;b", "a.cpp", 2}};
  snapshot.cpu.stacks = {{{CpuFrame{0, 0}}, 3}, {{CpuFrame{0, 1}, CpuFrame{0, 0}}, 4}};
  snapshot.cpu.scopes.push_back({"phase 2", "b.cpp", 9}); // another scope of the same name
  snapshot.cpu.stacks.push_back({{CpuFrame{0, 2}}, 5});
  EXPECT_EQ(cpu_folded(snapshot), "phase_2 8\nphase_2;a:b 4\n");
}

// cpu.pb.gz and cpu.folded are written with the other files when the snapshot has CPU samples,
// and not at all without.
TEST(ExportCpuFiles, WrittenOnlyWithSamples) {
  const fs::path dir = fs::temp_directory_path() / ("hotscope-cpu-" + std::to_string(getpid()));
  for (const bool sampled : {false, true}) {
    fs::remove_all(dir);
    Snapshot snapshot = testing::known_snapshot_with_cpu();
    if (!sampled) {
      snapshot.cpu = CpuProfile{};
    }
    ASSERT_EQ(exporters::write_all(snapshot, dir.string()), "");
    EXPECT_EQ(fs::exists(dir / "cpu.pb.gz"), sampled);
    EXPECT_EQ(fs::exists(dir / "cpu.folded"), sampled);
    EXPECT_TRUE(fs::exists(dir / "stats.json"));
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace hotscope
