#include "markup.hpp"

#include <nlohmann/json.hpp>

namespace hotscope::cli::report {

using Json = nlohmann::json;

std::string escape(std::string_view text) {
  // Invalid UTF-8 (a name cut mid-character) and control characters would make the SVG
  // unreadable as XML: both become U+FFFD. nlohmann-json's dump replaces the invalid sequences.
  const std::string valid =
      Json::parse(Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace))
          .get<std::string>();
  std::string out;
  out.reserve(valid.size());
  for (const char c : valid) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
        out += "\xEF\xBF\xBD";
      } else {
        out += c;
      }
    }
  }
  return out;
}

} // namespace hotscope::cli::report
