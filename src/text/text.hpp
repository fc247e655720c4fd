// Text the profiler writes, on the standard library alone (docs/architecture.md, "Text"): a
// streaming JSON writer and the few formatting helpers the exporters, the agent and the
// diagnostics need. Numbers go through std::to_chars: no locale, and doubles round-trip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hotscope::text {

// `value` in decimal, appended.
void append_integer(std::string& out, std::int64_t value);
void append_integer(std::string& out, std::uint64_t value);

// `value` with `precision` digits after the point, as printf's "%.*f" in the C locale.
std::string fixed(double value, int precision);
// The shortest digits that read back as `value`, as std::to_chars writes them ("0.5", "3e+09").
std::string shortest(double value);
// `value` in lowercase hexadecimal without a prefix, zero-padded to at least `digits` digits.
std::string hex(std::uint64_t value, int digits = 1);

// What the C library says of the current errno (strerror), for one-line diagnostics.
std::string errno_text();

// Display columns of UTF-8 text, counted as code points (what "µ" and "…" need).
std::size_t columns(std::string_view text);
// `text` followed (pad_right) or preceded (pad_left) by spaces up to `width` columns.
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

namespace detail {

template <typename T> void append_part(std::string& out, const T& part) {
  if constexpr (std::is_same_v<T, char>) {
    out += part;
  } else if constexpr (std::is_same_v<T, bool>) {
    out += part ? "true" : "false";
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    append_integer(out, static_cast<std::int64_t>(part));
  } else if constexpr (std::is_integral_v<T>) {
    append_integer(out, static_cast<std::uint64_t>(part));
  } else {
    // A double needs its form chosen: fixed() or shortest().
    static_assert(!std::is_floating_point_v<T> && !std::is_enum_v<T>,
                  "format a double with text::fixed or text::shortest, an enum by its name");
    out += std::string_view(part);
  }
}

} // namespace detail

// The parts one after the other: text as is, integers (unsigned char too) in decimal, a char as
// itself, a bool as true/false.
template <typename... Parts> void append(std::string& out, const Parts&... parts) {
  (detail::append_part(out, parts), ...);
}
template <typename... Parts> std::string cat(const Parts&... parts) {
  std::string out;
  append(out, parts...);
  return out;
}

// `text` as a quoted JSON string: '"', '\\' and control bytes escaped (\b \t \n \f \r, others
// \u00XX), other bytes as they are, and each ill-formed UTF-8 sequence replaced by U+FFFD.
void append_json_string(std::string& out, std::string_view text);
// `value` as a JSON number: the shortest digits that read back as `value`, written plainly
// ("0.5", "3000000000.0") from 1e-4 to below 1e15 and in exponent form ("1e+20") outside; null
// for NaN and infinities.
void append_json_number(std::string& out, double value);

// Streaming JSON into a string: begin/end containers, key() before each member's value. With
// `indent` >= 0 every member and element goes on its own line, indented by `indent` spaces per
// level ("key": value); with -1 all on one line, without spaces. Empty containers are {} and [].
class JsonWriter {
public:
  explicit JsonWriter(std::string& out, int indent = -1) : out_(out), indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(double number);
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T number) {
    before_value();
    if constexpr (std::is_signed_v<T>) {
      append_integer(out_, static_cast<std::int64_t>(number));
    } else {
      append_integer(out_, static_cast<std::uint64_t>(number));
    }
    return *this;
  }
  JsonWriter& null();

  // key(name) then value(v).
  template <typename T> JsonWriter& member(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

private:
  void before_value();
  void next_item();
  void new_line();
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);

  std::string& out_;
  int indent_;
  std::vector<std::size_t> items_; // per open container, the members or elements written so far
  bool after_key_ = false;
};

} // namespace hotscope::text
