#include "atomic_file/atomic_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <streambuf>
#include <system_error>
#include <vector>

namespace hotscope::atomic_file {
namespace {

std::string reason_of(int error) {
  return std::system_category().message(error);
}

// An output buffer on a file descriptor that keeps the first write error (errno) it meets.
class FdBuffer final : public std::streambuf {
public:
  explicit FdBuffer(int fd) : fd_(fd), buffer_(64 * 1024) { reset(); }

  // Writes out what is buffered; false once a write failed.
  bool drain() {
    const char* from = pbase();
    while (from < pptr() && error_ == 0) {
      const ssize_t wrote = ::write(fd_, from, static_cast<std::size_t>(pptr() - from));
      if (wrote > 0) {
        from += wrote;
      } else if (wrote == 0) {
        error_ = ENOSPC;
      } else if (errno != EINTR) {
        error_ = errno;
      }
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
  void reset() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  int fd_;
  std::vector<char> buffer_;
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

// The file being written: unnamed (`name` empty) or under a fresh random name.
struct Temporary {
  int fd = -1;
  std::string name;
};

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
int open_temporary(const std::string& path, mode_t mode, Temporary& temporary) {
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

// Names the written file and renames it over `path`. Returns the errno of a failure, or 0.
// Closes the file either way (close reports what a network file system could not store); on
// failure removes the name it got. No fsync: every profiled process writes its profile at exit,
// and a program that starts many processes would wait for the disk in each of them.
int commit(const std::string& path, Temporary& temporary) {
  int error = 0;
  if (temporary.name.empty()) {
    const std::string self = "/proc/self/fd/" + std::to_string(temporary.fd);
    if (create_fresh(path, temporary.name, [&self](const std::string& name) {
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
  if (error == 0 && rename(temporary.name.c_str(), path.c_str()) != 0) {
    error = errno;
  }
  if (error != 0 && !temporary.name.empty()) {
    unlink(temporary.name.c_str());
  }
  return error;
}

} // namespace

std::string write(const std::string& path, const std::function<void(std::ostream&)>& fill,
                  mode_t mode) {
  Temporary temporary;
  if (const int error = open_temporary(path, mode, temporary); error != 0) {
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
    close(temporary.fd);
    if (!temporary.name.empty()) {
      unlink(temporary.name.c_str());
    }
    return problem;
  }
  if (const int error = commit(path, temporary); error != 0) {
    return reason_of(error);
  }
  return "";
}

std::string write(const std::string& path, std::string_view bytes, mode_t mode) {
  return write(
      path,
      [bytes](std::ostream& out) {
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      },
      mode);
}

std::string write_creating_directory(const std::string& path,
                                     const std::function<void(std::ostream&)>& fill) {
  std::error_code ignored; // a directory that cannot be made fails the write, which says why
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  return write(path, fill);
}

std::string write_creating_directory(const std::string& path, std::string_view bytes) {
  return write_creating_directory(path, [bytes](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
}

} // namespace hotscope::atomic_file
