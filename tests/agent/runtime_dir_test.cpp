// The runtime directory's checks at an agent's start (agent/runtime_dir.hpp): an entry of another
// user's refuses the directory, and a private directory already found clean is not read again.
#include "agent/runtime_dir.hpp"

#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using hotscope::agent::kCheckedMark;
using hotscope::agent::prepare_dir;
using hotscope::testing::ScratchDir;

namespace {

constexpr uid_t kOtherUser = 65534;

// A file in `dir` that belongs to another user: planted while the directory was open to others,
// or, in a private one, by root.
void plant_foreign(const fs::path& dir, const std::string& name) {
  std::ofstream(dir / name) << "planted\n";
  ASSERT_EQ(chown((dir / name).c_str(), kOtherUser, kOtherUser), 0);
}

bool refused_for(const std::string& problem, const std::string& entry) {
  return problem.find(" holds " + entry + ", which belongs to uid 65534") != std::string::npos;
}

} // namespace

TEST(RuntimeDir, ACheckedPrivateDirectoryIsNotReadEntryByEntry) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file to another user (uid 65534)";
  }
  const ScratchDir scratch("runtime-dir-checked");
  const fs::path dir = scratch.path() / "rt";
  ASSERT_EQ(prepare_dir(dir), "");
  EXPECT_TRUE(fs::is_regular_file(dir / kCheckedMark));
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
  // Only root can add another user's entry to a private directory: the next start does not look.
  plant_foreign(dir, "4242.json");
  EXPECT_EQ(prepare_dir(dir), "");
  // Without the mark, each entry is read.
  fs::remove(dir / kCheckedMark);
  EXPECT_TRUE(refused_for(prepare_dir(dir), "4242.json"));
  EXPECT_FALSE(fs::exists(dir / kCheckedMark));
}

TEST(RuntimeDir, ADirectoryOpenToOthersIsReadAgainAndStaysRefused) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file to another user (uid 65534)";
  }
  const ScratchDir scratch("runtime-dir-open");
  const fs::path dir = scratch.path() / "rt";
  ASSERT_EQ(prepare_dir(dir), "");
  ASSERT_TRUE(fs::exists(dir / kCheckedMark));
  fs::permissions(dir, fs::perms::all);
  plant_foreign(dir, "4242.json.tmp");
  EXPECT_TRUE(refused_for(prepare_dir(dir), "4242.json.tmp"));
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
  // Private now, but the mark went with the check that failed: refused again.
  EXPECT_FALSE(fs::exists(dir / kCheckedMark));
  EXPECT_TRUE(refused_for(prepare_dir(dir), "4242.json.tmp"));
  fs::remove(dir / "4242.json.tmp");
  EXPECT_EQ(prepare_dir(dir), "");
  EXPECT_TRUE(fs::exists(dir / kCheckedMark));
}

TEST(RuntimeDir, AMarkNotOfOursAloneIsNoMark) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file to another user (uid 65534)";
  }
  const ScratchDir scratch("runtime-dir-mark");
  const fs::path dir = scratch.path() / "rt";
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_all);
  plant_foreign(dir, "4242.sock");
  // Another user's mark.
  plant_foreign(dir, kCheckedMark);
  EXPECT_FALSE(prepare_dir(dir).empty());
  fs::remove(dir / kCheckedMark);
  // A hard link to a file of ours under the mark's name (as one made by someone else would be).
  std::ofstream(scratch.path() / "ours") << "ours\n";
  fs::create_hard_link(scratch.path() / "ours", dir / kCheckedMark);
  EXPECT_TRUE(refused_for(prepare_dir(dir), "4242.sock"));
  // A link to a directory of ours.
  fs::remove(dir / kCheckedMark);
  fs::create_directory_symlink(scratch.path(), dir / kCheckedMark);
  EXPECT_TRUE(refused_for(prepare_dir(dir), "4242.sock"));
}
