#include "config/config.hpp"

#include <gtest/gtest.h>

#include "support/scratch_dir.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

using namespace hotscope;

config::Parsed parse(const std::map<std::string, std::string>& env) {
  return config::parse([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Config, DefaultsWhenNothingIsSet) {
  const auto parsed = parse({});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.config.out_dir, "");
  EXPECT_EQ(parsed.config.clock, clock::Request::Auto);
  EXPECT_EQ(parsed.config.ring_records, 262144u);
  EXPECT_EQ(parsed.config.trace_window_bytes, 32u << 20);
}

TEST(Config, ReadsEveryVariable) {
  const auto parsed = parse({{"HOTSCOPE_OUT", "/tmp/x"},
                             {"HOTSCOPE_CLOCK", "monotonic"},
                             {"HOTSCOPE_RING_RECORDS", "1024"},
                             {"HOTSCOPE_TRACE_MIB", "0"},
                             {"HOTSCOPE_COLLECT_MS", "5"},
                             {"HOTSCOPE_CPU_HZ", "99"}});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.config.out_dir, "/tmp/x");
  EXPECT_EQ(parsed.config.clock, clock::Request::Monotonic);
  EXPECT_EQ(parsed.config.ring_records, 1024u);
  EXPECT_EQ(parsed.config.trace_window_bytes, 0u);
  EXPECT_EQ(parsed.config.collect_period_ms, 5u);
  EXPECT_EQ(parsed.config.cpu_hz, 99u);
}

TEST(Config, CpuSamplingIsOffUnlessAskedAndARateOutOfRangeIsNamed) {
  EXPECT_EQ(parse({}).config.cpu_hz, 0u);
  const auto parsed = parse({{"HOTSCOPE_CPU_HZ", "20000"}});
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_NE(parsed.errors[0].find("HOTSCOPE_CPU_HZ=\"20000\""), std::string::npos);
  EXPECT_EQ(parsed.config.cpu_hz, 0u);
}

// The slowest calls kept (docs/slow.md): 4 per function in 16 MiB unless told.
TEST(Config, SlowestCallsAndTheirBudget) {
  EXPECT_EQ(parse({}).config.slowest, 4u);
  EXPECT_EQ(parse({}).config.slowest_bytes, 16u << 20);
  const auto set = parse({{"HOTSCOPE_SLOWEST", "0"}, {"HOTSCOPE_SLOWEST_MIB", "2"}});
  EXPECT_TRUE(set.errors.empty());
  EXPECT_EQ(set.config.slowest, 0u);
  EXPECT_EQ(set.config.slowest_bytes, 2u << 20);
  const auto bad = parse({{"HOTSCOPE_SLOWEST", "many"}, {"HOTSCOPE_SLOWEST_MIB", "0"}});
  ASSERT_EQ(bad.errors.size(), 2u);
  EXPECT_NE(bad.errors[0].find("HOTSCOPE_SLOWEST=\"many\""), std::string::npos);
  EXPECT_NE(bad.errors[1].find("HOTSCOPE_SLOWEST_MIB=\"0\""), std::string::npos);
  EXPECT_EQ(bad.config.slowest, 4u);
  EXPECT_EQ(bad.config.slowest_bytes, 16u << 20);
}

// Instrumented functions' filter (docs/instrument.md): 200 ns unless told, 0 filters nothing.
TEST(Config, InstrumentedFunctionsFilter) {
  EXPECT_EQ(parse({}).config.min_ns, 200u);
  const auto off = parse({{"HOTSCOPE_MIN_NS", "0"}});
  EXPECT_TRUE(off.errors.empty());
  EXPECT_EQ(off.config.min_ns, 0u);
  EXPECT_EQ(parse({{"HOTSCOPE_MIN_NS", "5000"}}).config.min_ns, 5000u);
  const auto bad = parse({{"HOTSCOPE_MIN_NS", "-1"}});
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors[0].find("HOTSCOPE_MIN_NS=\"-1\""), std::string::npos) << bad.errors[0];
  EXPECT_EQ(bad.config.min_ns, 200u);
}

TEST(Config, LocksAreInterposedOnlyWhenAskedAndABadValueIsNamed) {
  using hotscope::locks::Mode;
  EXPECT_EQ(parse({}).config.locks, Mode::Off);
  EXPECT_EQ(parse({{"HOTSCOPE_LOCKS", "0"}}).config.locks, Mode::Off);
  EXPECT_EQ(parse({{"HOTSCOPE_LOCKS", "1"}}).config.locks, Mode::Contended);
  EXPECT_EQ(parse({{"HOTSCOPE_LOCKS", "hold"}}).config.locks, Mode::Hold);
  const auto parsed = parse({{"HOTSCOPE_LOCKS", "yes"}});
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_NE(parsed.errors[0].find("HOTSCOPE_LOCKS=\"yes\" is not one of 0, 1, hold"),
            std::string::npos);
  EXPECT_EQ(parsed.config.locks, Mode::Off);
}

TEST(Config, UnderHotscopeRunOtherProcessesReportIntoADirectoryOfTheirOwn) {
  const std::string self = std::to_string(getpid());
  EXPECT_EQ(parse({{"HOTSCOPE_OUT", "/tmp/x"}, {"HOTSCOPE_RUN_PID", self}}).config.out_dir,
            "/tmp/x");
  const std::string child =
      parse({{"HOTSCOPE_OUT", "/tmp/x"}, {"HOTSCOPE_RUN_PID", "1"}}).config.out_dir;
  EXPECT_EQ(child.rfind("/tmp/x/", 0), 0u) << child;
  EXPECT_EQ(child.substr(child.rfind('.') + 1), self) << "named <name>.<pid>: " << child;
}

TEST(Config, ReportOnSignalIsOffUnlessAsked) {
  EXPECT_FALSE(parse({}).config.report_on_signal);
  EXPECT_TRUE(parse({{"HOTSCOPE_ON_SIGNAL", "report"}}).config.report_on_signal);
  EXPECT_FALSE(parse({{"HOTSCOPE_ON_SIGNAL", "off"}}).config.report_on_signal);
  const auto parsed = parse({{"HOTSCOPE_ON_SIGNAL", "yes"}});
  EXPECT_FALSE(parsed.config.report_on_signal);
  EXPECT_TRUE(parsed.errors.empty());
  ASSERT_EQ(parsed.on_signal_errors.size(), 1u);
  EXPECT_EQ(parsed.on_signal_errors[0],
            "hotscope: HOTSCOPE_ON_SIGNAL=\"yes\" is not report or off; using off");
}

TEST(Config, CrashReportsAreOnUnlessSwitchedOff) {
  EXPECT_TRUE(parse({}).config.report_on_crash);
  EXPECT_TRUE(parse({{"HOTSCOPE_ON_CRASH", "report"}}).config.report_on_crash);
  EXPECT_FALSE(parse({{"HOTSCOPE_ON_CRASH", "off"}}).config.report_on_crash);
  const auto parsed = parse({{"HOTSCOPE_ON_CRASH", "0"}});
  EXPECT_TRUE(parsed.config.report_on_crash);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0],
            "hotscope: HOTSCOPE_ON_CRASH=\"0\" is not report or off; using report");
}

// HOTSCOPE_XRAY=off leaves XRay's sleds unpatched at start (docs/instrument.md, "XRay").
TEST(Config, XraySledsArePatchedUnlessSwitchedOff) {
  EXPECT_TRUE(parse({}).config.xray_patch);
  EXPECT_TRUE(parse({{"HOTSCOPE_XRAY", "on"}}).config.xray_patch);
  EXPECT_FALSE(parse({{"HOTSCOPE_XRAY", "off"}}).config.xray_patch);
  const auto parsed = parse({{"HOTSCOPE_XRAY", "no"}});
  EXPECT_TRUE(parsed.config.xray_patch);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0], "hotscope: HOTSCOPE_XRAY=\"no\" is not on or off; using on");
}

// HOTSCOPE_RUNTIME_AT=start preloads the runtime under `hotscope run --heap` in the sampled mode
// (docs/heap.md, "The runtime at the first client").
TEST(Config, TheRuntimeWaitsForAFirstClientUnlessAskedAtStart) {
  EXPECT_TRUE(parse({}).config.runtime_at_first_client);
  EXPECT_TRUE(parse({{"HOTSCOPE_RUNTIME_AT", "first-client"}}).config.runtime_at_first_client);
  EXPECT_FALSE(parse({{"HOTSCOPE_RUNTIME_AT", "start"}}).config.runtime_at_first_client);
  const auto parsed = parse({{"HOTSCOPE_RUNTIME_AT", "later"}});
  EXPECT_TRUE(parsed.config.runtime_at_first_client);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0], "hotscope: HOTSCOPE_RUNTIME_AT=\"later\" is not first-client or "
                              "start; using first-client");
}

TEST(Config, EachBadValueGetsOneLineNamingTheVariableAndKeepsTheDefault) {
  const auto parsed = parse({{"HOTSCOPE_OUT", ""},
                             {"HOTSCOPE_CLOCK", "sundial"},
                             {"HOTSCOPE_RING_RECORDS", "1000"},
                             {"HOTSCOPE_TRACE_MIB", "lots"},
                             {"HOTSCOPE_COLLECT_MS", "0"}});
  ASSERT_EQ(parsed.errors.size(), 5u);
  EXPECT_NE(parsed.errors[0].find("HOTSCOPE_OUT is set but empty"), std::string::npos);
  EXPECT_NE(parsed.errors[1].find("HOTSCOPE_CLOCK=\"sundial\""), std::string::npos);
  EXPECT_NE(parsed.errors[2].find("HOTSCOPE_RING_RECORDS=\"1000\""), std::string::npos);
  EXPECT_NE(parsed.errors[2].find("power of two"), std::string::npos);
  EXPECT_NE(parsed.errors[3].find("HOTSCOPE_TRACE_MIB=\"lots\""), std::string::npos);
  EXPECT_NE(parsed.errors[4].find("HOTSCOPE_COLLECT_MS=\"0\""), std::string::npos);
  for (const auto& line : parsed.errors) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.rfind("hotscope: ", 0), 0u);
  }
  EXPECT_EQ(parsed.config.clock, clock::Request::Auto);
  EXPECT_EQ(parsed.config.ring_records, 262144u);
  EXPECT_EQ(parsed.config.trace_window_bytes, 32u << 20);
  EXPECT_EQ(parsed.config.collect_period_ms, 10u);
}

TEST(Config, OutDirIsCreatedOrRefusedWithAReason) {
  const hotscope::testing::ScratchDir scratch("config");
  const std::filesystem::path& base = scratch.path();
  EXPECT_EQ(config::check_out_dir((base / "a" / "b").string()), "");
  EXPECT_TRUE(std::filesystem::is_directory(base / "a" / "b"));
  std::ofstream(base / "file") << "x";
  const std::string problem = config::check_out_dir((base / "file" / "sub").string());
  EXPECT_NE(problem.find("HOTSCOPE_OUT="), std::string::npos);
  EXPECT_NE(problem.find("cannot create"), std::string::npos);
}

TEST(HeapConfig, ReadsTheEnvironmentAndReportsBadValues) {
  const auto defaults = config::parse_heap([](const char*) -> const char* { return nullptr; });
  EXPECT_TRUE(defaults.errors.empty());
  EXPECT_EQ(defaults.options.out_dir, ".");
  EXPECT_EQ(defaults.options.depth, 32u);
  EXPECT_EQ(defaults.options.unwinder, config::Unwinder::Libunwind);
  EXPECT_TRUE(defaults.options.summary);

  const auto set = config::parse_heap([](const char* name) -> const char* {
    const std::string_view n = name;
    return n == "HOTSCOPE_OUT"            ? "/tmp/x"
           : n == "HOTSCOPE_HEAP_DEPTH"   ? "8"
           : n == "HOTSCOPE_HEAP_UNWIND"  ? "fp"
           : n == "HOTSCOPE_HEAP_SUMMARY" ? "0"
                                          : nullptr;
  });
  EXPECT_TRUE(set.errors.empty());
  EXPECT_EQ(set.options.out_dir, "/tmp/x");
  EXPECT_EQ(set.options.depth, 8u);
  EXPECT_EQ(set.options.unwinder, config::Unwinder::FramePointers);
  EXPECT_FALSE(set.options.summary);

  const auto bad = config::parse_heap([](const char* name) -> const char* {
    const std::string_view n = name;
    return n == "HOTSCOPE_HEAP_DEPTH" ? "0" : n == "HOTSCOPE_HEAP_UNWIND" ? "dwarf" : nullptr;
  });
  ASSERT_EQ(bad.errors.size(), 2u);
  EXPECT_EQ(bad.errors[0], "hotscope: HOTSCOPE_HEAP_DEPTH=\"0\" is not a frame count between 1 "
                           "and 256; using 32");
  EXPECT_EQ(
      bad.errors[1],
      "hotscope: HOTSCOPE_HEAP_UNWIND=\"dwarf\" is not one of libunwind, libunwind-uncached, fp; "
      "using libunwind");
  EXPECT_EQ(bad.options.depth, 32u);
}

TEST(HeapConfig, TheInflatedDebugCacheFollowsTheXdgCacheDirectoryUnlessSwitchedOff) {
  const auto with = [](const char* xdg, const char* home, const char* cache) {
    return config::parse_heap([=](const char* name) -> const char* {
      const std::string_view n = name;
      return n == "XDG_CACHE_HOME"              ? xdg
             : n == "HOME"                      ? home
             : n == "HOTSCOPE_HEAP_DEBUG_CACHE" ? cache
                                                : nullptr;
    });
  };
  EXPECT_EQ(with("/c", "/h", nullptr).options.debug_cache, "/c/hotscope/debug");
  EXPECT_EQ(with(nullptr, "/h", nullptr).options.debug_cache, "/h/.cache/hotscope/debug");
  // The XDG specification ignores a relative $XDG_CACHE_HOME.
  EXPECT_EQ(with("relative", "/h", "1").options.debug_cache, "/h/.cache/hotscope/debug");
  EXPECT_EQ(with(nullptr, nullptr, nullptr).options.debug_cache, "");
  EXPECT_EQ(with("/c", "/h", "0").options.debug_cache, "");
  const auto bad = with("/c", "/h", "off");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0], "hotscope: HOTSCOPE_HEAP_DEBUG_CACHE=\"off\" is not 0 or 1; using 1");
  EXPECT_EQ(bad.options.debug_cache, "/c/hotscope/debug");
}

TEST(HeapConfig, SamplingSettingsAndTheirErrors) {
  const auto set = config::parse_heap([](const char* name) -> const char* {
    const std::string_view n = name;
    return n == "HOTSCOPE_HEAP_MODE"           ? "sampled"
           : n == "HOTSCOPE_HEAP_SAMPLE_BYTES" ? "65536"
           : n == "HOTSCOPE_HEAP_SAMPLE_SEED"  ? "42"
                                               : nullptr;
  });
  EXPECT_TRUE(set.errors.empty());
  EXPECT_EQ(set.options.mode, config::HeapMode::Sampled);
  EXPECT_EQ(set.options.sample_bytes, 65536u);
  EXPECT_TRUE(set.options.seed_set);
  EXPECT_EQ(set.options.seed, 42u);

  const auto defaults = config::parse_heap([](const char*) -> const char* { return nullptr; });
  EXPECT_EQ(defaults.options.mode, config::HeapMode::Full);
  EXPECT_EQ(defaults.options.sample_bytes, 512u * 1024);
  EXPECT_FALSE(defaults.options.seed_set);

  const auto bad = config::parse_heap([](const char* name) -> const char* {
    const std::string_view n = name;
    return n == "HOTSCOPE_HEAP_MODE"           ? "fast"
           : n == "HOTSCOPE_HEAP_SAMPLE_BYTES" ? "0"
           : n == "HOTSCOPE_HEAP_SAMPLE_SEED"  ? "-1"
                                               : nullptr;
  });
  ASSERT_EQ(bad.errors.size(), 3u);
  EXPECT_EQ(bad.errors[0],
            "hotscope: HOTSCOPE_HEAP_MODE=\"fast\" is not one of full, sampled, off; using full");
  EXPECT_EQ(bad.errors[1], "hotscope: HOTSCOPE_HEAP_SAMPLE_BYTES=\"0\" is not a byte count of at "
                           "least 1; using 524288");
  EXPECT_EQ(bad.errors[2], "hotscope: HOTSCOPE_HEAP_SAMPLE_SEED=\"-1\" is not an unsigned 64-bit "
                           "integer; using a random seed");
  EXPECT_EQ(bad.options.mode, config::HeapMode::Full);

  // A program linked with hotscope::heap records nothing unless asked.
  const auto linked =
      config::parse_heap([](const char*) -> const char* { return nullptr; }, config::HeapMode::Off);
  EXPECT_EQ(linked.options.mode, config::HeapMode::Off);
  EXPECT_FALSE(linked.options.out_set);
  const auto linked_bad = config::parse_heap(
      [](const char* name) -> const char* {
        return std::string_view(name) == "HOTSCOPE_HEAP_MODE" ? "on" : nullptr;
      },
      config::HeapMode::Off);
  ASSERT_EQ(linked_bad.errors.size(), 1u);
  EXPECT_EQ(linked_bad.errors[0],
            "hotscope: HOTSCOPE_HEAP_MODE=\"on\" is not one of full, sampled, off; using off");
  const auto off = config::parse_heap([](const char* name) -> const char* {
    const std::string_view n = name;
    return n == "HOTSCOPE_HEAP_MODE" ? "off" : n == "HOTSCOPE_OUT" ? "/tmp/x" : nullptr;
  });
  EXPECT_EQ(off.options.mode, config::HeapMode::Off);
  EXPECT_TRUE(off.options.out_set);
}

// Both readers treat an empty HOTSCOPE_OUT alike: one line, and the default directory (none for
// libhotscope's reports, the current one for the preload library's heap.json).
TEST(HeapConfig, AnEmptyOutDirectoryIsOneLineInBothReaders) {
  const std::string line =
      "hotscope: HOTSCOPE_OUT is set but empty; set it to a directory for the reports";
  const auto empty = [](const char* name) -> const char* {
    return std::string_view(name) == "HOTSCOPE_OUT" ? "" : nullptr;
  };
  const config::ParsedHeap heap = config::parse_heap(empty);
  ASSERT_EQ(heap.errors.size(), 1u);
  EXPECT_EQ(heap.errors[0], line);
  EXPECT_EQ(heap.options.out_dir, ".");
  EXPECT_FALSE(heap.options.out_set);
  const config::Parsed library = config::parse(empty);
  ASSERT_EQ(library.errors.size(), 1u);
  EXPECT_EQ(library.errors[0], line);
  EXPECT_EQ(library.config.out_dir, "");
}

} // namespace
