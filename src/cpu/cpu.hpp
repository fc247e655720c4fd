// The CPU sampler (docs/cpu.md): every thread of the process is sampled on its own CPU time by a
// per-thread CPU-time timer whose signal (kSignal) the thread itself takes; the handler unwinds
// the thread's stack with libunwind (DWARF CFI, so code without frame pointers too) into a
// bounded buffer without a lock, and the collector takes the samples from there.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

namespace hotscope::cpu {

// The timers' signal. Its default action is to ignore it (SIGPROF's ends the process): a sample
// still pending when a thread execs another program, which resets the handler, is then ignored.
inline constexpr int kSignal = SIGURG;

// Deepest stack a sample keeps; a deeper one is kept cut and counted incomplete.
inline constexpr std::uint32_t kMaxFrames = 64;

struct Sample {
  std::int64_t tid = 0;
  // The sampled thread's ring (trace), null when it has none, and how many records it had
  // written then: the scopes open at the sample are those open after that many records.
  const void* ring = nullptr;
  std::uint64_t ring_head = 0;
  std::uint32_t frames = 0;
  bool complete = false;    // unwound to the outermost frame (_start, clone), not cut or failed
  std::uint32_t weight = 1; // periods of CPU time it stands for (the kernel may merge expirations)
  // Innermost first: the interrupted instruction, then return addresses.
  std::uint64_t pcs[kMaxFrames];
  std::uint64_t sps[kMaxFrames]; // each frame's stack pointer, increasing outwards
};

struct Figures {
  unsigned hz = 0;              // 0: not sampling
  std::uint64_t samples = 0;    // taken (complete or not), lost ones excluded
  std::uint64_t lost = 0;       // the buffer was full: the collector lagged
  std::uint64_t incomplete = 0; // stacks not unwound to their outermost frame
  std::uint64_t threads = 0;    // threads with a timer now
  std::string problem;          // why sampling is off or stopped, when it is not by request
};

// Samples every thread of the process at `hz` per CPU second, threads started later too (they
// are found within kThreadScanMs). "" or one line saying why it cannot.
std::string start(unsigned hz);
// Stops the timers (the handler stays installed: a signal still in flight must find it).
void stop();
unsigned hz();
Figures figures();
// Moves the samples taken so far to the end of `out`. The collector's: one caller at a time.
void take(std::vector<Sample>& out);

// How often the sampler looks for new threads.
inline constexpr unsigned kThreadScanMs = 50;

} // namespace hotscope::cpu
