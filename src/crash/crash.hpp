// Crash reports (docs/crash.md). With HOTSCOPE_ON_CRASH=report (the default) and HOTSCOPE_OUT
// set, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and std::terminate write crash.<pid>.txt and
// crash.<pid>.json into the output directory: the signal, the crashing thread and its native
// stack, every thread's open scopes and last records, the counters and queues. Then the handler
// that was there before (the default action, a program's, a crash reporter's) gets the signal, as
// it would have without hotscope. The handler allocates nothing, waits for no lock and writes
// with write(2) only.
#pragma once

#include <string>

namespace hotscope::crash {

// Installs the handlers (the first call; later ones return "") and opens `out_dir`, where the
// reports go. Returns "" or one line why there will be no crash reports.
std::string install(const std::string& out_dir);

// Gives the calling thread an alternate signal stack unless it has one, so that its stack
// overflowing is reported too. Once per thread, off the hot path (a thread's first record);
// does nothing before install().
void prepare_thread() noexcept;

} // namespace hotscope::crash
