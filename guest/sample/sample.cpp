// The sample guest (docs/guest.md): a request handler with nested instrumented functions,
// static and runtime messages, a counter, on request 0 a stack trace, a host function call and
// heap blocks from its own allocator (arena.hpp). Built twice by guest/CMakeLists.txt:
// sample-guest.elf (KVM) and sample-guest-process (child process). The transport
// (HOTSCOPE_GUEST_VM or HOTSCOPE_GUEST_PROCESS) comes from the build.
//
// The heap, per request r (tests/guest check these figures): a 64-byte working copy for the whole
// request; in parse_request a token of 24 + 8 * (r % 3) bytes, resized to 100 bytes, then freed;
// on odd requests a 16-byte history entry that is never freed.
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

#include "arena.hpp"

// The host functions hotscope vm run provides (RunnerOptions::host_functions), by number.
constexpr uint64_t kHostTimeNs = 0;

// Odd requests' entries, newest first: never freed, live at the end.
static void* history = nullptr;

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

// `line` (64 bytes) receives the request's text; a token grows while it is parsed.
__attribute__((noinline)) static uint64_t parse_request(uint64_t request, char* line) {
  HOTSCOPE_FUNCTION();
  describe(line, "request ", request);
  HOTSCOPE_MESSAGE(line);
  char* token = static_cast<char*>(arena::allocate(24 + 8 * (request % 3)));
  token = static_cast<char*>(arena::resize(token, 100));
  if (token != nullptr) {
    describe(token, "token ", request);
  }
  arena::release(token);
  return checksum(request, 200);
}

__attribute__((noinline)) static void remember(uint64_t result) {
  HOTSCOPE_FUNCTION();
  void** entry = static_cast<void**>(arena::allocate(16));
  if (entry != nullptr) {
    entry[0] = history;
    entry[1] = reinterpret_cast<void*>(result);
    history = entry;
  }
}

__attribute__((noinline)) static uint64_t handle_request(uint64_t request) {
  HOTSCOPE_FUNCTION();
  const uint64_t started_ns = hotscope_guest_host_call(kHostTimeNs, 0);
  char* line = static_cast<char*>(arena::allocate(64));
  char fallback[64];
  const uint64_t parsed = parse_request(request, line != nullptr ? line : fallback);
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
  if (request % 2 == 1) {
    remember(result);
  }
  arena::release(line);
  HOTSCOPE_COUNTER("request_host_ns", hotscope_guest_host_call(kHostTimeNs, 0) - started_ns);
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
