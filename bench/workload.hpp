// The workload of the disabled-build case: one function body (workload_body.hpp) compiled in
// two translation units, so only the hotscope macros can differ between them.
#pragma once

#include <cstdint>
#include <string_view>

// Built with hotscope's macros in place but HOTSCOPE_ENABLED off (workload_disabled.cpp).
std::uint64_t sum_fields_hotscope_off(std::string_view csv);
// Built with the macros defined to nothing, no hotscope header at all (workload_plain.cpp).
std::uint64_t sum_fields_plain(std::string_view csv);
