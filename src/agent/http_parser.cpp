#include "agent/http_parser.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace hotscope::agent {
namespace {

ParsedRequest bad(unsigned status, std::string problem) {
  ParsedRequest parsed;
  parsed.state = ParsedRequest::State::Bad;
  parsed.status = status;
  parsed.problem = std::move(problem);
  return parsed;
}

// RFC 9110 §5.6.2: the characters of a method or a header's name.
bool is_token_char(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    return true;
  }
  for (const char allowed : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == allowed) {
      return true;
    }
  }
  return false;
}

bool is_token(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (const char c : text) {
    if (!is_token_char(c)) {
      return false;
    }
  }
  return true;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Decodes %XX (and '+' as a space in a query). Text in which a %XX stands for a control
// character is left as it came: a decoded NUL or line feed would make "/v1/info%00.json" read
// as another name, so such text matches no endpoint, parameter or value.
std::string unescape(std::string_view text, bool plus_is_space) {
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int high = i + 2 < text.size() && text[i] == '%' ? hex_value(text[i + 1]) : -1;
    const int low = high >= 0 ? hex_value(text[i + 2]) : -1;
    if (low >= 0) {
      const int value = high * 16 + low;
      if (value < 0x20 || value == 0x7F) {
        return std::string(text);
      }
      decoded += static_cast<char>(value);
      i += 2;
    } else {
      decoded += plus_is_space && text[i] == '+' ? ' ' : text[i];
    }
  }
  return decoded;
}

void split_query(std::string_view query, Request& request) {
  std::size_t parameters = query.empty() ? 0 : 1;
  for (const char c : query) {
    parameters += c == '&' ? 1 : 0;
  }
  if (parameters > kMaxParameters) {
    request.query_cut = true;
    return;
  }
  while (!query.empty()) {
    const std::size_t end = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, end);
    query.remove_prefix(std::min(end + 1, query.size()));
    if (pair.empty()) {
      continue;
    }
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos) {
      request.query.emplace_back(unescape(pair, true), "");
    } else {
      request.query.emplace_back(unescape(pair.substr(0, equals), true),
                                 unescape(pair.substr(equals + 1), true));
    }
  }
}

// "GET /v1/stats?format=table HTTP/1.1": the method, the target split into path and query.
ParsedRequest parse_request_line(std::string_view line) {
  const std::size_t first = line.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos) {
    return bad(400, "the request line is not METHOD TARGET HTTP-VERSION");
  }
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!is_token(method)) {
    return bad(400, "the method is not a token");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return bad(400, "the request line does not end with HTTP/1.1");
  }
  if (version[5] != '1') {
    return bad(505, "the agent speaks HTTP/1.1 and HTTP/1.0, not " + std::string(version));
  }
  if (target.empty() || target[0] != '/') {
    return bad(400, "the request target must start with /");
  }
  for (const char c : target) {
    if (c == '\0') {
      return bad(400, "the request target holds a NUL byte");
    }
  }
  ParsedRequest parsed;
  parsed.http10 = version[7] == '0';
  parsed.request.method = std::string(method);
  const std::size_t question = target.find('?');
  parsed.request.path = unescape(target.substr(0, question), false);
  if (question != std::string_view::npos) {
    split_query(target.substr(question + 1), parsed.request);
  }
  return parsed;
}

// `text` without the spaces and tabs around it.
std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// The first element of a list separated by `separator`, trimmed; removed from `list`.
std::string_view next_element(std::string_view& list, char separator) {
  const std::size_t end = list.find(separator);
  const std::string_view element = list.substr(0, end);
  list.remove_prefix(end == std::string_view::npos ? list.size() : end + 1);
  return trimmed(element);
}

// One header line: the name, a colon right after it (RFC 9112 §5.1), the value without the
// spaces around it. Returns "" or the problem.
std::string parse_header(std::string_view line, std::string_view& name, std::string_view& value) {
  if (line[0] == ' ' || line[0] == '\t') {
    return "a header line starts with whitespace (obsolete line folding)";
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return "a header line has no colon";
  }
  name = line.substr(0, colon);
  if (!is_token(name)) {
    const char last = name.empty() ? ':' : name.back();
    return last == ' ' || last == '\t' ? "whitespace between a header's name and its colon"
                                       : "a header's name is not a token";
  }
  value = trimmed(line.substr(colon + 1));
  for (const char c : value) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F) {
      return "a header's value holds a control character";
    }
  }
  return "";
}

} // namespace

ParsedRequest parse_request(std::string_view bytes) {
  // RFC 9112 §2.2: empty lines before the request line are ignored.
  std::size_t start = 0;
  while (start + 1 < bytes.size() && bytes[start] == '\r' && bytes[start + 1] == '\n') {
    start += 2;
  }
  const std::string_view text = bytes.substr(start);
  const std::size_t line_end = text.find("\r\n");
  const std::size_t head_end = text.find("\r\n\r\n");
  // The empty lines skipped count too: a client cannot make the server keep more than this.
  if (start + (line_end == std::string_view::npos ? text.size() : line_end) > kMaxHeadBytes) {
    return bad(414, "the request line is longer than 32 KiB");
  }
  if (start + (head_end == std::string_view::npos ? text.size() : head_end + 4) > kMaxHeadBytes) {
    return bad(431, "the request's headers are longer than 32 KiB");
  }
  if (head_end == std::string_view::npos) {
    return {};
  }
  ParsedRequest parsed = parse_request_line(text.substr(0, line_end));
  if (parsed.state == ParsedRequest::State::Bad) {
    return parsed;
  }
  std::string_view headers = text.substr(line_end + 2, head_end - line_end);
  std::size_t hosts = 0;
  bool chunked = false;
  std::optional<std::uint64_t> content_length;
  while (!headers.empty()) {
    const std::size_t end = headers.find("\r\n");
    const std::string_view line = headers.substr(0, end);
    headers.remove_prefix(end + 2);
    if (line.empty()) {
      break;
    }
    std::string_view name;
    std::string_view value;
    if (std::string problem = parse_header(line, name, value); !problem.empty()) {
      return bad(400, problem);
    }
    if (equal_ignoring_case(name, "Host")) {
      ++hosts;
    } else if (equal_ignoring_case(name, "Accept")) {
      std::string& accept = parsed.request.accept;
      accept += accept.empty() ? "" : ",";
      accept += value;
    } else if (equal_ignoring_case(name, "Transfer-Encoding")) {
      chunked = true;
    } else if (equal_ignoring_case(name, "Content-Length")) {
      std::uint64_t length = 0;
      const auto [end_of_number, error] =
          std::from_chars(value.data(), value.data() + value.size(), length);
      if (value.empty() || error != std::errc() || end_of_number != value.data() + value.size()) {
        return bad(400, "Content-Length is not a number of bytes");
      }
      if (content_length && *content_length != length) {
        return bad(400, "two Content-Length headers disagree");
      }
      content_length = length;
    }
  }
  if (chunked && content_length) {
    return bad(400, "both Transfer-Encoding and Content-Length");
  }
  if (hosts > 1 || (hosts == 0 && !parsed.http10)) {
    return bad(400, "an HTTP/1.1 request needs exactly one Host header");
  }
  parsed.request.has_body = chunked || content_length.value_or(0) > 0;
  parsed.state = ParsedRequest::State::Complete;
  return parsed;
}

bool wants_openmetrics(std::string_view accept) {
  double openmetrics = 0; // the best q of each
  double text = 0;
  while (!accept.empty()) {
    std::string_view range = next_element(accept, ',');
    const std::string_view type = next_element(range, ';');
    double q = 1;
    while (!range.empty()) {
      const std::string_view parameter = next_element(range, ';');
      if (parameter.size() > 2 && equal_ignoring_case(parameter.substr(0, 2), "q=")) {
        std::from_chars(parameter.data() + 2, parameter.data() + parameter.size(), q);
      }
    }
    if (equal_ignoring_case(type, "application/openmetrics-text")) {
      openmetrics = std::max(openmetrics, q);
    } else if (equal_ignoring_case(type, "text/plain") || equal_ignoring_case(type, "text/*") ||
               type == "*/*") {
      text = std::max(text, q);
    }
  }
  return openmetrics > 0 && openmetrics >= text;
}

const char* reason_phrase(unsigned status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 501:
    return "Not Implemented";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Unknown";
  }
}

} // namespace hotscope::agent
