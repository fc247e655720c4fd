// A minimal program using hotscope the way an outside project would.
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <string>

// The build says which configuration it expects, so a package that silently drops (or adds)
// HOTSCOPE_ENABLED=1 fails to compile.
static_assert(HOTSCOPE_ENABLED == CONSUMER_EXPECT_ENABLED, "HOTSCOPE_ENABLED not as packaged");

static long fib(int n) {
  HOTSCOPE_FUNCTION();
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main() {
  HOTSCOPE_THREAD_NAME("consumer-main");
  long total = 0;
  for (int i = 0; i < 20; ++i) {
    HOTSCOPE_SCOPE("iteration");
    total += fib(12);
    HOTSCOPE_COUNTER("total", total);
  }
  HOTSCOPE_MESSAGE("done");
  HOTSCOPE_MESSAGE("total " + std::to_string(total));
  // The calls for the whole process link in either build; compiled out, they say so.
  const hotscope::Result agent = hotscope::start_agent();
  if (HOTSCOPE_ENABLED == 0 &&
      (agent || agent.problem().find("compiled out") == std::string::npos)) {
    std::fprintf(stderr, "start_agent() did not say hotscope is compiled out\n");
    return 1;
  }
  std::printf("consumer ok (HOTSCOPE_ENABLED=%d, total=%ld)\n", HOTSCOPE_ENABLED, total);
  return total == 20 * 144 ? 0 : 1;
}
