#include "heap/heap.hpp"

#include <charconv>
#include <string_view>

namespace hotscope::heap {

ParsedOptions parse_options(const std::function<const char*(const char*)>& getenv) {
  ParsedOptions parsed;
  Options& options = parsed.options;
  if (const char* out = getenv("HOTSCOPE_OUT"); out != nullptr && *out != '\0') {
    options.out_dir = out;
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
    } else if (value == "fp") {
      options.unwinder = Unwinder::FramePointers;
    } else {
      parsed.errors.push_back("hotscope: HOTSCOPE_HEAP_UNWIND=\"" + std::string(value) +
                              "\" is not one of libunwind, fp; using libunwind");
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
  return parsed;
}

} // namespace hotscope::heap
