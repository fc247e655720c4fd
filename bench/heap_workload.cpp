// The allocation-heavy program of the heap profiler's overhead benchmark (bench/heap.sh): maps of
// strings, growing vectors and short-lived buffers, about 97,000 allocations per round (40 rounds
// by default). Prints a checksum so nothing is optimized away, and on stderr its own peak RSS at
// the end of main: the profiled process's, whatever tool runs it (a helper process of the tool,
// or the writing of its report after main, is not in it).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <vector>

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  std::uint64_t checksum = 0;
  for (int round = 0; round < rounds; ++round) {
    // A map of strings longer than the small-string buffer: a node and a string each.
    std::map<std::string, std::string> names;
    for (int i = 0; i < 20000; ++i) {
      names.emplace("key-with-a-long-prefix-" + std::to_string(i * 7919 % 100003),
                    "value-that-does-not-fit-inline-" + std::to_string(i));
    }
    checksum += names.size();
    // Growing vectors: every doubling is a new block.
    std::vector<std::vector<int>> tables(2000);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      for (int i = 0; i < 64 + static_cast<int>(t % 200); ++i) {
        tables[t].push_back(i);
      }
      checksum += tables[t].back();
    }
    // Short-lived buffers of many sizes.
    for (int i = 0; i < 20000; ++i) {
      const std::size_t size = 16 + static_cast<std::size_t>(i * 37 % 4000);
      auto buffer = std::make_unique<char[]>(size);
      std::memset(buffer.get(), i & 0xff, size);
      checksum += static_cast<unsigned char>(buffer[size / 2]);
      char* raw = static_cast<char*>(std::malloc(size / 2 + 1));
      raw[0] = static_cast<char>(i);
      checksum += static_cast<unsigned char>(raw[0]);
      std::free(raw);
    }
  }
  std::printf("%llu\n", static_cast<unsigned long long>(checksum));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "peak_rss_kib %ld\n", usage.ru_maxrss);
  return 0;
}
