// The workload, written once like instrumented user code: parses a line of comma-separated
// unsigned integers and returns a checksum. The including file decides what the macros are.
#pragma once

#include <cstdint>
#include <string_view>

namespace {

std::uint64_t sum_fields(std::string_view csv) {
  HOTSCOPE_FUNCTION();
  std::uint64_t checksum = 0;
  std::size_t i = 0;
  while (i < csv.size()) {
    HOTSCOPE_SCOPE("field");
    std::uint64_t value = 0;
    for (; i < csv.size() && csv[i] != ','; ++i) {
      value = value * 10 + static_cast<std::uint64_t>(csv[i] - '0');
    }
    checksum = (checksum ^ value) * 0x100000001b3u; // FNV-style mix keeps every field live
    ++i;
  }
  return checksum;
}

} // namespace
