#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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

TEST_F(ExportWriteAll, WritesFiveFilesIntoANewDirectory) {
  const fs::path dir = root_ / "nested" / "out";
  EXPECT_EQ(exporters::write_all(testing::known_snapshot(), dir.string()), "");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
    EXPECT_GT(fs::file_size(entry.path()), 0u) << entry.path();
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"report.txt", "stats.json", "trace.folded",
                                             "trace.json", "trace.txt"}));
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
  EXPECT_EQ(error, "cannot write " + (root_ / "trace.json").string() + ": Is a directory");
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

} // namespace
} // namespace hotscope
