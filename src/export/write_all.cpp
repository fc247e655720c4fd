// Writes every report file as one set through the project's atomic file writer: a reader never
// sees half a file, and a failure (a full disk) leaves the earlier set intact, not new files beside
// old ones. The first failure is reported as one line and ends the run.
#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"
#include "export/writers.hpp"

#include <filesystem>
#include <system_error>

namespace hotscope::exporters {

std::string write_all(const Snapshot& snapshot, const std::string& directory) {
  namespace fs = std::filesystem;
  try {
    const fs::path root(directory);
    std::error_code error;
    fs::create_directories(root, error);
    if (error) {
      return "cannot create directory " + directory + ": " + error.message();
    }
    // Every format with a file that is written from the snapshot (export/formats.hpp).
    atomic_file::FileSet reports;
    for (const FormatInfo& format : kFormats) {
      const Writer bound = writer(format.format);
      const auto write = bound.stream;
      if (*format.file == '\0' || write == nullptr ||
          (bound.written_if != nullptr && !bound.written_if(snapshot))) {
        continue;
      }
      const std::string path = (root / format.file).string();
      const std::string reason =
          reports.add(path, [&, write](std::ostream& out) { write(snapshot, out); });
      if (!reason.empty()) {
        return "cannot write " + path + ": " + reason + " (no file was replaced)";
      }
    }
    const std::string problem = reports.commit();
    return problem.empty() ? "" : "cannot write " + problem;
  } catch (const std::exception& e) {
    return "cannot write into " + directory + ": " + e.what();
  } catch (...) {
    return "cannot write into " + directory + ": unknown error";
  }
}

} // namespace hotscope::exporters
