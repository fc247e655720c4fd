// The project's one way to write a file (reports, heap profiles, the agent's files, the CLI's
// -o): whole or not at all, never through a name someone else planted.
//
// The content goes into a new file in the target's directory: an unnamed one (O_TMPFILE) where
// the file system allows it, else one under a fresh random name created with
// O_CREAT|O_EXCL|O_NOFOLLOW. It is given a random name if it had none and renamed over the
// target. Hence:
// - a reader sees the previous file or the new one, never part of one;
// - a failure (full disk, I/O error, an exception while filling it) leaves the previous file as
//   it was and no temporary file behind; a process killed while filling an unnamed file leaves
//   nothing either;
// - a symbolic link at the target is replaced, never followed, and no existing name is opened.
// (write_new, below, is the one exception: a new file written in place, for a reader that waits
// for its writer to end.)
// Usable inside the heap profiler (at exit, with its hooks off for the calling thread): it
// allocates only through the C++ library, takes no lock and starts no thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::atomic_file {

// Writes what `fill` puts into the stream to `path` (created with `mode`, less the umask).
// Returns "" or the reason it failed, as strerror says it ("No space left on device").
std::string write(const std::string& path, const std::function<void(std::ostream&)>& fill,
                  mode_t mode = 0666);

// The same for bytes already at hand.
std::string write(const std::string& path, std::string_view bytes, mode_t mode = 0666);

// As write(), first creating the directory `path` goes into (and its parents) where missing.
std::string write_creating_directory(const std::string& path,
                                     const std::function<void(std::ostream&)>& fill);
std::string write_creating_directory(const std::string& path, std::string_view bytes);

// Writes `bytes` in place to `path`, which must not exist yet (O_EXCL, never through a link):
// for a file that no one reads before its writer has ended, where the temporary file, link and
// rename cost more than the write itself (the sampled heap report a program hands to `hotscope
// run` at its exit). A write cut short (the writer killed) leaves a short file, which its reader
// must detect. Returns "" or the reason it failed.
std::string write_new(const std::string& path, std::string_view bytes, mode_t mode = 0600);

namespace detail {
// A file written beside its target `path`: open (`fd`), unnamed or under the fresh `name`.
struct PendingFile {
  std::string path;
  int fd = -1;
  std::string name;
};
} // namespace detail

// Files that replace their targets together, as a set of reports must (a full disk must not
// leave new ones beside old ones): each is written aside by add(), and commit() replaces the
// targets only once every file was written and named. Whatever is not committed is discarded.
class FileSet {
public:
  FileSet();
  FileSet(const FileSet&) = delete;
  FileSet& operator=(const FileSet&) = delete;
  ~FileSet();

  // Writes the future content of `path` aside. Returns "" or the reason it failed.
  std::string add(const std::string& path, const std::function<void(std::ostream&)>& fill,
                  mode_t mode = 0666);

  // Renames every file added over its target. Returns "" or one line: the file that failed and
  // why, and which files are new (only a rename failing midway leaves some replaced).
  std::string commit();

private:
  std::vector<detail::PendingFile> pending_;
};

} // namespace hotscope::atomic_file
