// How a heap site is named in every view (docs/heap.md, "Site names"): the rule, kept once.
#include "profiles.hpp"

#include <array>
#include <string_view>

namespace hotscope::cli::profiles {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// `function` without its parameter list and the qualifiers after it: "ns::parse(std::string
// const&) const" -> "ns::parse". Only a trailing list is one: "(anonymous namespace)::f" stays
// whole.
std::string without_parameters(std::string function) {
  for (bool cut = true; cut;) {
    cut = false;
    for (const std::string_view qualifier : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (ends_with(function, qualifier) &&
          ends_with(function.substr(0, function.size() - qualifier.size()), ")")) {
        function.resize(function.size() - qualifier.size());
        cut = true;
      }
    }
  }
  if (function.empty() || function.back() != ')') {
    return function;
  }
  int depth = 0;
  for (std::size_t i = function.size(); i-- > 0;) {
    depth += function[i] == ')' ? 1 : function[i] == '(' ? -1 : 0;
    if (depth == 0) {
      return i == 0 ? function : function.substr(0, i);
    }
  }
  return function;
}

// The function's qualified name: without its parameters, its symbol version and the return type a
// demangled function template starts with ("void std::vector<int>::_M_realloc_insert<int>(int&&)"
// -> "std::vector<int>::_M_realloc_insert<int>").
std::string qualified_name(const std::string& function) {
  const std::string name = without_parameters(function);
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (depth == 0 && name.compare(i, 8, "operator") == 0 &&
        (i == 0 || name[i - 1] == ':' || name[i - 1] == ' ')) {
      break; // "operator new", "operator<": the rest is the operator's name
    }
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0) {
      start = i + 1;
    }
  }
  // A versioned symbol's version: "__libc_start_main@@GLIBC_2.34".
  return name.substr(start, name.find('@', start) - start);
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Where a thread's or the process's code starts, and what runs the constructors of the program
// and its libraries before `main` (`call_init` of the C library and of the loader, which only
// their files tell from a program's function of that name).
bool thread_entry(std::string_view name, std::string_view file) {
  constexpr std::array<std::string_view, 9> kEntries{"start_thread",
                                                     "clone",
                                                     "clone3",
                                                     "__clone",
                                                     "__clone3",
                                                     "__libc_start_main",
                                                     "__libc_start_main_impl",
                                                     "__libc_start_call_main",
                                                     "_start"};
  for (const std::string_view entry : kEntries) {
    if (name == entry) {
      return true;
    }
  }
  return name == "call_init" && (file == "libc-start.c" || file == "dl-init.c");
}

// The functions that allocate for their caller, whatever object they are in.
bool allocator_function(std::string_view name) {
  constexpr std::array<std::string_view, 12> kAllocators{
      "operator new", "operator delete", "malloc",   "calloc", "realloc", "reallocarray",
      "free",         "aligned_alloc",   "memalign", "valloc", "pvalloc", "posix_memalign"};
  for (const std::string_view allocator : kAllocators) {
    if (starts_with(name, allocator) &&
        (name.size() == allocator.size() || name[allocator.size()] == '[')) {
      return true;
    }
  }
  return false;
}

// The C and C++ runtime, the loader and hotscope's own libraries, by file name.
bool runtime_object(std::string_view object) {
  constexpr std::array<std::string_view, 14> kPrefixes{
      "libc.",      "libc-",  "libstdc++", "libc++", "libm.", "libm-", "libgcc_s",
      "libpthread", "libdl.", "libdl-",    "librt.", "ld-",   "ld64.", "libhotscope"};
  const std::string_view name = base_name(object);
  for (const std::string_view prefix : kPrefixes) {
    if (starts_with(name, prefix)) {
      return true;
    }
  }
  return false;
}

// Code of the standard library, of the compiler's runtime or of hotscope: the namespaces of the
// implementation, and the names reserved to it (a leading "__", or "_" at the global scope).
bool implementation_name(std::string_view name) {
  for (const std::string_view space : {"std::", "__gnu_cxx::", "__cxxabiv1::", "hotscope::"}) {
    if (starts_with(name, space)) {
      return true;
    }
  }
  return starts_with(name, "_");
}

} // namespace

std::string short_frame(const std::string& text) {
  const Frame frame = parse_frame(text);
  const std::string function = without_parameters(frame.function);
  if (frame.line > 0) {
    return function + " (" + frame.file + ":" + std::to_string(frame.line) + ")";
  }
  return frame.file.empty() ? function
                            : function + " (in " + std::string(base_name(frame.file)) + ")";
}

FrameRole frame_role(const std::string& text) {
  const Frame frame = parse_frame(text);
  const std::string name = qualified_name(frame.function);
  if (thread_entry(name, frame.file)) {
    return FrameRole::ThreadEntry;
  }
  if (allocator_function(name)) {
    return FrameRole::Allocator;
  }
  // Without a line the frame's file is its object. The implementation's names are library code in
  // any file: the standard library's templates instantiated in the program came from its headers.
  if ((frame.line == 0 && runtime_object(frame.file)) || implementation_name(name)) {
    return FrameRole::Library;
  }
  return FrameRole::Program;
}

std::string site_name(const Site& site) {
  const std::string* best = nullptr;
  FrameRole best_role = FrameRole::ThreadEntry;
  for (const std::string* frame : site.frames) {
    const FrameRole role = frame_role(*frame);
    if (best == nullptr || role < best_role) {
      best = frame;
      best_role = role;
    }
    if (role == FrameRole::Program) {
      break;
    }
  }
  return best == nullptr ? std::string("(no frames)") : short_frame(*best);
}

} // namespace hotscope::cli::profiles
