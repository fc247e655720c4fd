// The heap profiler's variables (HOTSCOPE_HEAP_*, and HOTSCOPE_OUT for heap.json), in a file of
// their own: the heap libraries read them without the rest of the configuration.
#include "config/config.hpp"

#include "config/variables.hpp"

#include <string_view>

namespace hotscope::config {
namespace {

const char* mode_name(HeapMode mode) {
  return mode == HeapMode::Full ? "full" : mode == HeapMode::Sampled ? "sampled" : "off";
}

void read_unwinder(const Getenv& getenv, Unwinder& unwinder, std::vector<std::string>& errors) {
  const char* text = getenv("HOTSCOPE_HEAP_UNWIND");
  if (text == nullptr) {
    return;
  }
  const std::string_view value = text;
  if (value == "libunwind") {
    unwinder = Unwinder::Libunwind;
  } else if (value == "libunwind-uncached") {
    unwinder = Unwinder::LibunwindUncached;
  } else if (value == "fp") {
    unwinder = Unwinder::FramePointers;
  } else {
    errors.push_back("hotscope: HOTSCOPE_HEAP_UNWIND=\"" + std::string(value) +
                     "\" is not one of libunwind, libunwind-uncached, fp; using libunwind");
  }
}

void read_mode(const Getenv& getenv, HeapMode& mode, std::vector<std::string>& errors) {
  const char* text = getenv("HOTSCOPE_HEAP_MODE");
  if (text == nullptr) {
    return;
  }
  const std::string_view value = text;
  if (value == "full" || value == "sampled" || value == "off") {
    mode = value == "full"      ? HeapMode::Full
           : value == "sampled" ? HeapMode::Sampled
                                : HeapMode::Off;
  } else {
    errors.push_back("hotscope: HOTSCOPE_HEAP_MODE=\"" + std::string(value) +
                     "\" is not one of full, sampled, off; using " + mode_name(mode));
  }
}

void read_sampling(const Getenv& getenv, HeapOptions& options, std::vector<std::string>& errors) {
  if (const char* text = getenv("HOTSCOPE_HEAP_SAMPLE_BYTES")) {
    const auto bytes = variables::whole_number(text);
    if (!bytes || *bytes == 0) {
      errors.push_back("hotscope: HOTSCOPE_HEAP_SAMPLE_BYTES=\"" + std::string(text) +
                       "\" is not a byte count of at least 1; using " +
                       std::to_string(options.sample_bytes));
    } else {
      options.sample_bytes = *bytes;
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_SAMPLE_SEED")) {
    if (const auto seed = variables::whole_number(text)) {
      options.seed = *seed;
      options.seed_set = true;
    } else {
      errors.push_back("hotscope: HOTSCOPE_HEAP_SAMPLE_SEED=\"" + std::string(text) +
                       "\" is not an unsigned 64-bit integer; using a random seed");
    }
  }
}

// HOTSCOPE_HEAP_DEBUG_CACHE=1 (the default) or 0, and the XDG base directory for user caches (an
// absolute $XDG_CACHE_HOME, else $HOME/.cache).
void read_debug_cache(const Getenv& getenv, HeapOptions& options,
                      std::vector<std::string>& errors) {
  bool enabled = true;
  variables::read_switch(getenv, "HOTSCOPE_HEAP_DEBUG_CACHE", enabled, errors);
  const char* cache_home = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  if (!enabled) {
    options.debug_cache.clear();
  } else if (cache_home != nullptr && cache_home[0] == '/') {
    options.debug_cache = std::string(cache_home) + "/hotscope/debug";
  } else if (home != nullptr && home[0] == '/') {
    options.debug_cache = std::string(home) + "/.cache/hotscope/debug";
  }
}

} // namespace

ParsedHeap parse_heap(const Getenv& getenv, HeapMode default_mode) {
  ParsedHeap parsed;
  HeapOptions& options = parsed.options;
  options.mode = default_mode;
  if (auto out = variables::read_out_dir(getenv, parsed.errors)) {
    options.out_dir = std::move(*out);
    options.out_set = true;
  }
  variables::read_number(getenv, "HOTSCOPE_HEAP_DEPTH", 1, 256, "a frame count", false,
                         options.depth, parsed.errors);
  read_unwinder(getenv, options.unwinder, parsed.errors);
  variables::read_switch(getenv, "HOTSCOPE_HEAP_SUMMARY", options.summary, parsed.errors);
  read_mode(getenv, options.mode, parsed.errors);
  read_sampling(getenv, options, parsed.errors);
  read_debug_cache(getenv, options, parsed.errors);
  variables::read_switch(getenv, "HOTSCOPE_HEAP_ATTACH", options.attached, parsed.errors);
  return parsed;
}

} // namespace hotscope::config
