// A guest's text must be both valid UTF-8 and harmless (no control bytes) before the host keeps it.
#include "guest/guest_text.hpp"
#include "text/text.hpp"

#include <cstdint>

namespace hotscope::guest {

std::optional<std::string> unprintable(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      if (lead < 0x20 || lead == 0x7f) {
        return text::cat("control byte 0x", text::hex(lead, 2), " at offset ", i);
      }
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0;
    std::uint32_t smallest = 0; // below it the sequence is overlong
    if ((lead & 0xe0) == 0xc0) {
      length = 2, code = lead & 0x1fu, smallest = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, code = lead & 0x0fu, smallest = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, code = lead & 0x07u, smallest = 0x10000;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      code = code << 6 | (next & 0x3fu);
    }
    if (!valid || code < smallest || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return text::cat("invalid UTF-8 at offset ", i);
    }
    i += length;
  }
  return std::nullopt;
}

std::string_view cut_utf8(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) {
    return text;
  }
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xc0) == 0x80) {
    --bytes;
  }
  return text.substr(0, bytes);
}

} // namespace hotscope::guest
