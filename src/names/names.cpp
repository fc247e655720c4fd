#include "names/names.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace hotscope::names {
namespace {

// Position of the '(' that matches the ')' at `close`, or npos.
std::size_t matching_open(std::string_view text, std::size_t close) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (text[i] == ')') {
      ++depth;
    } else if (text[i] == '(' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

// What may follow a parameter list: cv- and ref-qualifiers, noexcept.
bool only_qualifiers(std::string_view tail) {
  while (!tail.empty()) {
    bool consumed = false;
    for (std::string_view word : {" ", "const", "volatile", "noexcept", "&"}) {
      if (tail.starts_with(word)) {
        tail.remove_prefix(word.size());
        consumed = true;
        break;
      }
    }
    if (!consumed) {
      return false;
    }
  }
  return true;
}

} // namespace

std::string short_function_name(std::string_view signature) {
  std::string_view text = signature;
  if (const auto with = text.find(" [with "); with != std::string_view::npos) {
    text = text.substr(0, with);
  }
  const auto close = text.rfind(')');
  if (close == std::string_view::npos || !only_qualifiers(text.substr(close + 1))) {
    return std::string(signature);
  }
  const auto open = matching_open(text, close);
  if (open == std::string_view::npos || open == 0) {
    return std::string(signature);
  }
  // Walk back over the name; spaces inside <...> or (...) (e.g. "(anonymous namespace)")
  // belong to it, the first space outside them ends the return type.
  int depth = 0;
  std::size_t start = open;
  while (start > 0) {
    const char c = text[start - 1];
    if (c == '>' || c == ')') {
      ++depth;
    } else if ((c == '<' || c == '(') && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0) {
      break;
    }
    --start;
  }
  return start < open ? std::string(text.substr(start, open - start)) : std::string(signature);
}

std::string demangle_type(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    return name;
  }
  std::string result = demangled;
  std::free(demangled);
  return result;
}

std::string demangle(const char* name) {
  if (std::strncmp(name, "_Z", 2) != 0) {
    return name; // a C name such as "f" would demangle as a type ("float")
  }
  return demangle_type(name);
}

} // namespace hotscope::names
