// What answering GET /v1/heap costs for a large profile, without the HTTP part: an Engine holding
// N sites (default 100,000), each a distinct 8-frame stack of real code addresses in the C
// library, then, timed step by step as a heap profile request runs them: the snapshot (the part
// taken under the profiler's lock), the symbolized HeapProfile (build_profile), DHAT JSON and
// gzip'd pprof into memory. Prints the median of each step over the repetitions.
//   hotscope-heap-profile-bench [SITES] [REPETITIONS]
#include "export/export.hpp"
#include "heap/engine.hpp"
#include "heap/profile.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Addresses inside C library functions, as return addresses into them would be: up to 2,000
// distinct ones (40 functions at 50 offsets each), so symbolization does real libdw lookups.
std::vector<std::uintptr_t> libc_addresses() {
  constexpr std::array names = {
      "malloc",  "free",   "printf",    "fopen",     "fclose",  "qsort",   "strtol",   "memcpy",
      "strlen",  "getenv", "setlocale", "fwrite",    "fread",   "sprintf", "strdup",   "realloc",
      "calloc",  "atoi",   "bsearch",   "strtod",    "fgets",   "puts",    "snprintf", "fflush",
      "mktime",  "gmtime", "strftime",  "localtime", "opendir", "readdir", "closedir", "strtoul",
      "fprintf", "sscanf", "vfprintf",  "fseek",     "ftell",   "rewind",  "tmpfile",  "perror"};
  std::vector<std::uintptr_t> addresses;
  for (const char* name : names) {
    if (void* function = dlsym(RTLD_DEFAULT, name)) {
      for (std::uintptr_t offset = 1; offset <= 50 * 4; offset += 4) {
        addresses.push_back(reinterpret_cast<std::uintptr_t>(function) + offset);
      }
    }
  }
  // Some names are aliases of one function: every address once.
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  addresses.resize(std::min<std::size_t>(addresses.size(), 2000));
  return addresses;
}

} // namespace

int main(int argc, char** argv) {
  const std::size_t sites = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::vector<std::uintptr_t> addresses = libc_addresses();
  if (addresses.size() < 16 || sites == 0 || repetitions < 1) {
    std::fprintf(stderr,
                 "usage: %s [SITES >= 1] [REPETITIONS >= 1] (and a C library with "
                 "symbols to look up)\n",
                 argv[0]);
    return 2;
  }

  // N distinct stacks: the site number written in base |addresses| picks the frames.
  hotscope::heap::Engine engine;
  std::uint64_t now = 0;
  for (std::size_t site = 0; site < sites; ++site) {
    std::array<std::uintptr_t, 8> stack{};
    std::size_t digits = site;
    for (std::uintptr_t& frame : stack) {
      frame = addresses[digits % addresses.size()];
      digits /= addresses.size();
    }
    const auto id = engine.intern(stack);
    engine.alloc(0x10000 + site * 64, 32 + site % 100, id, ++now);
    if (site % 2 == 0) {
      engine.free(0x10000 + site * 64, ++now);
    }
  }

  std::vector<double> snapshot_s, build_s, dhat_s, pprof_s;
  std::size_t dhat_bytes = 0, pprof_bytes = 0, profile_sites = 0;
  for (int i = 0; i < repetitions; ++i) {
    auto start = Clock::now();
    const hotscope::heap::RawProfile raw =
        hotscope::heap::in_microseconds(engine.snapshot(++now), 1.0);
    snapshot_s.push_back(seconds_since(start));

    start = Clock::now();
    // A fresh symbolizer each time: the cost of a first profile (later ones reuse its cache).
    hotscope::symbols::Symbolizer symbolizer;
    const hotscope::HeapProfile profile =
        hotscope::heap::build_profile(raw, "bench", 1, symbolizer);
    build_s.push_back(seconds_since(start));
    profile_sites = profile.sites.size();

    start = Clock::now();
    const std::string dhat_text = hotscope::exporters::dhat_json(profile);
    dhat_s.push_back(seconds_since(start));
    dhat_bytes = dhat_text.size();

    start = Clock::now();
    std::ostringstream pprof;
    hotscope::exporters::write_pprof_heap(profile, 1, pprof);
    const std::string pprof_data = pprof.str();
    pprof_s.push_back(seconds_since(start));
    pprof_bytes = pprof_data.size();
  }
  std::printf("heap profile of %zu sites (%zu distinct frame addresses), medians of %d:\n",
              profile_sites, addresses.size(), repetitions);
  std::printf("  snapshot (under the lock)  %8.3f s\n", median(snapshot_s));
  std::printf("  build_profile (symbolize)  %8.3f s\n", median(build_s));
  std::printf("  DHAT JSON                  %8.3f s  (%.1f MiB)\n", median(dhat_s),
              static_cast<double>(dhat_bytes) / (1 << 20));
  std::printf("  pprof (gzip)               %8.3f s  (%.1f MiB)\n", median(pprof_s),
              static_cast<double>(pprof_bytes) / (1 << 20));
  std::printf("  snapshot + build + DHAT    %8.3f s\n",
              median(snapshot_s) + median(build_s) + median(dhat_s));
  return 0;
}
