// The calling thread's minor page faults so far: what a test of the memory a thread's first work
// touches counts (a cache mapped and written for it shows as a page fault per page).
#pragma once

#include <sys/resource.h>

namespace hotscope::test_support {

inline long minor_faults_of_this_thread() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

} // namespace hotscope::test_support
