// A program with 10,000 instrumented functions, for timing GET /v1/stats (bench/agent.sh): one
// function template instantiated 10,000 times, so each instantiation has its own source
// location and name (__PRETTY_FUNCTION__ names the template argument). It calls every function
// a few times, prints "ready" and waits until it is killed.
#include <hotscope/hotscope.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <utility>

namespace {

constexpr std::size_t function_count = 10'000;

volatile unsigned sink = 0;

template <std::size_t N> __attribute__((noinline)) void instrumented() {
  HOTSCOPE_FUNCTION();
  sink = sink + N;
}

template <std::size_t... N>
constexpr std::array<void (*)(), sizeof...(N)> table_of(std::index_sequence<N...>) {
  return {&instrumented<N>...};
}

constexpr auto functions = table_of(std::make_index_sequence<function_count>{});

} // namespace

int main() {
  for (int round = 0; round < 3; ++round) {
    for (void (*function)() : functions) {
      function();
    }
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}
