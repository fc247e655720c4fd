// Forked children the sanitizers cannot run, skipped in those builds only:
// - TSan does not support threads in a child forked from a multi-threaded process (it reports
//   its own "dup thread" error there); the TSan build runs every test labelled `concurrent`, so
//   the tests whose forked child records skip themselves.
// - GCC 12's ASan allocator takes no lock around fork(): a child that allocates (or whose exit()
//   runs LeakSanitizer) waits forever for an allocator lock a parent's thread held at the fork.
#pragma once

#include <gtest/gtest.h>

#if defined(__SANITIZE_THREAD__)
#define HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN()                                                    \
  GTEST_SKIP() << "TSan does not support threads in a child forked from a multi-threaded process"
#else
#define HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN() static_cast<void>(0)
#endif

// `holder`: which of the parent's threads may hold the allocator's lock at the fork.
#if defined(__SANITIZE_ADDRESS__)
#define HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN(holder)                                   \
  GTEST_SKIP() << "GCC 12's ASan allocator takes no lock around fork(): a child that allocates "   \
                  "waits forever for a lock "                                                      \
               << holder << " held in malloc at the fork"
#else
#define HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN(holder) static_cast<void>(0)
#endif
