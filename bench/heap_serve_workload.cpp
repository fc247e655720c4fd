// 100,000 heap sites for timing the profile on demand (bench/heap_serve.sh, docs/performance.md,
// "Time to serve /v1/heap"). Linked with hotscope::heap; run with HOTSCOPE_HEAP_MODE=full.
// Each site is one path through a tree of functions: 5 levels of 16 template instances, each
// calling the next level from 16 call sites of its own, so the stacks are all different and
// share about 950 distinct return addresses (each with an inlined frame), as a real program's do.
//   hotscope-heap-serve-workload serve READY_FILE   allocates, writes READY_FILE, then sleeps
//                                                   while the agent answers /v1/heap
//   hotscope-heap-serve-workload self N             allocates, then times N profiles in each
//                                                   format through hotscope::heap_profile
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

namespace {

constexpr int kLevels = 5;
constexpr std::uint32_t kFanOut = 16;
constexpr std::uint32_t kSites = 100'000;

void* blocks[kSites];
std::uint32_t block_count = 0;

template <int Level, int Variant> std::uint64_t walk(std::uint32_t path);

// Different after each call, so that the compiler keeps one call instruction per child instead
// of merging them into one indirect call.
template <std::size_t Child> inline bool mark(std::uint64_t& result) {
  asm volatile("# child %1" : "+r"(result) : "i"(Child));
  return true;
}

// One call site per child: `digit` picks which, so each child is reached from its own address.
template <int Level, std::size_t... Child>
__attribute__((always_inline)) inline std::uint64_t
call_child(std::uint32_t digit, std::uint32_t rest, std::index_sequence<Child...>) {
  std::uint64_t result = 0;
  ((digit == Child &&
    ((result = walk<Level + 1, static_cast<int>(Child)>(rest)), mark<Child>(result))) ||
   ...);
  return result;
}

template <int Level, int Variant> __attribute__((noinline)) std::uint64_t walk(std::uint32_t path) {
  std::uint64_t result = 0;
  if constexpr (Level == kLevels) {
    // Sizes differ per leaf so identical code folding cannot merge the instances.
    blocks[block_count] = std::malloc(16 + Variant);
    result = reinterpret_cast<std::uintptr_t>(blocks[block_count++]);
  } else {
    result = call_child<Level>(path % kFanOut, path / kFanOut, std::make_index_sequence<kFanOut>{});
  }
  asm volatile("" : "+r"(result)); // no tail call: every level keeps its frame
  return result + Level * kFanOut + Variant;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "serve" && mode != "self") {
    std::fprintf(stderr, "usage: %s serve READY_FILE | self N\n", argv[0]);
    return 2;
  }
  if (hotscope::heap_mode() != hotscope::HeapMode::Full) {
    std::fprintf(stderr, "run with HOTSCOPE_HEAP_MODE=full\n");
    return 2;
  }
  // Paths spread over the 16^5 leaves, so every level's instances and call sites are used.
  for (std::uint32_t site = 0; site < kSites; ++site) {
    walk<0, 0>(site * 10);
  }
  if (mode == "serve") {
    std::ofstream(argv[2]) << "ready\n";
    for (;;) {
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
  }
  const int requests = std::atoi(argv[2]);
  for (const auto format : {hotscope::HeapFormat::Dhat, hotscope::HeapFormat::Pprof}) {
    for (int request = 1; request <= requests; ++request) {
      std::string out;
      const auto start = std::chrono::steady_clock::now();
      if (const hotscope::Result result = hotscope::heap_profile(format, out); !result) {
        std::fprintf(stderr, "%s\n", result.problem().c_str());
        return 1;
      }
      std::printf("%s request %d: %.0f ms, %zu bytes\n",
                  format == hotscope::HeapFormat::Dhat ? "dhat" : "pprof", request,
                  milliseconds_since(start), out.size());
    }
  }
  return 0;
}
