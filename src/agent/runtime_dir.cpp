#include "agent/runtime_dir.hpp"

#include "text/text.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace hotscope::agent {
namespace {

// The mark an agent left after it found every entry ours: a plain file of ours with no other
// name (a hard link to a file of ours, made by someone else, is not it).
bool marked_checked(int dir_fd, uid_t user) {
  struct stat mark {};
  return fstatat(dir_fd, kCheckedMark, &mark, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(mark.st_mode) &&
         mark.st_uid == user && mark.st_nlink == 1;
}

void mark_checked(int dir_fd) {
  const int fd =
      openat(dir_fd, kCheckedMark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    close(fd);
  }
}

// "" when every entry of the directory (already private) belongs to `user`, else the line that
// names the first that does not.
std::string foreign_entry(const std::string& dir, int dir_fd, uid_t user) {
  const int fd = dup(dir_fd);
  DIR* entries = fd < 0 ? nullptr : fdopendir(fd);
  if (entries == nullptr) {
    if (fd >= 0) {
      close(fd);
    }
    return text::cat("cannot use the runtime directory ", dir, ": ", text::errno_text());
  }
  std::string problem;
  while (problem.empty()) {
    const dirent* entry = readdir(entries);
    if (entry == nullptr) {
      break;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    struct stat owner {};
    if (fstatat(dir_fd, entry->d_name, &owner, AT_SYMLINK_NOFOLLOW) == 0 && owner.st_uid != user) {
      problem = text::cat(
          "the runtime directory ", dir, " holds ", entry->d_name, ", which belongs to uid ",
          owner.st_uid, ", not to uid ", user,
          ": remove it, or set HOTSCOPE_RUNTIME_DIR to a directory only this user can write");
    }
  }
  closedir(entries);
  return problem;
}

// The checks of an open directory: ours, private, and nothing of another user's in it.
std::string check_dir(const std::string& dir, int fd) {
  struct stat status {};
  const uid_t user = geteuid();
  if (fstat(fd, &status) != 0) {
    return text::cat("cannot use the runtime directory ", dir, ": ", text::errno_text());
  }
  if (status.st_uid != user) { // it could watch or replace our socket
    return text::cat("the runtime directory ", dir, " belongs to uid ", status.st_uid,
                     ", not to uid ", user);
  }
  const bool was_private = (status.st_mode & 077) == 0;
  if (!was_private) {
    // Whatever was checked before, others could add entries while it was open. Removed before
    // the directory becomes private, so that no agent starting meanwhile finds it private and
    // marked (a mark planted again by someone else is not ours).
    unlinkat(fd, kCheckedMark, 0);
    if (fchmod(fd, 0700) != 0) {
      return text::cat("cannot make the runtime directory ", dir,
                       " private (mode 0700): ", text::errno_text());
    }
  }
  // Private since an agent found every entry ours: nobody else can have added one. Else each
  // entry is read, once the directory is private (nobody else can add one during the loop), and
  // the mark saves the next agents from reading them again: a directory of dead processes'
  // files holds hundreds.
  if (was_private && marked_checked(fd, user)) {
    return "";
  }
  std::string problem = foreign_entry(dir, fd, user);
  if (problem.empty()) {
    mark_checked(fd);
  } else {
    // One of ours someone renamed to the mark's name while the directory was open is no mark.
    unlinkat(fd, kCheckedMark, 0);
  }
  return problem;
}

} // namespace

// It must hold nothing of another user's: while it was open to others (before it was made
// private, or a directory someone else could write), a link planted under one of our names
// would make us write through it.
std::string prepare_dir(const std::string& dir) {
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return text::cat("cannot create the runtime directory ", dir, ": ", text::errno_text());
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR || errno == ELOOP) {
      return text::cat("the runtime directory ", dir, " is not a directory");
    }
    return text::cat("cannot use the runtime directory ", dir, ": ", text::errno_text());
  }
  std::string problem = check_dir(dir, fd);
  close(fd);
  return problem;
}

int listen_unix(const std::string& path, int backlog, std::string& problem) {
  // Bound under a name of its own, then renamed over `path`, which a client then never finds
  // missing: what was there (a socket left by a process that had this pid before, or the one
  // `hotscope run`'s launcher held for the program until its runtime was loaded) is replaced at
  // once. The name holds this process's pid: the launcher and a program's own agent may bind at
  // the same moment.
  const std::string bound = text::cat(path, '.', getpid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (bound.size() >= sizeof(address.sun_path)) {
    problem = text::cat("the socket path ", path, " is longer than ",
                        sizeof(address.sun_path) - 1 - (bound.size() - path.size()),
                        " bytes; set HOTSCOPE_RUNTIME_DIR to a shorter directory");
    return -1;
  }
  std::memcpy(address.sun_path, bound.c_str(), bound.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    problem = text::cat("cannot create a Unix socket: ", text::errno_text());
    return -1;
  }
  unlink(bound.c_str()); // left by a process of this pid that died while binding
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      chmod(bound.c_str(), 0600) != 0 || listen(fd, backlog) != 0 ||
      rename(bound.c_str(), path.c_str()) != 0) {
    problem = text::cat("cannot listen on ", path, ": ", text::errno_text());
    close(fd);
    unlink(bound.c_str());
    return -1;
  }
  return fd;
}

} // namespace hotscope::agent
