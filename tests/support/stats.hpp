// Reading a stats.json in tests.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace hotscope::test_support {

// The calls of the function named `name` in a stats.json; 0 when it is not there.
inline std::uint64_t calls_of(const nlohmann::json& stats, const std::string& name) {
  for (const auto& function : stats.at("functions")) {
    if (function.at("name") == name) {
      return function.at("calls").get<std::uint64_t>();
    }
  }
  return 0;
}

} // namespace hotscope::test_support
