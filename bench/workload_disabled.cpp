// The instrumented side of the disabled-build case: hotscope's own macros, compiled out.
#include <hotscope/hotscope.hpp>

#if HOTSCOPE_ENABLED
#error "compile this file without HOTSCOPE_ENABLED (bench/CMakeLists.txt does)"
#endif

#include "workload.hpp"
#include "workload_body.hpp"

std::uint64_t sum_fields_hotscope_off(std::string_view csv) {
  return sum_fields(csv);
}
