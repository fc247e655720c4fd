// libgcc's unwinder, looked up by name in libgcc_s (docs/architecture.md). A program that loaded
// libunwind first resolves _Unwind_Backtrace to libunwind's version of it, which blocks signals
// (two system calls) at every frame; libgcc's walks without a system call and keeps no memory of
// its own (unw_backtrace's trace cache is 256 KiB a thread).
#pragma once

#include <unwind.h>

namespace hotscope::unwind {

struct Libgcc {
  _Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void*) = nullptr;
  _Unwind_Ptr (*ip_info)(_Unwind_Context*, int*) = nullptr;
  _Unwind_Word (*cfa)(_Unwind_Context*) = nullptr;
};

// libgcc's unwinder, looked up at the first call (dlopen of libgcc_s, kept loaded): make that
// call where the loader may be entered, never from a signal handler. Null when libgcc_s lacks
// these functions, and for a caller while another thread looks it up (it never waits: a thread
// inside dlopen may be the one that holds the loader's lock).
const Libgcc* find_libgcc() noexcept;
// The unwinder if it was looked up already, else null; never looks it up (a signal handler's).
const Libgcc* libgcc_if_found() noexcept;

} // namespace hotscope::unwind
