// Crash reports (docs/crash.md). With HOTSCOPE_ON_CRASH=report (the default) and HOTSCOPE_OUT
// set, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and std::terminate write crash.<pid>.txt and
// crash.<pid>.json into the output directory: the signal, the crashing thread and its native
// stack, every thread's open scopes and last records, the counters and queues. Then the handler
// that was there before (the default action, a program's, a crash reporter's) gets the signal, as
// it would have without hotscope. The handler allocates nothing, waits for no lock and writes
// with write(2) only.
#pragma once

#include <cstdint>
#include <string>

namespace hotscope::crash {

// The heap profiler's live figures, as a report gives them (docs/crash.md, "Formats").
struct HeapLive {
  enum class Mode { NotLinked, Off, Full, Sampled } mode = Mode::NotLinked;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t peak_blocks = 0;
  std::uint64_t events_waiting = 0; // the full mode's, recorded but not counted yet
};
// Reads them from the signal handler: no lock, no allocation. The heap profiler is above this
// component; the runtime, which starts both, hands the reader over.
using HeapReader = HeapLive (*)() noexcept;

// Installs the handlers (the first call; later ones return "") and opens `out_dir`, where the
// reports go; `heap` (nullptr: none) gives the report the heap's figures. Returns "" or one line
// why there will be no crash reports.
std::string install(const std::string& out_dir, HeapReader heap = nullptr);

// Gives the calling thread an alternate signal stack unless it has one, so that its stack
// overflowing is reported too. Once per thread, off the hot path (a thread's first record);
// does nothing before install().
void prepare_thread() noexcept;

} // namespace hotscope::crash
