#include "heap/heap.hpp"

#include <charconv>
#include <optional>
#include <string_view>

namespace hotscope::heap {
namespace {

std::optional<std::uint64_t> unsigned_value(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

} // namespace

ParsedOptions parse_options(const std::function<const char*(const char*)>& getenv,
                            Mode default_mode) {
  ParsedOptions parsed;
  Options& options = parsed.options;
  options.mode = default_mode;
  if (const char* out = getenv("HOTSCOPE_OUT"); out != nullptr && *out != '\0') {
    options.out_dir = out;
    options.out_set = true;
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_DEPTH")) {
    const std::string_view value = text;
    std::size_t depth = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), depth);
    if (error != std::errc() || end != value.data() + value.size() || depth < 1 || depth > 256) {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_DEPTH=\"" + std::string(value) +
                              "\" is not a frame count between 1 and 256; using " +
                              std::to_string(options.depth));
    } else {
      options.depth = depth;
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_UNWIND")) {
    const std::string_view value = text;
    if (value == "libunwind") {
      options.unwinder = Unwinder::Libunwind;
    } else if (value == "libunwind-uncached") {
      options.unwinder = Unwinder::LibunwindUncached;
    } else if (value == "fp") {
      options.unwinder = Unwinder::FramePointers;
    } else {
      parsed.errors.push_back(
          "hotscope: HOTSCOPE_HEAP_UNWIND=\"" + std::string(value) +
          "\" is not one of libunwind, libunwind-uncached, fp; using libunwind");
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_SUMMARY")) {
    const std::string_view value = text;
    if (value == "0" || value == "1") {
      options.summary = value == "1";
    } else {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_SUMMARY=\"" + std::string(value) +
                              "\" is not 0 or 1; using 1");
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_MODE")) {
    const std::string_view value = text;
    if (value == "full" || value == "sampled" || value == "off") {
      options.mode = value == "full" ? Mode::Full : value == "sampled" ? Mode::Sampled : Mode::Off;
    } else {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_MODE=\"" + std::string(value) +
                              "\" is not one of full, sampled, off; using " +
                              (default_mode == Mode::Full      ? "full"
                               : default_mode == Mode::Sampled ? "sampled"
                                                               : "off"));
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_SAMPLE_BYTES")) {
    const auto bytes = unsigned_value(text);
    if (!bytes || *bytes == 0) {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_SAMPLE_BYTES=\"" + std::string(text) +
                              "\" is not a byte count of at least 1; using " +
                              std::to_string(options.sample_bytes));
    } else {
      options.sample_bytes = *bytes;
    }
  }
  if (const char* text = getenv("HOTSCOPE_HEAP_SAMPLE_SEED")) {
    if (const auto seed = unsigned_value(text)) {
      options.seed = *seed;
      options.seed_set = true;
    } else {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_SAMPLE_SEED=\"" + std::string(text) +
                              "\" is not an unsigned 64-bit integer; using a random seed");
    }
  }
  return parsed;
}

} // namespace hotscope::heap
