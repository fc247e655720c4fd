// The known-share program's hot function in a shared library built without frame pointers
// (tests/cpu/CMakeLists.txt): its samples must unwind through it by its CFI alone.
#include <cstdint>

extern "C" __attribute__((noinline)) std::uint64_t hotscope_shares_in_library(std::uint64_t x,
                                                                              int rounds) {
  for (int i = 0; i < rounds; ++i) {
    x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(i);
  }
  return x;
}
