// Writes every report file through the project's atomic file writer: a reader never sees half a
// file, and a failure leaves the earlier file intact. The first failure is reported as one line
// and ends the run.
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
    for (const auto& [name, writer] : files) {
      const std::string path = (root / name).string();
      const std::string reason = atomic_file::write(
          path, [&, writer = writer](std::ostream& out) { writer(snapshot, out); });
      if (!reason.empty()) {
        return "cannot write " + path + ": " + reason;
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
