// The host logic both transports share: a guest's trace and heap, its exits (flush, print, host
// functions), each shown as a host_call span on its track, the flood limit, diagnostics and
// counts. A transport finds the exit's arguments and calls in here.
#pragma once

#include "guest/guest.hpp"
#include "guest/runner/runner.hpp"

#include <hotscope_guest_abi.h>

#include <cstdint>
#include <optional>
#include <string>

namespace hotscope::guest {

class Session {
public:
  // `memory` must outlive the session.
  Session(const RunnerOptions& options, std::string track_name, const GuestMemory& memory,
          ClockAnchor clock, Symbolizer symbolizer, GuestImage image);
  ~Session();

  void begin_call();
  // A flush exit. False when the guest floods the host and must be stopped (already reported).
  bool flush(std::uint64_t address, std::uint64_t count);
  // A print host call: bounded, read from guest memory, control characters neutralised.
  void print(std::uint64_t address, std::uint64_t length);
  // A call of host function number `function`: its result, or all ones (reported) for a number
  // the host does not provide.
  std::uint64_t host_call(std::uint64_t function, std::uint64_t argument);
  // One diagnostic line, counted.
  void report(const std::string& problem);
  // The guest is stopped for good: reported, and its open scopes closed.
  void stop(const std::string& why);
  // The guest crashed: the `count` records left in its buffer at `address` (validated as any
  // batch) go to its track, RunnerOptions::on_crash gets `crash`, completed with what the session
  // knows, then the guest is stopped with `crash.exit` as the diagnostic.
  void crash(GuestCrash crash, std::uint64_t address = 0, std::uint64_t count = 0);
  void finish();

  bool stopped() const { return stopped_; }
  const GuestCounts& trace_counts() const { return trace_.counts(); }
  const RunnerCounts& counts() const { return counts_; }
  const std::string& name() const { return name_; }
  const GuestHeap& heap() const { return heap_; }
  const GuestImage& image() const { return image_; }

private:
  // Host refs of the host_call locations: flush, print, an unknown function, then one per host
  // function (0 where the name store is full: no span then).
  enum HostCall : std::size_t { kFlushCall, kPrintCall, kUnknownCall, kFunctionCalls };
  void intern_host_calls();
  void print_text(std::uint64_t address, std::uint64_t length);
  void host_span(std::size_t call, std::uint64_t begin);

  RunnerOptions options_;
  std::string name_;
  const GuestMemory& memory_;
  GuestImage image_;
  Symbolizer symbolizer_;
  GuestTrace trace_;
  GuestHeap heap_;
  std::vector<std::uint64_t> host_calls_;
  RunnerCounts counts_;
  std::uint64_t flushes_this_call_ = 0;
  bool stopped_ = false;
  bool finished_ = false;
};

// "guest: sample-guest" for "/path/sample-guest.elf".
std::string default_track_name(const std::string& elf_path);

// The Runner interface over a Session, which each transport creates once the guest is loaded
// and resets first in its destructor (the session refers to the transport's guest memory).
class SessionRunner : public Runner {
public:
  CallResult call(std::uint64_t argument) final { return enter(HOTSCOPE_GUEST_OP_CALL, argument); }
  void finish() final { session_->finish(); }
  bool stopped() const final { return session_->stopped(); }
  const GuestCounts& trace_counts() const final { return session_->trace_counts(); }
  const RunnerCounts& counts() const final { return session_->counts(); }
  const GuestHeap& heap() const final { return session_->heap(); }
  const GuestImage& image() const final { return session_->image(); }

protected:
  // Enters the guest at `op` (HOTSCOPE_GUEST_OP_INIT or _CALL) and handles its exits until it
  // returns or is stopped.
  virtual CallResult enter(std::uint64_t op, std::uint64_t argument) = 0;

  std::optional<Session> session_;
};

} // namespace hotscope::guest
