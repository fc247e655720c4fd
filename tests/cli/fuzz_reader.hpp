// What the readers' libFuzzer targets share (fuzz_*.cpp, docs/diff-and-report.md, "Fuzzing"):
// any input must end in a result or in a Failure (one line for the user), never in a crash,
// another exception, or a read outside the input (ASan).
#pragma once

#include "agent_client.hpp"

#include <cstdint>
#include <string>

namespace hotscope::cli::fuzz {

// Runs `read` on the input as text: a Failure is an answer; anything else escapes and aborts.
template <typename Read> int fuzz_one(const std::uint8_t* data, std::size_t size, Read read) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    read(text);
  } catch (const Failure& failure) {
    if (failure.code != kUsage || std::string(failure.what()).find('\n') != std::string::npos) {
      __builtin_trap(); // a malformed input gets exit 2 and one line
    }
  }
  return 0;
}

} // namespace hotscope::cli::fuzz
