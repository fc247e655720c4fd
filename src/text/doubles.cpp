// Doubles as text: std::to_chars's shortest round-trip digits, laid out for people and for JSON.
// A file of its own: the C++ runtime's double formatting needs libm's rounding mode, and the heap
// preload library, which prints no double, then links neither (docs/heap.md).
#include "text/text.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace hotscope::text {

std::string fixed(double value, int precision) {
  // 309 digits before the point at most, plus the sign, the point and the precision.
  std::string out(320 + static_cast<std::size_t>(std::max(precision, 0)), '\0');
  const auto result = std::to_chars(out.data(), out.data() + out.size(), value,
                                    std::chars_format::fixed, precision);
  out.resize(static_cast<std::size_t>(result.ptr - out.data()));
  return out;
}

std::string shortest(double value) {
  char buffer[32];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

void append_json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  if (value == 0) {
    out += std::signbit(value) ? "-0.0" : "0.0";
    return;
  }
  // The shortest round-trip digits, "-d.ddde+XX", taken apart and laid out again.
  char scientific[32];
  const char* end = std::to_chars(scientific, scientific + sizeof scientific, value,
                                  std::chars_format::scientific)
                        .ptr;
  const std::string_view written(scientific, static_cast<std::size_t>(end - scientific));
  const std::size_t e = written.find('e');
  std::string_view mantissa = written.substr(0, e);
  if (mantissa.front() == '-') {
    out += '-';
    mantissa.remove_prefix(1);
  }
  std::string digits(mantissa.substr(0, 1));
  if (mantissa.size() > 2) {
    digits += mantissa.substr(2);
  }
  const int count = static_cast<int>(digits.size());
  int exponent = 0;
  const char* exponent_start = written.data() + e + (written[e + 1] == '+' ? 2 : 1);
  std::from_chars(exponent_start, end, exponent);
  const int point = exponent + 1; // where the point goes in `digits`
  if (count <= point && point <= 15) {
    out += digits;
    out.append(static_cast<std::size_t>(point - count), '0');
    out += ".0";
  } else if (0 < point && point <= 15) {
    out.append(digits, 0, static_cast<std::size_t>(point));
    out += '.';
    out.append(digits, static_cast<std::size_t>(point));
  } else if (-4 < point && point <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-point), '0');
    out += digits;
  } else {
    out += digits[0];
    if (count > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += exponent < 0 ? "e-" : "e+";
    const std::string magnitude = std::to_string(std::abs(exponent));
    out.append(magnitude.size() < 2 ? 2 - magnitude.size() : 0, '0');
    out += magnitude;
  }
}

JsonWriter& JsonWriter::value(double number) {
  before_value();
  append_json_number(out_, number);
  return *this;
}

} // namespace hotscope::text
