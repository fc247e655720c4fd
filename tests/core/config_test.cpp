#include "config/config.hpp"

#include <gtest/gtest.h>

#include "support/scratch_dir.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

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
                             {"HOTSCOPE_COLLECT_MS", "5"}});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.config.out_dir, "/tmp/x");
  EXPECT_EQ(parsed.config.clock, clock::Request::Monotonic);
  EXPECT_EQ(parsed.config.ring_records, 1024u);
  EXPECT_EQ(parsed.config.trace_window_bytes, 0u);
  EXPECT_EQ(parsed.config.collect_period_ms, 5u);
}

TEST(Config, ReportOnSignalIsOffUnlessAsked) {
  EXPECT_FALSE(parse({}).config.report_on_signal);
  EXPECT_TRUE(parse({{"HOTSCOPE_ON_SIGNAL", "report"}}).config.report_on_signal);
  EXPECT_FALSE(parse({{"HOTSCOPE_ON_SIGNAL", "off"}}).config.report_on_signal);
  const auto parsed = parse({{"HOTSCOPE_ON_SIGNAL", "yes"}});
  EXPECT_FALSE(parsed.config.report_on_signal);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0],
            "hotscope: HOTSCOPE_ON_SIGNAL=\"yes\" is not report or off; using off");
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

} // namespace
