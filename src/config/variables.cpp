#include "config/variables.hpp"

#include <charconv>

namespace hotscope::config::variables {

std::optional<unsigned long long> whole_number(std::string_view text) {
  unsigned long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

void read_number(const Getenv& getenv, const char* name, unsigned long long low,
                 unsigned long long high, const char* what, bool power_of_two,
                 unsigned long long& value, std::vector<std::string>& errors) {
  const char* text = getenv(name);
  if (text == nullptr) {
    return;
  }
  const auto parsed = whole_number(text);
  if (parsed && *parsed >= low && *parsed <= high &&
      (!power_of_two || (*parsed & (*parsed - 1)) == 0)) {
    value = *parsed;
    return;
  }
  errors.push_back("hotscope: " + std::string(name) + "=\"" + text + "\" is not " + what +
                   " between " + std::to_string(low) + " and " + std::to_string(high) +
                   (power_of_two ? " that is a power of two" : "") + "; using " +
                   std::to_string(value));
}

void read_switch(const Getenv& getenv, const char* name, bool& value,
                 std::vector<std::string>& errors) {
  const char* text = getenv(name);
  if (text == nullptr) {
    return;
  }
  const std::string_view switch_text = text;
  if (switch_text == "0" || switch_text == "1") {
    value = switch_text == "1";
    return;
  }
  errors.push_back("hotscope: " + std::string(name) + "=\"" + text + "\" is not 0 or 1; using " +
                   (value ? "1" : "0"));
}

std::optional<std::string> read_out_dir(const Getenv& getenv, std::vector<std::string>& errors) {
  const char* out = getenv("HOTSCOPE_OUT");
  if (out == nullptr) {
    return std::nullopt;
  }
  if (*out == '\0') {
    errors.push_back(
        "hotscope: HOTSCOPE_OUT is set but empty; set it to a directory for the reports");
    return std::nullopt;
  }
  return out;
}

} // namespace hotscope::config::variables
