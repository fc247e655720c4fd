// libFuzzer target on the folded-stacks reader and the flame graph `hotscope flame` and
// `report` draw from it (with the frame limit small, so that merging is exercised too).
#include "fuzz_reader.hpp"
#include "profiles/profiles.hpp"
#include "report/report.hpp"

using namespace hotscope::cli;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::fuzz_one(data, size, [](const std::string& text) {
    const profiles::StackLines stacks = profiles::folded_stacks(text, "trace.folded");
    const report::FlameGraph graph = report::flame_graph(stacks, 0, 32);
    if (graph.frames.size() > 32 || graph.frames.empty() || graph.frames[0].value != stacks.total) {
      __builtin_trap();
    }
    report::flame_svg(graph, {"t", "", report::FlameUnit::Nanoseconds, true});
    report::flame_svg(report::flame_graph(stacks, 0.1), {"t", "", report::FlameUnit::Bytes, false});
  });
  return 0;
}
