// The project's one file writer: whole or not at all, never through a planted link, nothing left
// behind by a failure, a full file system or a process killed while writing; and its one way to
// write a new file in place (write_new).
#include "atomic_file/atomic_file.hpp"

#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "support/small_tmpfs.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::slurp;
namespace atomic_file = hotscope::atomic_file;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, WritesAndReplacesWithTheModeAsked) {
  const hotscope::testing::ScratchDir scratch("atomic-replace");
  const std::string path = (scratch.path() / "out.txt").string();
  EXPECT_EQ(atomic_file::write(path, "first\n"), "");
  EXPECT_EQ(atomic_file::write(path, "second\n", 0600), "");
  EXPECT_EQ(slurp(path), "second\n");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(names_in(scratch.path()), std::vector<std::string>{"out.txt"});
  // Streamed content larger than the writer's buffer arrives whole.
  const std::string big(300'000, 'z');
  EXPECT_EQ(atomic_file::write(path, [&](std::ostream& out) { out << big << '\n'; }), "");
  EXPECT_EQ(slurp(path), big + '\n');
}

TEST(AtomicFile, APlantedLinkIsReplacedNeverFollowed) {
  const hotscope::testing::ScratchDir scratch("atomic-link");
  const fs::path target = scratch.path() / "precious";
  std::ofstream(target) << "keep me\n";
  const fs::path path = scratch.path() / "report.json";
  fs::create_symlink(target, path);
  EXPECT_EQ(atomic_file::write(path.string(), "{}\n"), "");
  EXPECT_EQ(slurp(target), "keep me\n");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(slurp(path), "{}\n");
}

TEST(AtomicFile, AFailureKeepsThePreviousFileAndLeavesNoTemporary) {
  const hotscope::testing::ScratchDir scratch("atomic-failure");
  const std::string path = (scratch.path() / "out.txt").string();
  ASSERT_EQ(atomic_file::write(path, "previous\n"), "");
  const std::string reason = atomic_file::write(path, [](std::ostream& out) {
    out << std::string(100'000, 'p');
    throw std::runtime_error("the exporter gave up");
  });
  EXPECT_EQ(reason, "the exporter gave up");
  EXPECT_EQ(slurp(path), "previous\n");
  EXPECT_EQ(names_in(scratch.path()), std::vector<std::string>{"out.txt"});
  // A directory in the way, and a directory that does not exist: the reason, nothing created.
  fs::create_directory(scratch.path() / "dir");
  EXPECT_EQ(atomic_file::write((scratch.path() / "dir").string(), "x"), "Is a directory");
  EXPECT_EQ(atomic_file::write((scratch.path() / "none" / "x").string(), "x"),
            "No such file or directory");
  EXPECT_EQ(names_in(scratch.path()), (std::vector<std::string>{"dir", "out.txt"}));
  EXPECT_TRUE(fs::is_empty(scratch.path() / "dir"));
}

TEST(AtomicFile, AProcessKilledWhileWritingLeavesThePreviousFileAndNothingElse) {
  const hotscope::testing::ScratchDir scratch("atomic-killed");
  const int probe = open(scratch.path().c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (probe < 0) {
    GTEST_SKIP() << "this file system has no unnamed files (O_TMPFILE): a writer killed there "
                    "leaves its randomly named temporary file";
  }
  close(probe);
  const std::string path = (scratch.path() / "heap.json").string();
  ASSERT_EQ(atomic_file::write(path, "previous\n"), "");
  const pid_t child = fork();
  if (child == 0) {
    atomic_file::write(path, [](std::ostream& out) {
      out << std::string(200'000, 'k'); // past the buffer: on disk already
      out.flush();
      raise(SIGKILL);
    });
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(slurp(path), "previous\n");
  EXPECT_EQ(names_in(scratch.path()), std::vector<std::string>{"heap.json"});
}

TEST(AtomicFile, AFullFileSystemKeepsThePreviousFileAndLeavesNoTemporary) {
  const hotscope::testing::SmallTmpfs tmpfs;
  if (!tmpfs.skip_reason().empty()) {
    GTEST_SKIP() << tmpfs.skip_reason();
  }
  const std::string path = (tmpfs.path() / "trace.json").string();
  const std::string previous = "{\"traceEvents\": []}\n";
  ASSERT_EQ(atomic_file::write(path, previous), "");
  // More than the whole file system: it fills up on the way.
  EXPECT_EQ(atomic_file::write(path, std::string(100'000, 't')), "No space left on device");
  EXPECT_EQ(slurp(path), previous);
  EXPECT_EQ(names_in(tmpfs.path()), std::vector<std::string>{"trace.json"});
  // Full before the write starts.
  tmpfs.fill();
  EXPECT_EQ(atomic_file::write(path, std::string(5'000, 't')), "No space left on device");
  EXPECT_EQ(slurp(path), previous);
  EXPECT_EQ(names_in(tmpfs.path()), (std::vector<std::string>{"filler", "trace.json"}));
}

// The one exception: a new file written in place, for a reader that waits for its writer to end.
TEST(AtomicFile, WriteNewCreatesOnlyANewFileAndLeavesNothingOnFailure) {
  const hotscope::testing::ScratchDir scratch("atomic-new");
  const std::string path = (scratch.path() / "heap.raw").string();
  EXPECT_EQ(atomic_file::write_new(path, "raw\n"), "");
  EXPECT_EQ(slurp(path), "raw\n");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // An existing file, or a link planted at the name, is refused and left as it was.
  EXPECT_EQ(atomic_file::write_new(path, "again\n"), "File exists");
  EXPECT_EQ(slurp(path), "raw\n");
  const fs::path target = scratch.path() / "precious";
  std::ofstream(target) << "keep me\n";
  fs::create_symlink(target, scratch.path() / "planted");
  EXPECT_EQ(atomic_file::write_new((scratch.path() / "planted").string(), "x"), "File exists");
  EXPECT_EQ(slurp(target), "keep me\n");
  EXPECT_EQ(names_in(scratch.path()),
            (std::vector<std::string>{"heap.raw", "planted", "precious"}));
  // A full file system: the reason, and no file left behind.
  const hotscope::testing::SmallTmpfs tmpfs;
  if (!tmpfs.skip_reason().empty()) {
    GTEST_SKIP() << tmpfs.skip_reason();
  }
  EXPECT_EQ(atomic_file::write_new((tmpfs.path() / "heap.raw").string(), std::string(100'000, 'r')),
            "No space left on device");
  EXPECT_TRUE(fs::is_empty(tmpfs.path()));
}

} // namespace
