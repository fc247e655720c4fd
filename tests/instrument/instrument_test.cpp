// Runs instrumented_program (built with hotscope_instrument) and checks what hotscope recorded of
// its functions, which carry no macro: call counts, names with file and line (in the PIE
// executable and in a shared library), recursion, an exception unwinding through instrumented
// frames, threads, a function called before main and one macro scope in the same tree.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "support/stats.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::calls_of;
using hotscope::test_support::lines_of;
using hotscope::test_support::slurp;
using Json = nlohmann::json;

// Runs the program with `environment` and returns the directory of its reports.
fs::path run_program(const hotscope::testing::ScratchDir& scratch,
                     const std::string& environment = "") {
  const fs::path out = scratch.path() / "out";
  const std::string command = "timeout 60 env HOTSCOPE_OUT=" + out.string() + " " + environment +
                              " " + INSTRUMENTED_PROGRAM + " 2>" +
                              (scratch.path() / "stderr").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << slurp(scratch.path() / "stderr");
  return out;
}

const Json* function_named(const Json& stats, const std::string& name) {
  for (const Json& function : stats.at("functions")) {
    if (function.at("name") == name) {
      return &function;
    }
  }
  return nullptr;
}

TEST(Instrument, EveryFunctionCalledIsCountedAndNamed) {
  const hotscope::testing::ScratchDir scratch("instrument-counts");
  const fs::path out = run_program(scratch);
  const Json stats = Json::parse(slurp(out / "stats.json"));
  const std::map<std::string, std::uint64_t> expected{{"main", 1},
                                                      {"(anonymous namespace)::leaf", 1401},
                                                      {"(anonymous namespace)::countdown", 11},
                                                      {"(anonymous namespace)::thrower", 1},
                                                      {"(anonymous namespace)::middle", 1},
                                                      {"(anonymous namespace)::after_catch", 1},
                                                      {"(anonymous namespace)::catcher", 1},
                                                      {"(anonymous namespace)::worker", 4},
                                                      {"library::twice", 5},
                                                      {"(anonymous namespace)::with_macro", 1},
                                                      {"(anonymous namespace)::before_main", 1},
                                                      {"macro_block", 1}};
  for (const auto& [name, calls] : expected) {
    EXPECT_EQ(calls_of(stats, name), calls) << name << "\n" << stats.at("functions").dump(1);
  }
  // Named from the debug information: the executable (PIE) and the shared library.
  const Json* leaf = function_named(stats, "(anonymous namespace)::leaf");
  ASSERT_NE(leaf, nullptr);
  EXPECT_NE(leaf->at("file").get<std::string>().find("instrumented_program.cpp"), std::string::npos)
      << leaf->dump();
  EXPECT_GT(leaf->at("line").get<int>(), 0);
  const Json* twice = function_named(stats, "library::twice");
  ASSERT_NE(twice, nullptr);
  EXPECT_NE(twice->at("file").get<std::string>().find("instrumented_library.cpp"),
            std::string::npos)
      << twice->dump();
  EXPECT_EQ(stats.at("records").at("dropped"), 0) << stats.at("records").dump();
}

// The folded stacks of the trace: every slice closed where it belongs, the exception's frames
// too, and the macro scope inside the instrumented function that opened it.
TEST(Instrument, ExceptionsRecursionAndMacrosNestInOneTree) {
  const hotscope::testing::ScratchDir scratch("instrument-tree");
  const fs::path out = run_program(scratch);
  std::map<std::string, std::uint64_t> stacks;
  for (const std::string& line : lines_of(slurp(out / "trace.folded"))) {
    const std::size_t space = line.rfind(' ');
    const std::string stack = line.substr(0, space);
    // The process's and the thread's names come first.
    stacks[stack.substr(stack.find(';', stack.find(';') + 1) + 1)] += 1;
  }
  const std::string ns = "(anonymous namespace)::";
  const auto has = [&](const std::string& stack) { return stacks.count(stack) != 0; };
  EXPECT_TRUE(has("main;" + ns + "catcher;" + ns + "middle;" + ns + "thrower"));
  EXPECT_TRUE(has("main;" + ns + "catcher;" + ns + "after_catch"))
      << "the unwound calls closed before the handler ran";
  EXPECT_TRUE(has("main;" + ns + "with_macro;macro_block;" + ns + "leaf"));
  std::string deepest = "main";
  for (int depth = 0; depth <= 10; ++depth) {
    deepest += ";" + ns + "countdown";
  }
  EXPECT_TRUE(has(deepest));
  EXPECT_TRUE(has(ns + "worker;" + ns + "leaf")) << "on the worker threads";
  for (const auto& [stack, count] : stacks) {
    EXPECT_EQ(stack.find("after_catch;"), std::string::npos) << stack;
    EXPECT_EQ(stack.find("thrower;"), std::string::npos) << stack;
  }
}

} // namespace
