#include "atomic_file/atomic_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string_view>
#include <system_error>
#include <vector>

namespace hotscope::atomic_file {

using detail::PendingFile;

namespace {

std::string reason_of(int error) {
  return std::system_category().message(error);
}

// Writes all of `bytes` to `fd`: 0 or the errno that stopped it.
int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(wrote));
    } else if (wrote == 0) {
      return ENOSPC;
    } else if (errno != EINTR) {
      return errno;
    }
  }
  return 0;
}

// An output buffer on a file descriptor that keeps the first write error (errno) it meets.
class FdBuffer final : public std::streambuf {
public:
  // The buffer is not zeroed: a small file touches only the pages it fills (the sampled heap
  // profile's raw report at a program's exit: 15 page faults fewer).
  explicit FdBuffer(int fd) : fd_(fd), buffer_(new char[kBytes]) { reset(); }

  // Writes out what is buffered; false once a write failed.
  bool drain() {
    if (error_ == 0) {
      error_ =
          write_all(fd_, std::string_view(pbase(), static_cast<std::size_t>(pptr() - pbase())));
    }
    reset();
    return error_ == 0;
  }
  int error() const { return error_; }

protected:
  int_type overflow(int_type c) override {
    if (!drain()) {
      return traits_type::eof();
    }
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

private:
  void reset() { setp(buffer_.get(), buffer_.get() + kBytes); }

  static constexpr std::size_t kBytes = 64 * 1024;
  int fd_;
  std::unique_ptr<char[]> buffer_;
  int error_ = 0;
};

// "<path>.<16 hex digits>.tmp", a name nobody can have guessed in advance.
std::string random_name(const std::string& path) {
  std::uint64_t value = 0;
  if (getrandom(&value, sizeof(value), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(value))) {
    static std::atomic<std::uint64_t> counter{0};
    value =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<std::uint64_t>(getpid()) << 40) ^ counter.fetch_add(1) * 0x9E3779B97F4A7C15;
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string name = path + '.';
  for (int shift = 60; shift >= 0; shift -= 4) {
    name += kDigits[(value >> shift) & 0xF];
  }
  return name + ".tmp";
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Calls `create(name)` with fresh random names until one did not exist yet.
template <typename Create>
int create_fresh(const std::string& path, std::string& name, Create create) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = random_name(path);
    const int result = create(name);
    if (result >= 0 || errno != EEXIST) {
      return result;
    }
  }
  errno = EEXIST;
  return -1;
}

// Returns the errno of a failure, or 0.
int open_temporary(const std::string& path, mode_t mode, PendingFile& temporary) {
  temporary.fd = open(directory_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  if (temporary.fd >= 0) {
    return 0;
  }
  // Only a file system (or kernel) without unnamed files falls back to a named one.
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return errno;
  }
  temporary.fd = create_fresh(path, temporary.name, [mode](const std::string& name) {
    return open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  });
  return temporary.fd >= 0 ? 0 : errno;
}

// Gives the written file a fresh name beside its target if it has none, and closes it (close
// reports what a network file system could not store). Returns the errno of a failure, or 0; on
// failure nothing is left behind. No fsync: every profiled process writes its profile at exit, and
// a program that starts many processes would wait for the disk in each of them.
int name_temporary(PendingFile& temporary) {
  int error = 0;
  if (temporary.name.empty()) {
    const std::string self = "/proc/self/fd/" + std::to_string(temporary.fd);
    if (create_fresh(temporary.path, temporary.name, [&self](const std::string& name) {
          return linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
        }) != 0) {
      error = errno;
      temporary.name.clear();
    }
  }
  if (close(temporary.fd) != 0 && error == 0) {
    error = errno;
  }
  temporary.fd = -1;
  if (error != 0 && !temporary.name.empty()) {
    unlink(temporary.name.c_str());
  }
  return error;
}

// Drops a file that will not be used: closed, and its name (if it got one) removed.
void discard(PendingFile& temporary) {
  if (temporary.fd >= 0) {
    close(temporary.fd);
    temporary.fd = -1;
  }
  if (!temporary.name.empty()) {
    unlink(temporary.name.c_str());
    temporary.name.clear();
  }
}

// Fills a new temporary file beside `temporary.path`. Returns "" or the reason it failed; on
// failure nothing is left behind.
std::string fill_temporary(PendingFile& temporary, const std::function<void(std::ostream&)>& fill,
                           mode_t mode) {
  if (const int error = open_temporary(temporary.path, mode, temporary); error != 0) {
    return reason_of(error);
  }
  std::string problem;
  {
    FdBuffer buffer(temporary.fd);
    std::ostream out(&buffer);
    try {
      fill(out);
      if (!buffer.drain() || !out) {
        problem = reason_of(buffer.error() != 0 ? buffer.error() : EIO);
      }
    } catch (const std::exception& e) {
      problem = buffer.error() != 0 ? reason_of(buffer.error()) : e.what();
    } catch (...) {
      problem = "failed while writing";
    }
  }
  if (!problem.empty()) {
    discard(temporary);
  }
  return problem;
}

// Bytes at hand go in without a stream: a process's first stream builds the C++ library's
// locale, which a program that never used one (the sampled heap profile's raw report at exit)
// would pay for.
std::string fill_temporary(PendingFile& temporary, std::string_view bytes, mode_t mode) {
  if (const int error = open_temporary(temporary.path, mode, temporary); error != 0) {
    return reason_of(error);
  }
  if (const int error = write_all(temporary.fd, bytes); error != 0) {
    discard(temporary);
    return reason_of(error);
  }
  return "";
}

// How replacing a set of files went: `error` is 0 when all were replaced, else the errno of file
// `failed`; the first `replaced` files are new, the others are as they were.
struct Replaced {
  std::size_t failed = 0;
  int error = 0;
  std::size_t replaced = 0;
};

// Names every file before any target is replaced, since naming is what can still fail (a full
// directory, a network file system's close) and renaming within one directory hardly can; then
// renames each over its target. Nothing temporary is left behind either way.
Replaced replace_targets(std::vector<PendingFile>& files) {
  Replaced result{files.size(), 0, 0};
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (const int error = name_temporary(files[i]); error != 0) {
      for (PendingFile& file : files) {
        discard(file);
      }
      return {i, error, 0};
    }
  }
  // A directory in a target's place is the one failure of rename() that can be seen before.
  for (std::size_t i = 0; i < files.size(); ++i) {
    struct stat target {};
    if (lstat(files[i].path.c_str(), &target) == 0 && S_ISDIR(target.st_mode)) {
      for (PendingFile& file : files) {
        discard(file);
      }
      return {i, EISDIR, 0};
    }
  }
  for (std::size_t i = 0; i < files.size() && result.error == 0; ++i) {
    if (rename(files[i].name.c_str(), files[i].path.c_str()) == 0) {
      files[i].name.clear();
      result.replaced = i + 1;
    } else {
      result = {i, errno, i};
    }
  }
  for (PendingFile& file : files) {
    discard(file);
  }
  return result;
}

} // namespace

FileSet::FileSet() = default;

FileSet::~FileSet() {
  for (PendingFile& file : pending_) {
    discard(file);
  }
}

std::string FileSet::add(const std::string& path, const std::function<void(std::ostream&)>& fill,
                         mode_t mode) {
  PendingFile file;
  file.path = path;
  std::string problem = fill_temporary(file, fill, mode);
  if (problem.empty()) {
    pending_.push_back(std::move(file));
  }
  return problem;
}

std::string FileSet::commit() {
  std::vector<PendingFile> files = std::move(pending_);
  pending_.clear();
  const Replaced replaced = replace_targets(files);
  if (replaced.error == 0) {
    return "";
  }
  std::string message = files[replaced.failed].path + ": " + reason_of(replaced.error);
  if (replaced.replaced == 0) {
    return message + (files.size() > 1 ? " (no file was replaced)" : "");
  }
  message += " (new: ";
  for (std::size_t i = 0; i < replaced.replaced; ++i) {
    message += (i == 0 ? "" : ", ") + files[i].path;
  }
  return message + "; the others are as they were)";
}

namespace {

// One file: its content (a filling function or bytes) written aside, then renamed over `path`.
template <class Content>
std::string write_one(const std::string& path, const Content& content, mode_t mode) {
  std::vector<PendingFile> files(1);
  files[0].path = path;
  if (std::string problem = fill_temporary(files[0], content, mode); !problem.empty()) {
    return problem;
  }
  const Replaced replaced = replace_targets(files);
  return replaced.error == 0 ? "" : reason_of(replaced.error);
}

void create_parent_directories(const std::string& path) {
  std::error_code ignored; // a directory that cannot be made fails the write, which says why
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
}

} // namespace

std::string write(const std::string& path, const std::function<void(std::ostream&)>& fill,
                  mode_t mode) {
  return write_one(path, fill, mode);
}

std::string write(const std::string& path, std::string_view bytes, mode_t mode) {
  return write_one(path, bytes, mode);
}

std::string write_creating_directory(const std::string& path,
                                     const std::function<void(std::ostream&)>& fill) {
  create_parent_directories(path);
  return write(path, fill);
}

std::string write_creating_directory(const std::string& path, std::string_view bytes) {
  create_parent_directories(path);
  return write(path, bytes);
}

std::string write_new(const std::string& path, std::string_view bytes, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    return reason_of(errno);
  }
  int error = write_all(fd, bytes);
  if (close(fd) != 0 && error == 0) {
    error = errno;
  }
  if (error != 0) {
    unlink(path.c_str());
  }
  return error == 0 ? "" : reason_of(error);
}

} // namespace hotscope::atomic_file
