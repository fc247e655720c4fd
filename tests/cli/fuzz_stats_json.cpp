// libFuzzer target on the stats.json readers: the checks of profiles::classify, then what
// `hotscope diff` and `report` read of it, and the console's stats reader on the same bytes.
#include "console/stats_reader.hpp"
#include "diff/diff.hpp"
#include "fuzz_reader.hpp"
#include "profiles/profiles.hpp"
#include "report/report.hpp"

using namespace hotscope::cli;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::fuzz_one(data, size, [](const std::string& text) {
    console::StatsAnswer answer;
    try {
      console::read_stats(text, answer);
    } catch (const nlohmann::json::exception&) {
      // the console shows the agent's error in one line
    }
    const profiles::Profile profile =
        profiles::classify(profiles::parse_json(text, "stats.json"), "stats.json");
    const diff::Comparison comparison = diff::compare(profile, profile, {"p99>+10%"});
    diff::as_text(comparison);
    diff::as_json(comparison).dump();
    if (profile.kind == profiles::Kind::Stats) {
      report::html_page(profile, std::nullopt, std::nullopt, "trace.folded");
    }
  });
  return 0;
}
