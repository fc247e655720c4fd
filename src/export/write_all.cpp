// Writes every output file. Each goes to "<name>.tmp" first and is renamed into place, so a
// reader never sees half a file; the first failure is reported as one line and ends the run.
#include "export/export.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

namespace hotscope::exporters {
namespace {

namespace fs = std::filesystem;

using Writer = void (*)(const Snapshot&, std::ostream&);

// The reason text for the errno a failed stream operation left behind.
std::string errno_text() {
  return errno == 0 ? std::string("write failed") : std::generic_category().message(errno);
}

// Returns "" or the reason the file could not be written; never leaves the temporary behind.
std::string write_file(const Snapshot& snapshot, Writer writer, const fs::path& path) {
  fs::path temporary = path;
  temporary += ".tmp";
  errno = 0;
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out) {
    return errno_text();
  }
  std::string reason;
  try {
    writer(snapshot, out);
    out.close();
    if (!out) {
      reason = errno_text();
    }
  } catch (const std::exception& e) {
    reason = e.what();
  }
  std::error_code error;
  if (reason.empty()) {
    fs::rename(temporary, path, error);
    if (!error) {
      return "";
    }
    reason = error.message();
  }
  fs::remove(temporary, error);
  return reason;
}

} // namespace

std::string write_all(const Snapshot& snapshot, const std::string& directory) {
  try {
    const fs::path root(directory);
    std::error_code error;
    fs::create_directories(root, error);
    if (error) {
      return "cannot create directory " + directory + ": " + error.message();
    }
    const std::pair<const char*, Writer> files[] = {
        {"report.txt", write_table},       {"stats.json", write_stats_json},
        {"trace.json", write_chrome_json}, {"trace.folded", write_folded},
        {"trace.txt", write_text_tree},
    };
    for (const auto& [name, writer] : files) {
      const fs::path path = root / name;
      if (std::string reason = write_file(snapshot, writer, path); !reason.empty()) {
        return "cannot write " + path.string() + ": " + reason;
      }
    }
    return "";
  } catch (const std::exception& e) {
    return "cannot write into " + directory + ": " + e.what();
  } catch (...) {
    return "cannot write into " + directory + ": unknown error";
  }
}

} // namespace hotscope::exporters
