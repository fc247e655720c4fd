// libFuzzer target on the heap.json (DHAT) readers: the checks of profiles::classify, then the
// sites as `hotscope diff` compares them, and the flame graph and the report's heap section.
#include "diff/diff.hpp"
#include "fuzz_reader.hpp"
#include "profiles/profiles.hpp"
#include "report/report.hpp"

using namespace hotscope::cli;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::fuzz_one(data, size, [](const std::string& text) {
    const profiles::Profile profile =
        profiles::classify(profiles::parse_json(text, "heap.json"), "heap.json");
    const diff::Comparison comparison = diff::compare(profile, profile, {"end_bytes>+1MiB"});
    diff::as_text(comparison);
    diff::as_json(comparison).dump();
    if (profile.kind != profiles::Kind::Heap) {
      return;
    }
    const std::string stacks_text =
        report::heap_stacks(profiles::heap_sites(profile), report::HeapBytes::AtEnd);
    const profiles::StackLines stacks =
        profiles::folded_stacks(stacks_text, profile.source, report::kHeapSeparator);
    report::flame_svg(report::flame_graph(stacks, 0, 64),
                      {"heap", "", report::FlameUnit::Bytes, true});
    const profiles::Profile stats = profiles::classify(
        nlohmann::json{{"hotscope_version", "0"}, {"functions", nlohmann::json::array()}}, "s");
    report::html_page(stats, profile, {std::nullopt, "trace.folded"});
  });
  return 0;
}
