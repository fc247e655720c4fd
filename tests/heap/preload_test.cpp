// The preload library's behaviour beyond the figures: unknown pointers, an unwritable output
// directory, the summary switch and bad settings.
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"
#include "support/small_tmpfs.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct ProgramRun {
  int status;
  std::string err;
};

using hotscope::test_support::slurp;

ProgramRun run_preloaded(const fs::path& dir, const std::string& environment,
                         const std::string& mode) {
  const int status =
      std::system(("env " + environment + " LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " +
                   BEHAVIOURS_PROGRAM + " " + mode + " >/dev/null 2>" + (dir / "err").string())
                      .c_str());
  return ProgramRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "err")};
}

// The symbols a library exports, one per line (`nm -D --defined-only`).
std::vector<std::string> exported_symbols(const std::string& library) {
  std::istringstream lines(hotscope::test_support::output_of("nm -D --defined-only '" + library +
                                                             "' | awk '{print $3}'"));
  std::vector<std::string> symbols;
  for (std::string line; std::getline(lines, line);) {
    symbols.push_back(line);
  }
  return symbols;
}

// The preloaded libraries export their interface and nothing of their C++ code or private C++
// runtime: a program's own references, a plug-in's linked with hotscope among them, must never
// bind to the profiler's copies (exports.map beside each library's CMakeLists.txt).
TEST(HeapPreload, TheLibrariesExportOnlyTheirInterface) {
  const std::vector<std::string> preload = exported_symbols(HOTSCOPE_PRELOAD);
  EXPECT_TRUE(std::find(preload.begin(), preload.end(), "malloc") != preload.end());
  EXPECT_TRUE(std::find(preload.begin(), preload.end(), "hotscope_heap_attach") != preload.end());
  for (const std::string& symbol : preload) {
    EXPECT_NE(symbol.rfind("_Z", 0), 0u) << symbol;
  }
  const std::vector<std::string> runtime = exported_symbols(HOTSCOPE_RUN_PRELOAD);
  EXPECT_EQ(runtime, std::vector<std::string>{"hotscope_runtime_anchor"});
}

TEST(HeapPreload, UnknownPointersArePassedOnAndCounted) {
  const hotscope::testing::ScratchDir scratch("preload-unknown");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_preloaded(dir, "HOTSCOPE_OUT=" + (dir / "out").string(), "unknown");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("hotscope heap: Unknown pointers: 1 frees, 1 reallocs (passed on)"),
            std::string::npos)
      << run.err;
  // The realloc'd block is a block of its own, freed again.
  const auto profile = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  std::size_t found = 0;
  for (const auto& pp : profile.at("pps")) {
    if (pp.at("tb") == 4000) {
      ++found;
      EXPECT_EQ(pp.at("tbk"), 1);
      EXPECT_EQ(pp.at("eb"), 0);
    }
  }
  EXPECT_EQ(found, 1u);
}

// What heap_in_use prints (tests/heap/programs/heap_in_use.c), run with `environment` set and
// `argument`, its output kept in `dir`.
std::vector<std::size_t> heap_in_use(const fs::path& dir, const std::string& environment,
                                     const std::string& argument) {
  const fs::path out = dir / "in-use";
  const int status = std::system(
      ("env " + environment + " " + HEAP_IN_USE_PROGRAM + " " + argument + " >" + out.string())
          .c_str());
  EXPECT_EQ(status, 0) << environment;
  std::istringstream line(slurp(out));
  std::vector<std::size_t> numbers;
  for (std::size_t number = 0; line >> number;) {
    numbers.push_back(number);
  }
  numbers.resize(5); // a program that failed printed less
  return numbers;
}

// The preload library carries its own C++ runtime, whose start-up keeps a 71 KiB block for the
// process's life: left at the bottom of a C program's heap, it made glibc's malloc_consolidate two
// to three times slower in perl. It goes to the library's own arena instead: what is in use in the
// heap when main starts is about what it is without the library. (Not in the full mode, whose
// collector thread may have started building its tables before main, in an arena of its own that
// mallinfo2 counts too.)
TEST(HeapPreload, TheLibrarysStartUpLeavesTheProgramsHeapAlone) {
  const hotscope::testing::ScratchDir scratch("preload-heap-in-use");
  const auto in_use = [&](const std::string& environment) {
    return heap_in_use(scratch.path(), environment, "").at(0);
  };
  const std::size_t native = in_use("");
  for (const std::string mode : {"off", "sampled"}) {
    const std::size_t preloaded =
        in_use("HOTSCOPE_HEAP_MODE=" + mode + " HOTSCOPE_OUT=" + (scratch.path() / "out").string() +
               " LD_PRELOAD=" + HOTSCOPE_PRELOAD);
    EXPECT_LT(preloaded, native + 16 * 1024) << mode << ": " << preloaded << " bytes in use at "
                                             << "main, against " << native << " without it";
  }
}

// The sampled mode records its samples on the program's thread, in tables of its own: mapped
// directly, not taken from malloc, where they would sit among the program's blocks and change
// where its heap grows and shrinks; and what the capture needs once is done while the library
// loads. With every allocation sampled (from 256 stacks), the bytes in use in the heap after the
// program freed all it allocated are what they were when main started, as without the library.
// So too with the live agent of `hotscope run --heap` (libhotscope-run.so preloaded as well)
// answering a request for the heap profile halfway through the work, in the main arena, where the
// program's one thread allocates: the agent's threads are the profiler's, and what they keep
// (the symbolizer's data) is in arenas of their own (docs/heap.md, "Live").
TEST(HeapPreload, TheSampledModesRecordsStayOutOfTheProgramsHeap) {
  const hotscope::testing::ScratchDir scratch("preload-heap-after-work");
  // The bytes in use after the work, less those in use when main started: in every arena, or
  // (`main_arena`) in the main one.
  const auto added_by_work = [&](const std::string& environment,
                                 const std::string& argument = "after-work",
                                 bool main_arena = false) {
    const std::vector<std::size_t> in_use = heap_in_use(scratch.path(), environment, argument);
    return main_arena ? static_cast<long>(in_use.at(4)) - static_cast<long>(in_use.at(3))
                      : static_cast<long>(in_use.at(2)) - static_cast<long>(in_use.at(0));
  };
  const long native = added_by_work("");
  const long sampled =
      added_by_work("HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_HEAP_SAMPLE_BYTES=1 HOTSCOPE_OUT=" +
                    (scratch.path() / "out").string() + " LD_PRELOAD=" + HOTSCOPE_PRELOAD);
  EXPECT_LE(sampled, native) << "the work left " << sampled << " bytes more in use, against "
                             << native << " without the library";
  const auto profile = nlohmann::json::parse(slurp(scratch.path() / "out" / "heap.json"));
  EXPECT_GE(profile.at("pps").size(), 256u) << "not every stack was sampled";

  const fs::path runtime_dir = scratch.path() / "rt";
  const long with_agent =
      added_by_work("HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_HEAP_SAMPLE_BYTES=1 HOTSCOPE_OUT=" +
                        (scratch.path() / "agent-out").string() +
                        " HOTSCOPE_RUNTIME_DIR=" + runtime_dir.string() +
                        " LD_PRELOAD=" + HOTSCOPE_PRELOAD + ":" + HOTSCOPE_RUN_PRELOAD,
                    "after-work " + runtime_dir.string(), true);
  EXPECT_LE(with_agent, native) << "the work and the agent's answer left " << with_agent
                                << " bytes more in use, against " << native
                                << " without the libraries";
  EXPECT_GE(
      nlohmann::json::parse(slurp(scratch.path() / "agent-out" / "heap.json")).at("pps").size(),
      256u);
}

TEST(HeapPreload, UnwritableOutputGetsOneLineAndTheProgramsResultStands) {
  const hotscope::testing::ScratchDir scratch("preload-unwritable");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_preloaded(dir, "HOTSCOPE_OUT=/proc/hotscope-cannot-write", "lifecycle");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "hotscope: cannot write the heap profile "
                     "/proc/hotscope-cannot-write/heap.json: No such file or directory\n");
}

// A preload library without its report module beside it (libhotscope-pprof.so: the symbolizer and
// the pprof writer) writes no profile, and says which module it could not load; the program's
// result stands.
TEST(HeapPreload, WithoutTheReportModuleOneLineNamesIt) {
  const hotscope::testing::ScratchDir scratch("preload-no-module");
  const fs::path& dir = scratch.path();
  fs::copy_file(HOTSCOPE_PRELOAD, dir / "libhotscope-preload.so");
  const int status =
      std::system(("env HOTSCOPE_OUT=" + (dir / "out").string() +
                   " LD_PRELOAD=" + (dir / "libhotscope-preload.so").string() + " " +
                   BEHAVIOURS_PROGRAM + " lifecycle >/dev/null 2>" + (dir / "err").string())
                      .c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string err = slurp(dir / "err");
  EXPECT_NE(err.find("hotscope heap: no heap profile: cannot load the heap report module " +
                     (dir / "libhotscope-pprof.so").string() + ": "),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(dir / "out" / "heap.json"));
}

// An empty HOTSCOPE_OUT is a bad value as for libhotscope (config::parse_heap): one line, and
// heap.json goes where it goes by default, the directory the program started in.
TEST(HeapPreload, AnEmptyOutDirectoryIsOneLineAndTheDefaultIsUsed) {
  const hotscope::testing::ScratchDir scratch("preload-empty-out");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_preloaded(
      dir, "-C " + dir.string() + " HOTSCOPE_OUT= HOTSCOPE_HEAP_SUMMARY=0", "lifecycle");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err,
            "hotscope: HOTSCOPE_OUT is set but empty; set it to a directory for the reports\n");
  EXPECT_TRUE(fs::exists(dir / "heap.json"));
}

TEST(HeapPreload, SummaryCanBeTurnedOffAndBadSettingsAreNamed) {
  const hotscope::testing::ScratchDir scratch("preload-settings");
  const fs::path& dir = scratch.path();
  const ProgramRun quiet = run_preloaded(
      dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_SUMMARY=0", "lifecycle");
  EXPECT_EQ(quiet.status, 0);
  EXPECT_EQ(quiet.err, "");
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));

  const ProgramRun bad = run_preloaded(dir,
                                       "HOTSCOPE_OUT=" + (dir / "out").string() +
                                           " HOTSCOPE_HEAP_SUMMARY=0 HOTSCOPE_HEAP_DEPTH=many",
                                       "lifecycle");
  EXPECT_EQ(bad.status, 0);
  EXPECT_EQ(bad.err, "hotscope: HOTSCOPE_HEAP_DEPTH=\"many\" is not a frame count between 1 and "
                     "256; using 32\n");
}

// exit() from one thread while others keep allocating: the profile is written and the
// program's status stands (allocations after the report pass straight through).
TEST(HeapPreload, ExitFromAThreadWhileOthersAllocate) {
  const hotscope::testing::ScratchDir scratch("preload-exit");
  const fs::path& dir = scratch.path();
  for (int attempt = 0; attempt < 5; ++attempt) {
    const ProgramRun run = run_preloaded(
        dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_SUMMARY=0", "exit");
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const auto profile = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
    std::uint64_t blocks = 0;
    for (const auto& pp : profile.at("pps")) {
      blocks += pp.at("tbk").get<std::uint64_t>();
      EXPECT_LE(pp.at("ebk").get<std::uint64_t>(), pp.at("tbk").get<std::uint64_t>());
    }
    EXPECT_GT(blocks, 2u);
  }
}

// The profiler's own threads (the full mode's collector) take none of the program's signals: a
// program that blocks a signal everywhere and takes it with sigwait() gets it there.
TEST(HeapPreload, TheProgramsSignalsReachTheProgram) {
  const hotscope::testing::ScratchDir scratch("preload-sigwait");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_preloaded(
      dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_SUMMARY=0", "sigwait");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
}

// Forks while a thread allocates and the full mode's collector drains: no child waits for a lock
// held at the fork, in either mode.
TEST(HeapPreload, ForkedChildrenNeverWaitForTheParentsProfiler) {
  for (const char* mode : {"full", "sampled"}) {
    const hotscope::testing::ScratchDir scratch(std::string("preload-forks-") + mode);
    const fs::path& dir = scratch.path();
    const ProgramRun run =
        run_preloaded(dir,
                      "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_MODE=" + mode +
                          " HOTSCOPE_HEAP_SAMPLE_BYTES=64 HOTSCOPE_HEAP_SUMMARY=0",
                      "forks");
    EXPECT_EQ(run.status, 0) << mode << ": " << run.err;
    EXPECT_TRUE(fs::exists(dir / "out" / "heap.json")) << mode;
  }
}

// exit() from a signal handler on a thread that is building a heap profile: the report at exit
// is either written or skipped with one line, never waited for. The signal lands inside the
// profiler's lock in about two runs of three, so the program runs four times.
TEST(HeapPreload, ExitFromASignalHandlerWhileProfilingEndsTheProgram) {
  const hotscope::testing::ScratchDir scratch("preload-profile-exit");
  const fs::path& dir = scratch.path();
  for (int run_number = 0; run_number < 4; ++run_number) {
    fs::remove_all(dir / "out");
    const ProgramRun run = run_preloaded(
        dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_SUMMARY=0", "profile-exit");
    ASSERT_EQ(run.status, 0) << "run " << run_number << ": " << run.err;
    if (!fs::exists(dir / "out" / "heap.json")) {
      EXPECT_NE(run.err.find("hotscope heap: no heap profile: exit() was called"),
                std::string::npos)
          << run.err;
    }
  }
}

// exit() from a signal handler that interrupted malloc or free holding the allocator's lock: the
// report is written by threads that need nothing from the interrupted thread, or missing with one
// line that says why, and the program ends. Mostly written: at least once in four runs of each
// mode.
TEST(HeapPreload, ExitFromASignalHandlerThatInterruptedTheAllocatorWritesTheReport) {
  for (const char* mode : {"full", "sampled"}) {
    const hotscope::testing::ScratchDir scratch(std::string("preload-allocating-exit-") + mode);
    const fs::path& dir = scratch.path();
    int written = 0;
    for (int run_number = 0; run_number < 4; ++run_number) {
      fs::remove_all(dir / "out");
      const ProgramRun run =
          run_preloaded(dir,
                        "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_MODE=" + mode +
                            " HOTSCOPE_HEAP_SUMMARY=0",
                        "allocating-exit");
      ASSERT_EQ(run.status, 0) << mode << " run " << run_number << ": " << run.err;
      if (fs::exists(dir / "out" / "heap.json")) {
        ++written;
        EXPECT_FALSE(nlohmann::json::parse(slurp(dir / "out" / "heap.json")).at("pps").empty());
      } else {
        // Given up (a lock of the loader's), or skipped (the profiler's own lock, held by the
        // interrupted hook in the sampled mode): one line says why.
        EXPECT_EQ(run.err.rfind("hotscope heap: no heap profile: ", 0), 0u) << run.err;
      }
    }
    EXPECT_GE(written, 1) << mode;
  }
}

// exit() from a signal handler that interrupted code holding the loader's lock, which the report
// needs to symbolize: the exit waits while the report works, then gives it up with one line.
TEST(HeapPreload, ExitFromASignalHandlerHoldingTheLoadersLockGivesTheReportUp) {
  const hotscope::testing::ScratchDir scratch("preload-loader-lock-exit");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_preloaded(dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_SUMMARY=0",
                    "loader-lock-exit");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "heap.json"));
  EXPECT_EQ(run.err, "hotscope heap: no heap profile: exit() was called by a signal handler that "
                     "interrupted code holding a lock the report needs (the allocator's or the "
                     "loader's), and the report stopped for 3 s; a handler that only sets a flag, "
                     "which the program checks to exit, lets the report be written\n");
}

// On a full file system a valid earlier heap.json was replaced by the first 4,096 bytes of the
// new one.
TEST(HeapPreload, AFullFileSystemKeepsTheEarlierProfile) {
  const hotscope::testing::SmallTmpfs tmpfs;
  if (!tmpfs.skip_reason().empty()) {
    GTEST_SKIP() << tmpfs.skip_reason();
  }
  const hotscope::testing::ScratchDir scratch("preload-full");
  const std::string out = "HOTSCOPE_OUT=" + tmpfs.path().string() + " HOTSCOPE_HEAP_SUMMARY=0";
  const ProgramRun first = run_preloaded(scratch.path(), out, "lifecycle");
  ASSERT_EQ(first.status, 0) << first.err;
  ASSERT_EQ(first.err, "");
  const std::string earlier = slurp(tmpfs.path() / "heap.json");
  const std::string earlier_pprof = slurp(tmpfs.path() / "heap.pb.gz");
  ASSERT_FALSE(nlohmann::json::parse(earlier).at("pps").empty());
  tmpfs.fill();
  const ProgramRun full = run_preloaded(scratch.path(), out, "lifecycle");
  EXPECT_EQ(full.status, 0);
  EXPECT_EQ(full.err, "hotscope: cannot write the heap profile " +
                          (tmpfs.path() / "heap.json").string() + ": No space left on device\n");
  EXPECT_EQ(slurp(tmpfs.path() / "heap.json"), earlier);
  EXPECT_EQ(slurp(tmpfs.path() / "heap.pb.gz"), earlier_pprof);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmpfs.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"filler", "heap.json", "heap.pb.gz"}));
}

// A pyenv-style shim (a shell that runs commands, reads their output and execs the next one)
// left empty heap.<pid>.json files. Every process writes a whole profile or none.
TEST(HeapPreload, ShellsThatExecAtOnceWriteWholeProfilesOrNone) {
  const hotscope::testing::ScratchDir scratch("preload-shim");
  const fs::path& dir = scratch.path();
  const std::string script =
      "/bin/true; version=$(/bin/echo 3.11); for i in 1 2 3; do x=$(/bin/true); done; "
      "exec /bin/sh -c 'exec /bin/true'";
  // HOTSCOPE_HEAP_PID names no process here: each one writes heap.<pid>.json.
  const int status =
      std::system(("env HOTSCOPE_OUT=" + dir.string() +
                   " HOTSCOPE_HEAP_PID=1 HOTSCOPE_HEAP_SUMMARY=0 LD_PRELOAD=" + HOTSCOPE_PRELOAD +
                   " /bin/sh -c \"" + script + "\"")
                      .c_str());
  EXPECT_EQ(status, 0);
  std::size_t profiles = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name.starts_with("heap.")) << name;
    EXPECT_FALSE(name.ends_with(".tmp")) << name;
    if (entry.path().extension() == ".json") {
      ++profiles;
      const auto profile = nlohmann::json::parse(slurp(entry.path()), nullptr, false);
      EXPECT_TRUE(profile.is_object() && profile.contains("pps")) << name;
    }
  }
  EXPECT_GT(profiles, 0u);
}

TEST(HeapPreload, RelativeOutputIsTheStartDirectorys) {
  const hotscope::testing::ScratchDir scratch("preload-relative");
  const fs::path& dir = scratch.path();
  const int status = std::system(("cd " + dir.string() +
                                  " && env HOTSCOPE_OUT=out LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " +
                                  BEHAVIOURS_PROGRAM + " chdir 2>/dev/null")
                                     .c_str());
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
}

TEST(HeapPreload, DepthLimitsEveryStack) {
  const hotscope::testing::ScratchDir scratch("preload-depth");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_preloaded(
      dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_DEPTH=1", "lifecycle");
  EXPECT_EQ(run.status, 0) << run.err;
  const auto profile = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  ASSERT_FALSE(profile.at("pps").empty());
  const auto& frames = profile.at("ftbl");
  for (const auto& pp : profile.at("pps")) {
    // One captured address, expanded into its inlined frames, which share that address.
    const auto fs_indices = pp.at("fs").get<std::vector<int>>();
    ASSERT_FALSE(fs_indices.empty());
    const std::string address = frames[fs_indices[0]].get<std::string>().substr(0, 10);
    for (int index : fs_indices) {
      EXPECT_EQ(frames[index].get<std::string>().rfind(address, 0), 0u);
    }
  }
}

TEST(HeapPreload, FramePointerUnwindingFindsTheCallSites) {
  const hotscope::testing::ScratchDir scratch("preload-fp");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_preloaded(
      dir, "HOTSCOPE_OUT=" + (dir / "out").string() + " HOTSCOPE_HEAP_UNWIND=fp", "lifecycle");
  EXPECT_EQ(run.status, 0) << run.err;
  const std::string profile = slurp(dir / "out" / "heap.json");
  EXPECT_NE(profile.find("behaviours.cpp:"), std::string::npos) << profile;
}

// A stripped distribution program has only .dynsym: its exported functions are named from it, a
// static one as the program's file name and offset, and the exit report says what symbolizing
// took.
TEST(HeapPreload, StrippedProgramIsNamedFromItsDynamicSymbols) {
  const hotscope::testing::ScratchDir scratch("preload-stripped");
  const fs::path& dir = scratch.path();
  const int status = std::system(("env HOTSCOPE_OUT=" + (dir / "out").string() +
                                  " LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " + STRIPPED_PROGRAM +
                                  " >/dev/null 2>" + (dir / "err").string())
                                     .c_str());
  const std::string err = slurp(dir / "err");
  ASSERT_EQ(status, 0) << err;
  EXPECT_NE(err.find(" code addresses at exit ("), std::string::npos) << err;
  const auto frames = nlohmann::json::parse(slurp(dir / "out" / "heap.json"))
                          .at("ftbl")
                          .get<std::vector<std::string>>();
  const std::string program = STRIPPED_PROGRAM;
  const auto has = [&](const std::string& text) {
    return std::any_of(frames.begin(), frames.end(), [&](const std::string& frame) {
      return frame.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(has(": exported_allocation (in " + program + ")")) << nlohmann::json(frames);
  EXPECT_TRUE(has(": main (in " + program + ")")) << nlohmann::json(frames);
  EXPECT_TRUE(has(": " + fs::path(program).filename().string() + "+0x")) << nlohmann::json(frames);
  EXPECT_FALSE(has("???")) << nlohmann::json(frames);
}

} // namespace
