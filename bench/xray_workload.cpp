// The call-heavy workload of hotscope-xray-bench (xray_bench.cpp), compiled twice by clang: with
// XRay's sleds in every function (namespace sleds) and without (namespace plain).
#include <cstddef>
#include <cstdint>

namespace WORKLOAD {

// Every call a function call of a few instructions: what a nop sled's cost shows in most.
__attribute__((noinline)) std::uint64_t fibonacci(int n) {
  return n < 2 ? static_cast<std::uint64_t>(n) : fibonacci(n - 1) + fibonacci(n - 2);
}

// A word's hash: a call of about 10 ns, what a parser's or a container's small functions cost.
__attribute__((noinline)) std::uint64_t hash_word(const char* word, std::size_t length) {
  std::uint64_t hash = 0xcbf29ce484222325u;
  for (std::size_t i = 0; i < length; ++i) {
    hash = (hash ^ static_cast<unsigned char>(word[i])) * 0x100000001b3u;
  }
  return hash;
}

// The hashes of `text`'s 16-byte words, mixed: one call of hash_word per word.
__attribute__((noinline)) std::uint64_t hash_words(const char* text, std::size_t length) {
  std::uint64_t mixed = 0;
  for (std::size_t at = 0; at + 16 <= length; at += 16) {
    mixed = (mixed << 1) ^ hash_word(text + at, 16);
  }
  return mixed;
}

} // namespace WORKLOAD
