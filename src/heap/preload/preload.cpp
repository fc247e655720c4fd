// libhotscope-preload.so: the heap profiler for unmodified binaries (LD_PRELOAD). Everything is
// the interposer's (src/heap/interposer); a preloaded program asked for profiling, so it records
// every allocation unless HOTSCOPE_HEAP_MODE says otherwise, and always writes heap.json at exit.
// C++'s operator new and delete reach it through libstdc++, which calls malloc and free.
#include "heap/interposer/interposer.hpp"

const hotscope::heap::interposer::Flavour hotscope::heap::interposer::flavour{HOTSCOPE_HEAP_FULL,
                                                                              false};
