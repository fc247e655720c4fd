// Records made by hand for an Aggregator in tests: locations are small integers that the
// resolver names "f<ref>", and timestamps are chosen (see manual_time.hpp).
#pragma once

#include "trace/trace.hpp"

#include <hotscope/record.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hotscope::test_support {

inline trace::Resolver numbered_resolver() {
  return {[](std::uint64_t ref) {
            return trace::LocationText{"f" + std::to_string(ref), "x.cpp", 1};
          },
          [](std::uint64_t ref) { return "text" + std::to_string(ref); }};
}

inline hotscope_record rec(std::uint32_t kind, std::uint64_t ticks, std::uint64_t ref,
                           std::uint64_t value = 0) {
  return hotscope_record{ticks, ref, value, kind, 0};
}
inline hotscope_record begin(std::uint64_t ticks, std::uint64_t ref) {
  return rec(HOTSCOPE_RECORD_BEGIN, ticks, ref);
}
inline hotscope_record end(std::uint64_t ticks, std::uint64_t ref) {
  return rec(HOTSCOPE_RECORD_END, ticks, ref);
}
inline hotscope_record alloc(std::uint64_t bytes) {
  return rec(HOTSCOPE_RECORD_ALLOCATION, 0, 0, bytes);
}

inline void append_inline(std::vector<hotscope_record>& records, std::uint32_t kind,
                          std::uint64_t ticks, const std::string& text) {
  const std::uint32_t payload = static_cast<std::uint32_t>((text.size() + 31) / 32);
  records.push_back({ticks, 0, text.size(), kind, payload});
  for (std::uint32_t p = 0; p < payload; ++p) {
    hotscope_record chunk{};
    std::memcpy(&chunk, text.data() + p * 32, std::min<std::size_t>(32, text.size() - p * 32));
    records.push_back(chunk);
  }
}

} // namespace hotscope::test_support
