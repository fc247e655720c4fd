// libFuzzer target on the stats.json reader (profiles::read_stats): a file's document, checked
// and read through profiles::classify, then what `hotscope diff` and `report` make of it, and the
// agent's answer, as the console reads it, on the same bytes.
#include "diff/diff.hpp"
#include "fuzz_reader.hpp"
#include "profiles/profiles.hpp"
#include "report/report.hpp"

using namespace hotscope::cli;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::fuzz_one(data, size, [](const std::string& text) {
    profiles::Stats answer;
    try {
      profiles::read_stats(text, "the agent's answer to GET /v1/stats", answer);
    } catch (const nlohmann::json::exception&) {
      // not JSON: the console shows the agent's error in one line
    }
  });
  fuzz::fuzz_one(data, size, [](const std::string& text) {
    const profiles::Profile profile =
        profiles::classify(profiles::parse_json(text, "stats.json"), "stats.json");
    const diff::Comparison comparison = diff::compare(profile, profile, {"p99>+10%"});
    diff::as_text(comparison);
    diff::as_json(comparison).dump();
    if (profile.kind == profiles::Kind::Stats) {
      report::html_page(profile, std::nullopt, {std::nullopt, "trace.folded"});
    }
  });
  return 0;
}
