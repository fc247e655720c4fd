// A shared library built with -finstrument-functions: its hooks are the executable's.
#include "instrumented_library.hpp"

namespace library {

int twice(int value) {
  return value * 2;
}

} // namespace library
