// Guest runners (docs/guest.md, "KVM runner" and "Child-process guests"): start a freestanding
// guest built with guest/hotscope_guest.h, call its entry point, and serve its exits: trace
// flushes (to a GuestTrace, which validates them), prints, the return to the host. Two
// transports, one behaviour: a KVM micro-VM (one vCPU, long mode) and a child process sharing a
// memfd channel. Both treat the guest as hostile: every problem becomes one diagnostic line, is
// counted, and the host carries on.
#pragma once

#include "guest/guest.hpp"
#include "guest/runner/guest_heap.hpp"
#include "snapshot/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotscope::guest {

// A function the host offers its guest (hotscope_guest_host_call(number, argument)): it gets the
// guest's argument and its result goes back to the guest. The guest is hostile: the argument is
// anything.
struct HostFunction {
  std::string name; // shown on the guest's track: "host_call NAME"
  std::function<std::uint64_t(std::uint64_t argument)> call;
};

// A guest's crash as the host saw it (docs/crash.md, "Guests"), handed to RunnerOptions::on_crash
// while the guest's track still has its scopes open.
struct GuestCrash {
  std::string transport;   // "kvm" or "process"
  std::string exit;        // what the host saw, as the diagnostic line says it
  std::int64_t pid = 0;    // the guest's process; for a KVM guest the host's, where the VM runs
  int signal = 0;          // a process guest: the signal that killed it (0: none)
  GuestImage image;        // the image, with its track's name
  std::uint32_t track = 0; // the guest's track: its ThreadInfo::index in the process's trace
  // The vCPU's registers at the exit, by name (rip first); none for a process guest, whose
  // registers the kernel does not hand its parent.
  std::vector<std::pair<std::string, std::uint64_t>> registers;
  std::optional<Symbol> function; // the function rip is in, by the image's symbols
  std::uint64_t unflushed = 0;    // records still in the guest's buffer, taken into its track
};

struct RunnerOptions {
  std::string track_name;                      // empty: "guest: <file name>"
  std::chrono::milliseconds time_limit{5000};  // per entry into the guest
  std::uint64_t max_flushes_per_call = 100000; // more is a flood: the guest is stopped
  std::uint64_t memory_bytes = 16u << 20;      // KVM guest RAM, a multiple of 2 MiB
  // The guest's print host call; default: the text on stdout, prefixed "guest: ".
  std::function<void(std::string_view text)> print;
  // Each problem, one line; default: stderr, prefixed "hotscope: ".
  std::function<void(const std::string& line)> diagnostic;
  // The guest's host functions, by number.
  std::vector<HostFunction> host_functions;
  // Called when the guest crashes (a fault, a shutdown, a signal), before it is stopped.
  std::function<void(const GuestCrash& crash)> on_crash;
};

// What one entry into the guest came to.
struct CallResult {
  bool returned = false;   // the guest returned (halted) normally; else it was stopped
  std::uint64_t value = 0; // the guest's result (rax at the halt, or the process's reply)
};

// Counts of one guest's exits, beside GuestTrace's record counts.
struct RunnerCounts {
  std::uint64_t calls = 0;
  std::uint64_t flushes = 0; // flush exits, accepted or not
  std::uint64_t prints = 0;
  std::uint64_t host_calls = 0;         // calls of host functions, known or not
  std::uint64_t unknown_host_calls = 0; // of numbers the host does not provide (reported once)
  std::uint64_t diagnostics = 0;
};

class Runner {
public:
  virtual ~Runner() = default;
  // Enters the guest's dispatch entry with `argument`. After a stop (time limit, flood, crash)
  // the guest is not entered again: later calls return {returned = false} at once.
  virtual CallResult call(std::uint64_t argument) = 0;
  // The guest is done: its track's open scopes are closed. Also done by the destructor.
  virtual void finish() = 0;
  virtual bool stopped() const = 0;
  virtual const GuestCounts& trace_counts() const = 0;
  virtual const RunnerCounts& counts() const = 0;
  // The guest's own heap, as its allocator reported it.
  virtual const GuestHeap& heap() const = 0;
  // The image the guest runs: path, size and SHA-256 of the bytes read.
  virtual const GuestImage& image() const = 0;
};

// Loads a VM guest image (validated as untrusted input), creates the VM and runs the guest's
// init entry. nullptr and `error` (one line) when KVM is unusable or the image is rejected.
std::unique_ptr<Runner> start_kvm_guest(const std::string& elf_path, const RunnerOptions& options,
                                        std::string& error);

// Starts a process guest (a static executable built with HOTSCOPE_GUEST_PROCESS) as a child and
// runs its init entry. nullptr and `error` (one line) when it cannot be started.
std::unique_ptr<Runner> start_process_guest(const std::string& elf_path,
                                            const RunnerOptions& options, std::string& error);

// "" when /dev/kvm can be opened and speaks the expected API, else why not (one line).
std::string kvm_unavailable_reason();

} // namespace hotscope::guest
