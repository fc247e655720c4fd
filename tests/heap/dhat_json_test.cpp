// The DHAT JSON exporter and the summary, parsed back.
#include "export/export.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

namespace {

hotscope::HeapProfile sample_profile() {
  hotscope::HeapProfile profile;
  profile.command = "./demo \"quoted\" \x01";
  profile.pid = 4242;
  profile.end_us = 250000;
  profile.gmax_us = 120000;
  profile.frames = {"[root]", "0x401A10: make_node(int) (tree.cpp:12)",
                    "0x401B20: Tree::insert(int) (tree.cpp:40)", "0x401C30: main (main.cpp:9)"};
  profile.sites.push_back({4800, 100, 90000, 2400, 50, 2400, 50, 480, 10, {1, 2, 3}});
  profile.sites.push_back({1234567, 1, 200, 64, 1, 0, 0, 0, 0, {3}});
  return profile;
}

TEST(DhatJson, WritesEveryFieldTheViewerRequires) {
  std::ostringstream out;
  hotscope::exporters::write_dhat_json(sample_profile(), out);
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json.at("dhatFileVersion"), 2);
  EXPECT_EQ(json.at("mode"), "cpp-heap");
  EXPECT_EQ(json.at("verb"), "Allocated");
  EXPECT_EQ(json.at("bklt"), true);
  EXPECT_EQ(json.at("bkacc"), false);
  EXPECT_EQ(json.at("tu"), "µs");
  EXPECT_EQ(json.at("Mtu"), "s");
  EXPECT_EQ(json.at("tuth"), 10);
  EXPECT_EQ(json.at("cmd"), "./demo \"quoted\" \x01");
  EXPECT_NE(out.str().find(R"("./demo \"quoted\" \u0001")"), std::string::npos);
  EXPECT_EQ(json.at("pid"), 4242);
  EXPECT_EQ(json.at("te"), 250000);
  EXPECT_EQ(json.at("tg"), 120000);
  EXPECT_FALSE(json.contains("rb"));
  ASSERT_EQ(json.at("pps").size(), 2u);
  const auto& pp = json.at("pps")[0];
  EXPECT_EQ(pp.at("tb"), 4800);
  EXPECT_EQ(pp.at("tbk"), 100);
  EXPECT_EQ(pp.at("tl"), 90000);
  EXPECT_EQ(pp.at("mb"), 2400);
  EXPECT_EQ(pp.at("mbk"), 50);
  EXPECT_EQ(pp.at("gb"), 2400);
  EXPECT_EQ(pp.at("gbk"), 50);
  EXPECT_EQ(pp.at("eb"), 480);
  EXPECT_EQ(pp.at("ebk"), 10);
  EXPECT_EQ(pp.at("fs"), nlohmann::json::array({1, 2, 3}));
  EXPECT_FALSE(pp.contains("rb"));
  EXPECT_FALSE(pp.contains("acc"));
  EXPECT_EQ(json.at("ftbl").size(), 4u);
  EXPECT_EQ(json.at("ftbl")[0], "[root]");
  EXPECT_EQ(json.at("ftbl")[2], "0x401B20: Tree::insert(int) (tree.cpp:40)");
}

// A profile of several megabytes is written to a stream in pieces: the text is the one built
// whole, every site and frame in it.
TEST(DhatJson, ALargeProfileStreamedInPiecesIsTheTextBuiltWhole) {
  hotscope::HeapProfile profile = sample_profile();
  for (std::uint32_t i = 0; i < 2000; ++i) {
    profile.frames.push_back("0x" + std::to_string(0x400000 + i) + ": function_" +
                             std::to_string(i) + "(long, long) (file.cpp:" + std::to_string(i) +
                             ")");
  }
  for (std::uint64_t i = 0; i < 20000; ++i) {
    hotscope::HeapSite site{i, i + 1, i * 7, i, 1, i, 1, i, 1, {}};
    for (std::uint32_t frame = 0; frame < 30; ++frame) {
      site.frames.push_back(static_cast<std::uint32_t>((i * 31 + frame) % 2004));
    }
    profile.sites.push_back(site);
  }
  std::ostringstream out;
  hotscope::exporters::write_dhat_json(profile, out);
  const std::string whole = hotscope::exporters::dhat_json(profile);
  EXPECT_GT(whole.size(), 2'000'000u);
  EXPECT_EQ(out.str(), whole);
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json.at("pps").size(), 20002u);
  EXPECT_EQ(json.at("pps")[20001].at("fs").size(), 30u);
  EXPECT_EQ(json.at("ftbl").size(), 2004u);
}

TEST(DhatJson, EmptyProfileIsStillValid) {
  hotscope::HeapProfile profile;
  profile.frames = {"[root]"};
  std::ostringstream out;
  hotscope::exporters::write_dhat_json(profile, out);
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_TRUE(json.at("pps").empty());
  EXPECT_EQ(json.at("ftbl"), nlohmann::json::array({"[root]"}));
}

TEST(DhatJson, SummaryAddsUpTheSitesLikeDhat) {
  std::ostringstream out;
  hotscope::exporters::write_heap_summary(sample_profile(), "==4242== hotscope heap: ", out);
  EXPECT_EQ(out.str(), "==4242== hotscope heap: Total:     1,239,367 bytes in 101 blocks\n"
                       "==4242== hotscope heap: At t-gmax: 2,400 bytes in 50 blocks\n"
                       "==4242== hotscope heap: At t-end:  480 bytes in 10 blocks\n");
}

TEST(DhatJson, AnAttachedProfileSaysWhatItCouldNotSee) {
  hotscope::HeapProfile profile = sample_profile();
  EXPECT_EQ(hotscope::exporters::dhat_json(profile).find("\"attached\""), std::string::npos);
  profile.attached = true;
  profile.frees_before_attach = 1234;
  profile.reallocs_before_attach = 5;
  const std::string json = hotscope::exporters::dhat_json(profile);
  EXPECT_NE(json.find("\"attached\":{\"freesBeforeAttach\":1234,\"reallocsBeforeAttach\":5}"),
            std::string::npos);
  std::ostringstream out;
  hotscope::exporters::write_heap_summary(profile, "hotscope heap: ", out);
  EXPECT_NE(out.str().find("Blocks allocated before the attach: 1,234 frees, 5 reallocs"),
            std::string::npos);
}

TEST(DhatJson, SummaryNamesUnknownPointers) {
  hotscope::HeapProfile profile = sample_profile();
  profile.unknown_frees = 3;
  std::ostringstream out;
  hotscope::exporters::write_heap_summary(profile, "==4242== hotscope heap: ", out);
  EXPECT_NE(out.str().find("Unknown pointers: 3 frees, 0 reallocs (passed on)"), std::string::npos);
}

} // namespace
