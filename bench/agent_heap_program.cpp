// A program with 100,000 live allocation sites, for timing GET /v1/heap (bench/agent.sh). Run with
// HOTSCOPE_HEAP_MODE=full. Site i is reached through a chain of 18 calls that follows the bits of
// i, each bit through one of two functions, so every site has its own stack (18 frames and
// main's, under the default depth of 32). Each site keeps one block live. Prints "ready" and
// waits until it is killed.
#include <hotscope/hotscope.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr unsigned bits = 17; // 2^17 > 100,000

std::vector<void*> blocks;

__attribute__((noinline)) void left(unsigned site, unsigned level);
__attribute__((noinline)) void right(unsigned site, unsigned level);

// Inlined into left() and right(): the next bit picks the next function.
inline void next(unsigned site, unsigned level) {
  if (level == bits) {
    blocks.push_back(std::malloc(16 + site % 64));
  } else if (((site >> level) & 1u) != 0) {
    right(site, level + 1);
  } else {
    left(site, level + 1);
  }
}

void left(unsigned site, unsigned level) {
  next(site, level);
  asm volatile("" ::: "memory"); // no tail call: every level keeps its frame
}

void right(unsigned site, unsigned level) {
  next(site, level);
  asm volatile("" ::: "memory");
}

} // namespace

int main(int argc, char** argv) {
  HOTSCOPE_THREAD_NAME("main"); // uses libhotscope, so its runtime and agent start
  const unsigned sites = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 100'000;
  blocks.reserve(sites);
  for (unsigned site = 0; site < sites && site < (1u << bits); ++site) {
    left(site, 0);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}
