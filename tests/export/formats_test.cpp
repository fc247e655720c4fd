// The table of output formats (export/formats.hpp) and libhotscope's writers for it agree: every
// format has one writer, and write_all writes exactly the table's files written from a snapshot.
#include "export/export.hpp"
#include "export/formats.hpp"
#include "export/writers.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace hotscope {
namespace {

namespace fs = std::filesystem;
using exporters::Format;
using exporters::FormatInfo;
using exporters::kFormats;

TEST(Formats, EveryFormatHasOneRowAndOneWriter) {
  std::set<Format> seen;
  for (const FormatInfo& info : kFormats) {
    EXPECT_TRUE(seen.insert(info.format).second) << info.path << " " << info.name;
    EXPECT_EQ(&exporters::format_info(info.format), &info);
    const exporters::Writer writer = exporters::writer(info.format);
    const int bound = (writer.stream != nullptr) + (writer.threads != nullptr) +
                      (writer.whole != nullptr) + writer.heap;
    EXPECT_EQ(bound, 1) << info.path << " " << info.name;
    // The heap library answers at the heap endpoint only.
    EXPECT_EQ(writer.heap, std::string(info.path) == "/v1/heap") << info.path << " " << info.name;
    EXPECT_NE(std::string(info.mime), "") << info.path << " " << info.name;
  }
}

// At one endpoint every format is named (a `format` parameter chooses) or it has only one, and
// the first is what it answers without one; names and files are not repeated.
TEST(Formats, NamesAndFilesAreUnique) {
  std::map<std::string, std::set<std::string>> names;
  std::map<std::string, std::size_t> rows;
  std::set<std::string> files;
  for (const FormatInfo& info : kFormats) {
    if (rows[info.path]++ == 0) {
      EXPECT_EQ(exporters::find_format(info.path, ""), &info) << info.path;
    }
    if (*info.name != '\0') {
      EXPECT_TRUE(names[info.path].insert(info.name).second) << info.path << " " << info.name;
      EXPECT_EQ(exporters::find_format(info.path, info.name), &info) << info.name;
    }
    if (*info.file != '\0') {
      EXPECT_TRUE(files.insert(info.file).second) << info.file;
    }
  }
  for (const auto& [path, count] : rows) {
    if (count > 1) {
      EXPECT_EQ(names[path].size(), count) << path;
    }
  }
  EXPECT_EQ(exporters::format_names("/v1/stats", "|"), "json|table|columns");
  EXPECT_EQ(exporters::find_format("/v1/trace", "svg"), nullptr);
  EXPECT_EQ(exporters::agent_target(Format::Folded), "/v1/trace?format=folded");
  EXPECT_EQ(exporters::agent_target(Format::Prometheus), "/v1/metrics");
}

// The files write_all writes for `snapshot`: name to content.
std::map<std::string, std::string> written_files(const Snapshot& snapshot) {
  const fs::path dir = fs::temp_directory_path() / ("hotscope-formats-" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(exporters::write_all(snapshot, dir.string()), "");
  std::map<std::string, std::string> written;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    written[entry.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove_all(dir);
  return written;
}

// write_all writes the file of every format with a file and a snapshot writer that accepts the
// snapshot, that writer's bytes, and nothing else.
TEST(Formats, WriteAllWritesTheTablesSnapshotFiles) {
  for (const Snapshot& snapshot : {testing::known_snapshot(), testing::known_snapshot_with_cpu()}) {
    std::map<std::string, std::string> expected;
    for (const FormatInfo& info : kFormats) {
      const exporters::Writer writer = exporters::writer(info.format);
      if (*info.file != '\0' && writer.stream != nullptr &&
          (writer.written_if == nullptr || writer.written_if(snapshot))) {
        std::ostringstream out;
        writer.stream(snapshot, out);
        expected[info.file] = std::move(out).str();
      }
    }
    const std::map<std::string, std::string> written = written_files(snapshot);
    // The gzip streams of equal profiles are equal: pprof files compare too.
    EXPECT_EQ(written, expected);
    // stats.json, report.txt, trace.json, trace.folded, trace.txt, slow.txt, slow.json;
    // cpu.pb.gz and cpu.folded with CPU samples.
    EXPECT_EQ(written.size(), snapshot.cpu.samples > 0 ? 9u : 7u);
  }
}

} // namespace
} // namespace hotscope
