#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotscope {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class ExportWriteAll : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            unique_name(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string unique_name(const std::string& test) {
    return "hotscope-export-" + test + "-" + std::to_string(::getpid());
  }

  // The names in the directory that are not the reports': temporary files left behind.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root_)) {
      const std::string name = entry.path().filename().string();
      if (name != "report.txt" && name != "stats.json" && name != "trace.json" &&
          name != "trace.folded" && name != "trace.txt") {
        names.push_back(name);
      }
    }
    return names;
  }

  static constexpr const char* kReports[] = {"report.txt", "stats.json", "trace.json",
                                             "trace.folded", "trace.txt"};

  // An earlier run's reports, each holding its own name.
  void write_stale_reports() const {
    for (const char* name : kReports) {
      std::ofstream(root_ / name) << "stale " << name;
    }
  }
  void expect_stale_reports() const {
    for (const char* name : kReports) {
      std::ifstream in(root_ / name);
      EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string("stale ") + name);
    }
  }

  fs::path root_;
};

// A guest image's identity (hotscope vm run) begins trace.txt and is in stats.json and in
// trace.json's otherData; without one, trace.txt begins with its usual header.
TEST_F(ExportWriteAll, GuestImagesBeginTraceTxtAndAreInTheJsonMetadata) {
  Snapshot snapshot = testing::known_snapshot();
  ASSERT_EQ(exporters::write_all(snapshot, (root_ / "plain").string()), "");
  const auto slurp = [](const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(slurp(root_ / "plain" / "trace.txt").rfind("hotscope 0.1.0: demo", 0), 0u);
  EXPECT_EQ(nlohmann::json::parse(slurp(root_ / "plain" / "stats.json")).at("guest_images"),
            nlohmann::json::array());

  const std::string sha256(64, 'a');
  snapshot.guest_images = {{"guest: one", "/images/one.elf", 4096, sha256},
                           {"guest: two", "/images/two", 8192, std::string(64, 'b')}};
  ASSERT_EQ(exporters::write_all(snapshot, root_.string()), "");
  EXPECT_EQ(slurp(root_ / "trace.txt")
                .rfind("guest image /images/one.elf: 4096 bytes, sha256 " + sha256 +
                           ", track guest: one\nguest image /images/two: 8192 bytes, sha256 " +
                           std::string(64, 'b') + ", track guest: two\nhotscope 0.1.0: demo",
                       0),
            0u);
  const nlohmann::json expected = nlohmann::json::array(
      {{{"track", "guest: one"}, {"path", "/images/one.elf"}, {"bytes", 4096}, {"sha256", sha256}},
       {{"track", "guest: two"},
        {"path", "/images/two"},
        {"bytes", 8192},
        {"sha256", std::string(64, 'b')}}});
  EXPECT_EQ(nlohmann::json::parse(slurp(root_ / "stats.json")).at("guest_images"), expected);
  EXPECT_EQ(nlohmann::json::parse(slurp(root_ / "trace.json")).at("otherData").at("guest_images"),
            expected);
}

TEST_F(ExportWriteAll, WritesSevenFilesIntoANewDirectory) {
  const fs::path dir = root_ / "nested" / "out";
  EXPECT_EQ(exporters::write_all(testing::known_snapshot(), dir.string()), "");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
    EXPECT_GT(fs::file_size(entry.path()), 0u) << entry.path();
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"report.txt", "slow.json", "slow.txt", "stats.json",
                                             "trace.folded", "trace.json", "trace.txt"}));
}

TEST_F(ExportWriteAll, ReplacesEarlierFiles) {
  const std::string dir = root_.string();
  std::ofstream(root_ / "trace.folded") << "stale\n";
  EXPECT_EQ(exporters::write_all(testing::known_snapshot(), dir), "");
  std::ifstream in(root_ / "trace.folded");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "demo;main;main 5001000");
}

// Tests run as root, where permission bits stop nothing: a regular file in the way does.
TEST_F(ExportWriteAll, DirectoryUnderARegularFileFailsWithOneLine) {
  std::ofstream(root_ / "plain") << "x";
  const std::string dir = (root_ / "plain" / "out").string();
  const std::string error = exporters::write_all(testing::known_snapshot(), dir);
  EXPECT_EQ(error, "cannot create directory " + dir + ": Not a directory");
}

TEST_F(ExportWriteAll, UnwritableFileIsNamedWithTheReason) {
  fs::create_directories(root_ / "trace.json"); // a directory where the file should go
  const std::string error = exporters::write_all(testing::known_snapshot(), root_.string());
  EXPECT_EQ(error, "cannot write " + (root_ / "trace.json").string() +
                       ": Is a directory (no file was replaced)");
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(ExportWriteAll, ExporterExceptionsBecomeTheReason) {
  Snapshot broken = testing::known_snapshot();
  broken.trace[0].name = 999; // no such name: the trace exporters throw
  const std::string error = exporters::write_all(broken, root_.string());
  EXPECT_TRUE(error.starts_with("cannot write " + (root_ / "trace.json").string() + ": ")) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

// The five reports are one set: when one cannot be written (here an exporter throws), the files
// of an earlier run all stay as they were, none is replaced alone.
TEST_F(ExportWriteAll, AFailedReportLeavesTheEarlierSetWhole) {
  write_stale_reports();
  Snapshot broken = testing::known_snapshot();
  broken.trace[0].name = 999; // trace.json, the third file, throws
  const std::string error = exporters::write_all(broken, root_.string());
  EXPECT_TRUE(error.ends_with(" (no file was replaced)")) << error;
  expect_stale_reports();
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

// A file system that fills up midway: a file-size limit (EFBIG, as ENOSPC would) that the first
// two reports fit under and the long trace.json does not.
TEST_F(ExportWriteAll, AFullDiskMidwayLeavesTheEarlierSetWhole) {
  testing::SnapshotBuilder builder;
  const std::uint32_t thread = builder.thread(4242, "main");
  for (std::uint64_t ns = 1000; ns < 3000; ++ns) {
    builder.message(thread, ns, "tick");
  }
  const Snapshot snapshot = builder.build();
  const fs::path sizes = root_ / "sizes";
  ASSERT_EQ(exporters::write_all(snapshot, sizes.string()), "");
  const std::uintmax_t limit =
      std::max(fs::file_size(sizes / "report.txt"), fs::file_size(sizes / "stats.json")) + 1;
  ASSERT_GT(fs::file_size(sizes / "trace.json"), limit);
  fs::remove_all(sizes);
  write_stale_reports();

  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  rlimit small = before;
  small.rlim_cur = limit;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string error = exporters::write_all(snapshot, root_.string());
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, previous_handler);

  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_NE(error.find("File too large"), std::string::npos) << error;
  EXPECT_TRUE(error.ends_with(" (no file was replaced)")) << error;
  expect_stale_reports();
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

} // namespace
} // namespace hotscope
