// A program that links hotscope but uses none of its macros, only a call of <hotscope/control.hpp>:
// the runtime must start all the same and write its reports at exit (HOTSCOPE_OUT).
#include <hotscope/control.hpp>

#include <cstdio>

int main() {
  std::printf("heap mode %d\n", static_cast<int>(hotscope::heap_mode()));
  return 0;
}
