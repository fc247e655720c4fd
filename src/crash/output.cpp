#include "crash/output.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace hotscope::crash {

Output& Output::text(const char* text) {
  return this->text(text, std::strlen(text));
}

Output& Output::text(const char* text, std::size_t length) {
  for (std::size_t i = 0; i < length; ++i) {
    put(text[i]);
  }
  return *this;
}

Output& Output::number(std::uint64_t value) {
  char digits[20];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (count != 0) {
    put(digits[--count]);
  }
  return *this;
}

Output& Output::signed_number(std::int64_t value) {
  if (value < 0) {
    put('-');
    return number(0 - static_cast<std::uint64_t>(value));
  }
  return number(static_cast<std::uint64_t>(value));
}

Output& Output::hex(std::uint64_t value) {
  text("0x");
  int shift = 60;
  while (shift > 0 && ((value >> shift) & 0xf) == 0) {
    shift -= 4;
  }
  for (; shift >= 0; shift -= 4) {
    put("0123456789abcdef"[(value >> shift) & 0xf]);
  }
  return *this;
}

Output& Output::milliseconds(std::uint64_t ns) {
  number(ns / 1'000'000);
  put('.');
  const std::uint64_t thousandths = ns / 1'000 % 1'000;
  put(static_cast<char>('0' + thousandths / 100));
  put(static_cast<char>('0' + thousandths / 10 % 10));
  put(static_cast<char>('0' + thousandths % 10));
  return *this;
}

Output& Output::json(const char* text) {
  return json(text, std::strlen(text));
}

// Bytes of a valid UTF-8 sequence starting at `text`, 0 when it is not one.
static std::size_t utf8_length(const unsigned char* text, std::size_t left) {
  const unsigned char lead = text[0];
  const std::size_t length = lead < 0xc2   ? 0
                             : lead < 0xe0 ? 2
                             : lead < 0xf0 ? 3
                             : lead < 0xf5 ? 4
                                           : 0;
  if (length == 0 || length > left) {
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((text[i] & 0xc0) != 0x80) {
      return 0;
    }
  }
  return length;
}

Output& Output::json(const char* text, std::size_t length) {
  put('"');
  const auto* bytes = reinterpret_cast<const unsigned char*>(text);
  for (std::size_t i = 0; i < length;) {
    const unsigned char c = bytes[i];
    if (c == '"' || c == '\\') {
      put('\\');
      put(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x80) {
      put(static_cast<char>(c));
    } else if (const std::size_t sequence = c >= 0x80 ? utf8_length(bytes + i, length - i) : 0;
               sequence != 0) {
      this->text(text + i, sequence);
      i += sequence;
      continue;
    } else { // a control character, or a byte that is not UTF-8: \u00XX
      this->text("\\u00");
      put("0123456789abcdef"[c >> 4]);
      put("0123456789abcdef"[c & 0xf]);
    }
    ++i;
  }
  put('"');
  return *this;
}

Output& Output::separator(bool& first) {
  if (!first) {
    put(',');
  }
  first = false;
  return *this;
}

void Output::flush() {
  std::size_t done = 0;
  while (fd_ >= 0 && done < used_) {
    const ssize_t written = write(fd_, buffer_ + done, used_ - done);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      fd_ = -1; // a full disk: the rest is lost, the crash goes on
      break;
    }
    done += static_cast<std::size_t>(written);
  }
  used_ = 0;
}

} // namespace hotscope::crash
