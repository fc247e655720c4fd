// `-o FILE` on what is not a regular file (docs/agent.md, "-o FILE"): a character device, a FIFO
// or a socket is written through and never replaced; a link the user gave is followed to its
// target, which is replaced atomically when it is a regular file; `-o -` is standard output.
// Checked with `hotscope flame`, which needs no running process; every command writes its -o
// through the same function.
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::slurp;
using namespace std::chrono_literals;

struct Result {
  int status = -1;
  std::string out, err;
};

// `hotscope flame FOLDED -o OUTPUT` with its standard output and error kept in `dir`.
Result flame(const fs::path& dir, const std::string& output) {
  const fs::path folded = dir / "trace.folded";
  std::ofstream(folded) << "main;parse 300\nmain;render 700\n";
  const std::string command = std::string(HOTSCOPE_CLI) + " flame " + folded.string() + " -o '" +
                              output + "' >" + (dir / "stdout").string() + " 2>" +
                              (dir / "stderr").string();
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "stdout"),
          slurp(dir / "stderr")};
}

bool is_svg(const std::string& text) {
  return text.find("<svg") != std::string::npos && text.find("render") != std::string::npos;
}

mode_t kind_of(const fs::path& path) {
  struct stat status {};
  return lstat(path.c_str(), &status) == 0 ? (status.st_mode & S_IFMT) : 0;
}

// A character device of our own, the same as /dev/`name` (major 1), so the test never risks the
// real one. Tests run as root; elsewhere mknod is refused and the test is skipped.
bool make_device(const fs::path& path, unsigned minor) {
  return mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

TEST(OutputCli, ACharacterDeviceIsWrittenThroughAndItsErrorReported) {
  const hotscope::testing::ScratchDir scratch("output-device");
  const fs::path full = scratch.path() / "full";
  const fs::path null = scratch.path() / "null";
  if (!make_device(full, 7) || !make_device(null, 3)) {
    GTEST_SKIP() << "mknod: " << std::strerror(errno) << " (the test needs root)";
  }
  const Result to_full = flame(scratch.path(), full.string());
  EXPECT_EQ(to_full.status, 8) << to_full.err;
  EXPECT_EQ(to_full.err, "hotscope: cannot write " + full.string() + ": No space left on device\n");
  EXPECT_EQ(kind_of(full), static_cast<mode_t>(S_IFCHR));

  const Result to_null = flame(scratch.path(), null.string());
  EXPECT_EQ(to_null.status, 0) << to_null.err;
  EXPECT_EQ(kind_of(null), static_cast<mode_t>(S_IFCHR));
}

TEST(OutputCli, AFifoIsWrittenThrough) {
  const hotscope::testing::ScratchDir scratch("output-fifo");
  const fs::path fifo = scratch.path() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::string read_back;
  // Non-blocking, so that a writer that never comes (a FIFO replaced by a file) ends the wait.
  std::thread reader([&] {
    const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    char buffer[4096];
    while (fd >= 0 && std::chrono::steady_clock::now() < deadline) {
      const ssize_t got = read(fd, buffer, sizeof buffer);
      if (got > 0) {
        read_back.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 && !read_back.empty()) {
        break; // the writer closed it
      } else {
        std::this_thread::sleep_for(5ms);
      }
    }
    close(fd);
  });
  const Result result = flame(scratch.path(), fifo.string());
  reader.join();
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_TRUE(is_svg(read_back)) << read_back.substr(0, 200);
  EXPECT_EQ(kind_of(fifo), static_cast<mode_t>(S_IFIFO));
}

TEST(OutputCli, ALinkIsFollowedAndItsRegularTargetReplaced) {
  const hotscope::testing::ScratchDir scratch("output-link");
  const fs::path target = scratch.path() / "flame.svg";
  const fs::path link = scratch.path() / "link.svg";
  std::ofstream(target) << "earlier";
  fs::create_symlink(target, link);
  const Result result = flame(scratch.path(), link.string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(kind_of(link), static_cast<mode_t>(S_IFLNK));
  EXPECT_TRUE(is_svg(slurp(target)));

  // A link whose target does not exist yet: the target is created.
  const fs::path dangling = scratch.path() / "dangling.svg";
  fs::create_symlink(scratch.path() / "new.svg", dangling);
  EXPECT_EQ(flame(scratch.path(), dangling.string()).status, 0);
  EXPECT_EQ(kind_of(dangling), static_cast<mode_t>(S_IFLNK));
  EXPECT_TRUE(is_svg(slurp(scratch.path() / "new.svg")));
}

TEST(OutputCli, ALinkToStandardOutputAndADashWriteThere) {
  const hotscope::testing::ScratchDir scratch("output-stdout");
  const fs::path link = scratch.path() / "out";
  fs::create_symlink("/proc/self/fd/1", link);
  const Result through_link = flame(scratch.path(), link.string());
  EXPECT_EQ(through_link.status, 0) << through_link.err;
  EXPECT_TRUE(is_svg(through_link.out));
  EXPECT_EQ(kind_of(link), static_cast<mode_t>(S_IFLNK));

  const Result dash = flame(scratch.path(), "-");
  EXPECT_EQ(dash.status, 0) << dash.err;
  EXPECT_TRUE(is_svg(dash.out));
  EXPECT_FALSE(fs::exists(scratch.path() / "-"));
}

} // namespace
