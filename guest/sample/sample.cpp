// The sample guest (docs/guest.md): a request handler with nested instrumented functions,
// static and runtime messages, a counter and, on request 0, a stack trace. Built twice by
// guest/CMakeLists.txt: sample-guest.elf (KVM) and sample-guest-process (child process).
// The transport (HOTSCOPE_GUEST_VM or HOTSCOPE_GUEST_PROCESS) comes from the build.
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

// "request 42": runtime text, copied into the record buffer.
static void describe(char* out, const char* prefix, uint64_t number) {
  uint64_t length = 0;
  while (prefix[length] != '\0') {
    out[length] = prefix[length];
    ++length;
  }
  char digits[20];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + number % 10);
    number /= 10;
  } while (number != 0);
  while (count > 0) {
    out[length++] = digits[--count];
  }
  out[length] = '\0';
}

// Not inlined: each shows in stack traces as its own frame.
__attribute__((noinline)) static uint64_t checksum(uint64_t seed, int rounds) {
  HOTSCOPE_FUNCTION();
  uint64_t value = seed;
  for (int i = 0; i < rounds; ++i) {
    value = value * 6364136223846793005u + 1442695040888963407u;
  }
  return value;
}

__attribute__((noinline)) static uint64_t parse_request(uint64_t request) {
  HOTSCOPE_FUNCTION();
  char text[64];
  describe(text, "request ", request);
  HOTSCOPE_MESSAGE(text);
  return checksum(request, 200);
}

__attribute__((noinline)) static uint64_t handle_request(uint64_t request) {
  HOTSCOPE_FUNCTION();
  const uint64_t parsed = parse_request(request);
  uint64_t result = 0;
  {
    HOTSCOPE_SCOPE("compute");
    result = checksum(parsed, 1000 + static_cast<int>(request % 4) * 500);
  }
  if (request % 3 == 0) {
    HOTSCOPE_MESSAGE("slow path");
    result ^= checksum(result, 2000);
  }
  if (request == 0) {
    HOTSCOPE_STACK();
  }
  HOTSCOPE_COUNTER("result_low_bits", result & 0xff);
  return result;
}

extern "C" void hotscope_guest_init() {
  HOTSCOPE_FUNCTION();
  static const char ready[] = "sample guest ready";
  hotscope_guest_print(ready, sizeof ready - 1);
}

extern "C" uint64_t hotscope_guest_dispatch(uint64_t argument) {
  HOTSCOPE_FUNCTION();
  return handle_request(argument);
}
