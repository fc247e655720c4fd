// A stand-in for another major version of {fmt}, header-only, vendored as a program might vendor
// its own copy: the header name and namespace of {fmt}, another version and other signatures.
#pragma once

#include <string>
#include <string_view>

#define FMT_VERSION 990000

namespace fmt {
inline namespace v99 {

// `pattern` with each "{}" replaced by the next argument, an integer, in decimal.
template <typename... Args> std::string format(std::string_view pattern, const Args&... args) {
  std::string out(pattern);
  std::size_t from = 0;
  const auto substitute = [&](long long value) {
    const std::size_t at = out.find("{}", from);
    const std::string digits = std::to_string(value);
    out.replace(at, 2, digits);
    from = at + digits.size();
  };
  (substitute(static_cast<long long>(args)), ...);
  return out;
}

} // namespace v99
} // namespace fmt
