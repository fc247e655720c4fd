// Profiles on demand share one symbolizer for the process's life (docs/heap.md, "The profile on
// demand"): programs/on_demand.cpp, linked with hotscope::heap, takes them again and again. A
// repeated profile equals the first frame for frame, profiles taken at once agree, and frames of
// a library loaded (or unloaded and replaced) after the first profiles resolve to it.
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include "support/files.hpp"
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using hotscope::test_support::slurp;

// A site as frame texts and the counts that do not move with time (tl and the times do).
struct Site {
  std::vector<std::string> frames;
  std::vector<std::uint64_t> counts; // tb tbk mb mbk gb gbk eb ebk
  bool operator==(const Site&) const = default;
};

std::vector<Site> sites_of(const fs::path& dir) {
  const Json profile = Json::parse(slurp(dir / "heap.json"));
  std::vector<Site> sites;
  for (const Json& pp : profile.at("pps")) {
    Site site;
    for (const Json& frame : pp.at("fs")) {
      site.frames.push_back(profile.at("ftbl").at(frame.get<std::size_t>()));
    }
    for (const char* count : {"tb", "tbk", "mb", "mbk", "gb", "gbk", "eb", "ebk"}) {
      site.counts.push_back(pp.at(count).get<std::uint64_t>());
    }
    sites.push_back(std::move(site));
  }
  return sites;
}

bool names(const Site& site, const std::string& function) {
  for (const std::string& frame : site.frames) {
    if (frame.find(": " + function + " (") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// The sites with `bytes` in total.
std::vector<Site> sites_of_size(const std::vector<Site>& sites, std::uint64_t bytes) {
  std::vector<Site> found;
  for (const Site& site : sites) {
    if (site.counts[0] == bytes) {
      found.push_back(site);
    }
  }
  return found;
}

class HeapOnDemand : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    scratch_ = new hotscope::testing::ScratchDir("on-demand");
    const fs::path& dir = scratch_->path();
    const std::string command = std::string("env HOTSCOPE_HEAP_MODE=full HOTSCOPE_AGENT=0 ") +
                                ON_DEMAND_PROGRAM + " " + dir.string() + " " + HEAP_LOADED_A + " " +
                                HEAP_LOADED_B + " 2>" + (dir / "err").string();
    const int status = std::system(command.c_str());
    ran_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    error_ = slurp(dir / "err");
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(ran_) << error_; }
  static std::vector<Site> sites(const std::string& name) {
    return sites_of(scratch_->path() / name);
  }

  static hotscope::testing::ScratchDir* scratch_;
  static bool ran_;
  static std::string error_;
};

hotscope::testing::ScratchDir* HeapOnDemand::scratch_ = nullptr;
bool HeapOnDemand::ran_ = false;
std::string HeapOnDemand::error_;

TEST_F(HeapOnDemand, ARepeatedProfileEqualsTheFirstFrameForFrame) {
  const std::vector<Site> first = sites("first");
  bool vector = false, string = false, freed = false;
  for (const Site& site : first) {
    vector = vector || names(site, "(anonymous namespace)::keeps_a_vector()");
    string = string || names(site, "(anonymous namespace)::keeps_a_string()");
    freed = freed || names(site, "(anonymous namespace)::frees_a_block()");
  }
  EXPECT_TRUE(vector && string && freed) << "the program's own sites are named";
  EXPECT_EQ(sites("second"), first);
}

TEST_F(HeapOnDemand, ProfilesTakenAtOnceAgree) {
  const std::vector<Site> first = sites("thread0");
  EXPECT_GE(first.size(), sites("first").size());
  for (const char* other : {"thread1", "thread2", "thread3"}) {
    EXPECT_EQ(sites(other), first) << other;
  }
}

TEST_F(HeapOnDemand, ALibraryLoadedAfterTheFirstProfilesIsSymbolized) {
  const std::vector<Site> loaded = sites_of_size(sites("loaded"), 1111);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(names(loaded[0], "loaded_a_allocates")) << ::testing::PrintToString(loaded[0].frames);
}

TEST_F(HeapOnDemand, ALibraryLoadedWhereAnUnloadedOneWasIsNotTakenForIt) {
  const std::vector<Site> reloaded = sites_of_size(sites("reloaded"), 2222);
  ASSERT_EQ(reloaded.size(), 1u);
  EXPECT_TRUE(names(reloaded[0], "loaded_b_allocates"))
      << ::testing::PrintToString(reloaded[0].frames);
  EXPECT_TRUE(names(reloaded[0], "loaded_b_inner"));
  EXPECT_FALSE(names(reloaded[0], "loaded_a_allocates"));
}

} // namespace
