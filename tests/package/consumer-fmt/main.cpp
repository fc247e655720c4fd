// A program with its own {fmt} (consumer-fmt/vendored, another major version) that links
// hotscope: libhotscope must bring no {fmt} of its own into the process.
#include "fmt/format.h"

#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <string>

static_assert(FMT_VERSION == 990000, "the vendored fmt, not another one");

int main() {
  HOTSCOPE_THREAD_NAME("consumer-fmt");
  long total = 0;
  for (int i = 0; i < 100; ++i) {
    HOTSCOPE_SCOPE("iteration");
    total += i;
    HOTSCOPE_MESSAGE(fmt::format("step {}", i));
  }
  const std::string line = fmt::format("consumer-fmt ok: total {}, fmt {}", total, FMT_VERSION);
  std::puts(line.c_str());
  return line == "consumer-fmt ok: total 4950, fmt 990000" ? 0 : 1;
}
