// A program that only calls <hotscope/control.hpp> still gets the runtime: its reports at exit.
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

TEST(RuntimeLinked, AProgramWithoutMacrosWritesItsReports) {
  const hotscope::testing::ScratchDir scratch("control-only");
  const std::filesystem::path out = scratch.path() / "out";
  const std::string printed = hotscope::test_support::output_of(
      "HOTSCOPE_AGENT=0 HOTSCOPE_OUT=" + out.string() + " " CONTROL_ONLY_PROGRAM);
  EXPECT_EQ(printed, "heap mode 0\n");
  EXPECT_TRUE(std::filesystem::exists(out / "stats.json")) << "the runtime did not start";
}

} // namespace
