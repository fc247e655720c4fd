#include "text/text.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace hotscope::text {
namespace {

template <typename T> void append_chars(std::string& out, T value) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

// The bytes at text[i] that start a UTF-8 sequence correctly (RFC 3629: no overlong form, no
// surrogate, nothing past U+10FFFF), and whether they complete it. An ill-formed lead byte is a
// run of 1; a wrong byte after a good lead ends the run before it, so it is read again.
struct Utf8Run {
  std::size_t length;
  bool complete;
};

Utf8Run utf8_run(std::string_view text, std::size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  std::size_t following = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    following = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    following = 2;
    low = lead == 0xE0 ? 0xA0 : low;   // overlong
    high = lead == 0xED ? 0x9F : high; // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    following = 3;
    low = lead == 0xF0 ? 0x90 : low;   // overlong
    high = lead == 0xF4 ? 0x8F : high; // past U+10FFFF
  } else {
    return {1, false};
  }
  for (std::size_t length = 1; length <= following; ++length) {
    if (i + length >= text.size()) {
      return {length, false};
    }
    const auto next = static_cast<unsigned char>(text[i + length]);
    if (next < low || next > high) {
      return {length, false};
    }
    low = 0x80;
    high = 0xBF;
  }
  return {following + 1, true};
}

void append_ascii_escaped(std::string& out, char c) {
  switch (c) {
  case '"':
    out += "\\\"";
    return;
  case '\\':
    out += "\\\\";
    return;
  case '\b':
    out += "\\b";
    return;
  case '\t':
    out += "\\t";
    return;
  case '\n':
    out += "\\n";
    return;
  case '\f':
    out += "\\f";
    return;
  case '\r':
    out += "\\r";
    return;
  default:
    if (static_cast<unsigned char>(c) < 0x20) {
      out += "\\u00";
      out += hex(static_cast<unsigned char>(c), 2);
    } else {
      out += c;
    }
  }
}

} // namespace

void append_integer(std::string& out, std::int64_t value) {
  append_chars(out, value);
}
void append_integer(std::string& out, std::uint64_t value) {
  append_chars(out, value);
}

std::string hex(std::uint64_t value, int digits) {
  char buffer[16];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, value, 16).ptr;
  const auto written = static_cast<int>(end - buffer);
  std::string out(static_cast<std::size_t>(std::max(digits - written, 0)), '0');
  out.append(buffer, end);
  return out;
}

std::size_t columns(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad_right(std::string_view text, std::size_t width) {
  std::string out(text);
  out.append(width - std::min(width, columns(text)), ' ');
  return out;
}

std::string pad_left(std::string_view text, std::size_t width) {
  std::string out(width - std::min(width, columns(text)), ' ');
  out += text;
  return out;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      append_ascii_escaped(out, text[i++]);
      continue;
    }
    const Utf8Run run = utf8_run(text, i);
    if (run.complete) {
      out.append(text.substr(i, run.length));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += run.length;
  }
  out += '"';
}

JsonWriter& JsonWriter::begin_object() {
  return open('{');
}
JsonWriter& JsonWriter::end_object() {
  return close('}');
}
JsonWriter& JsonWriter::begin_array() {
  return open('[');
}
JsonWriter& JsonWriter::end_array() {
  return close(']');
}

JsonWriter& JsonWriter::key(std::string_view name) {
  next_item();
  append_json_string(out_, name);
  out_ += indent_ >= 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  append_json_string(out_, text);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

// A member's value follows its key; an array's element is an item of its own.
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
  } else if (!items_.empty()) {
    next_item();
  }
}

void JsonWriter::next_item() {
  if (items_.back()++ > 0) {
    out_ += ',';
  }
  new_line();
}

void JsonWriter::new_line() {
  if (indent_ >= 0) {
    out_ += '\n';
    out_.append(items_.size() * static_cast<std::size_t>(indent_), ' ');
  }
}

JsonWriter& JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  items_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  const bool empty = items_.back() == 0;
  items_.pop_back();
  if (!empty) {
    new_line();
  }
  out_ += bracket;
  return *this;
}

std::string errno_text() {
  return std::strerror(errno);
}

} // namespace hotscope::text
