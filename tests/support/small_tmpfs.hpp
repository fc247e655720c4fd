// A 64 KiB tmpfs on a fresh directory, for tests of what a full file system does to the files
// hotscope writes. Mounting needs root: without it, skip_reason() says why and the test skips.
#pragma once

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace hotscope::testing {

class SmallTmpfs {
public:
  SmallTmpfs() {
    if (geteuid() != 0) {
      skip_reason_ = "needs root to mount a small tmpfs (CI runs as root)";
      return;
    }
    char pattern[] = "/tmp/hs-tmpfs-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      skip_reason_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    path_ = pattern;
    if (mount("tmpfs", pattern, "tmpfs", 0, "size=64k") != 0) {
      skip_reason_ = std::string("cannot mount a tmpfs here: ") + std::strerror(errno);
      rmdir(pattern);
      path_.clear();
    }
  }
  ~SmallTmpfs() {
    if (skip_reason_.empty()) {
      umount2(path_.c_str(), MNT_DETACH);
      rmdir(path_.c_str());
    }
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  // "" when mounted.
  const std::string& skip_reason() const { return skip_reason_; }
  const std::filesystem::path& path() const { return path_; }

  // Takes every free page left, with a file called `name`.
  void fill(const std::string& name = "filler") const {
    std::ofstream out(path_ / name, std::ios::binary | std::ios::app);
    const std::string block(4096, 'x');
    while (out.write(block.data(), static_cast<std::streamsize>(block.size())) && out.flush()) {
    }
  }

private:
  std::filesystem::path path_;
  std::string skip_reason_;
};

} // namespace hotscope::testing
