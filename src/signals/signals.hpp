// Reports on a terminating signal (HOTSCOPE_ON_SIGNAL=report; README, "Configuration"). SIGTERM,
// SIGINT and SIGHUP get a handler where the program has none (the default action). Writing files
// is not async-signal-safe, so the handler only wakes a reporter thread and returns: the thread
// it interrupted runs on and lets go of any lock it holds. The reporter writes the reports, then
// restores the default action and raises the signal again, so the process ends "killed by
// signal" as it would have without hotscope. A program's own handler, installed before or after,
// is never touched. Used by libhotscope's runtime and by the heap libraries.
//
// The reporter can also be started later (Reporter::Later, start_reporter): the sampled heap
// profile of a short program does without its thread. A signal that comes before it has its
// reports written by the thread the handler interrupted, from the handler, before the process
// ends: their writer must then cope with the code it interrupted (the heap library's report
// from a handler, docs/heap.md).
#pragma once

#include <signal.h>

#include <string>

namespace hotscope::signals {

using Sigaction = int (*)(int, const struct sigaction*, struct sigaction*);
using WriteReports = void (*)();

// SIGTERM, SIGINT or SIGHUP.
bool reported(int signal);

enum class Reporter { Now, Later };

// Installs the handler, through `real` (the C library's sigaction: the heap libraries interpose
// it), on each reported signal whose action is the default or already this handler, and with
// Reporter::Now starts the reporter thread. `write` replaces any earlier one. Returns "" or one
// line.
std::string report_on_signal(Sigaction real, WriteReports write, Reporter reporter = Reporter::Now);

// Starts the reporter thread in the process that installed the handler, if none runs there yet.
// Returns "" or why it could not (a signal's reports are then written from the handler).
std::string start_reporter();
// Whether start_reporter was called in this process (it starts the thread once, or says once why
// it could not).
bool reporter_started();

// True when `action` is the handler installed here.
bool is_handler(const struct sigaction& action);

// The handler's action: what report_on_signal installs.
struct sigaction handler_action();

// At a normal exit: while a signal's reports are being written, waits for the reporter to end the
// process with that signal (10 s at most). Returns at once on the thread writing them, in a
// forked child, or when no signal arrived.
void wait_for_signal_report();

// Runs work(context) on the reporter thread and waits for it: a thread of the profiler's with
// every signal blocked, already started, for a report at exit that would otherwise start one
// (a thread's start is the program's CPU time). False, with nothing run, where no
// reporter runs in this process (a forked child, HOTSCOPE_ON_SIGNAL off) or a signal's report is
// under way.
bool run_on_reporter(void (*work)(void*), void* context);

} // namespace hotscope::signals
