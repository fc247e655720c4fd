// The baseline of the disabled-build case: the same workload as if it had never been
// instrumented. No hotscope header; the macros are defined to nothing.
#define HOTSCOPE_FUNCTION()
#define HOTSCOPE_SCOPE(name)

#include "workload.hpp"
#include "workload_body.hpp"

std::uint64_t sum_fields_plain(std::string_view csv) {
  return sum_fields(csv);
}
