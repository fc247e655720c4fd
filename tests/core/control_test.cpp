// The calls for the whole process (<hotscope/control.hpp>) answer with a Result: done, or why not.
#include <hotscope/control.hpp>

#include <gtest/gtest.h>

#include <type_traits>

namespace {

TEST(ControlResult, DoneOrAFailureThatSaysWhy) {
  const hotscope::Result done;
  EXPECT_TRUE(done.ok());
  EXPECT_TRUE(static_cast<bool>(done));
  EXPECT_EQ(done.problem(), "");

  const hotscope::Result failed = hotscope::Result::failure("cannot write /x/heap.json: EROFS");
  EXPECT_FALSE(failed.ok());
  EXPECT_FALSE(static_cast<bool>(failed));
  EXPECT_EQ(failed.problem(), "cannot write /x/heap.json: EROFS");

  // A failure always says something.
  EXPECT_EQ(hotscope::Result::failure("").problem(), "failed");
  // `if (result)` reads it; nothing converts it to an int or a string by accident.
  static_assert(!std::is_convertible_v<hotscope::Result, bool>);
  static_assert(!std::is_convertible_v<hotscope::Result, std::string>);
}

// A program without a heap library: the heap calls fail and say what would enable them.
TEST(ControlResult, HeapCallsWithoutAHeapLibrarySayHowToGetOne) {
  EXPECT_EQ(hotscope::heap_mode(), hotscope::HeapMode::NotLinked);
  std::string out = "untouched";
  const hotscope::Result result = hotscope::heap_profile(hotscope::HeapFormat::Dhat, out);
  EXPECT_FALSE(result);
  EXPECT_NE(result.problem().find("hotscope::heap"), std::string::npos) << result.problem();
  EXPECT_EQ(out, "untouched");
}

} // namespace
