#pragma once

#include <string>
#include <string_view>

namespace hotscope::names {

// "std::string Parser::parse(const char*) const [with T = int]" -> "Parser::parse": the
// qualified name without return type, parameters and template bindings. Text that does not
// look like a signature comes back unchanged.
std::string short_function_name(std::string_view signature);

// "_Z9make_nodei" -> "make_node(int)"; names that are not mangled ("main", "f") come back as is.
std::string demangle(const char* name);
// A type's name as std::type_info::name() gives it ("St13runtime_error"), demangled.
std::string demangle_type(const char* name);

} // namespace hotscope::names
