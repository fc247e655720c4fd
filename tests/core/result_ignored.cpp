// Compiled by result_ignored.cmake with -Werror, expected to fail: the Result is dropped.
#include <hotscope/control.hpp>

int main() {
  hotscope::start_agent();
  return 0;
}
