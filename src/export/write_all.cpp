// Writes every report file as one set through the project's atomic file writer: a reader never
// sees half a file, and a failure (a full disk) leaves the earlier set intact, not new files beside
// old ones. The first failure is reported as one line and ends the run.
#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"

#include <filesystem>
#include <system_error>
#include <utility>

namespace hotscope::exporters {

std::string write_all(const Snapshot& snapshot, const std::string& directory) {
  namespace fs = std::filesystem;
  using Writer = void (*)(const Snapshot&, std::ostream&);
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
    atomic_file::FileSet reports;
    for (const auto& [name, writer] : files) {
      const std::string path = (root / name).string();
      const std::string reason =
          reports.add(path, [&, writer = writer](std::ostream& out) { writer(snapshot, out); });
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
