// Guest tracing, host side (docs/guest.md): a guest (a KVM micro-VM or a child process) writes
// hotscope_record batches into its own memory and hands each batch to the host. The host copies
// the batch out, validates it as hostile input, converts the guest's clock to the host's, turns
// guest addresses into host-owned text and merges the result into the process's trace as one
// track per guest.
//
// Transports (the KVM runner, the child-process runner) only find the batch and call
// GuestTrace::flush(); everything about trusting the guest lives behind this header.
#pragma once

#include <hotscope/record.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hotscope::guest {

// A guest's memory as the host can read it. Every read is bounds-checked by the implementation:
// read() returns false, and writes nothing usable, when any byte of [address, address + size) is
// not readable guest memory (address arithmetic overflow included).
class GuestMemory {
public:
  virtual ~GuestMemory() = default;
  virtual bool read(std::uint64_t address, void* out, std::size_t size) const = 0;
};

// One contiguous region: guest addresses [guest_base, guest_base + size) are host bytes
// [host, host + size). The KVM runner's identity-mapped guest RAM.
class FlatMemory final : public GuestMemory {
public:
  FlatMemory(const void* host, std::uint64_t guest_base, std::uint64_t size)
      : host_(static_cast<const unsigned char*>(host)), guest_base_(guest_base), size_(size) {}
  bool read(std::uint64_t address, void* out, std::size_t size) const override;

private:
  const unsigned char* host_;
  std::uint64_t guest_base_;
  std::uint64_t size_;
};

// Guest ticks to host clock ticks (hotscope's clock, clock::now_ticks()): the guest's tick
// `guest_ticks` happened at host tick `host_ticks`, and each clock runs at the given rate.
struct ClockAnchor {
  std::uint64_t guest_ticks = 0;
  std::uint64_t host_ticks = 0;
  double guest_ticks_per_second = 1e9;
  double host_ticks_per_second = 1e9;
};

// Guest code address to function name (the guest ELF's symbol table), for guest stack traces.
using Symbolizer = std::function<std::optional<std::string>(std::uint64_t address)>;

// What went wrong with a rejected batch: the record's index in the batch (or the batch as a
// whole when the count or address is wrong) and a sentence that says what and how to fix it.
struct Diagnostic {
  std::optional<std::uint64_t> record;
  std::string message;
  std::string to_string() const; // "guest batch rejected at record 17: ..."
};

// Everything counted for one guest: nothing a guest sends is dropped without being counted here.
struct GuestCounts {
  std::uint64_t batches_accepted = 0;
  std::uint64_t batches_rejected = 0;
  std::uint64_t records_accepted = 0;
  std::uint64_t records_rejected = 0; // records of rejected batches
  std::uint64_t nesting_repairs = 0;  // ends without a matching begin, scopes closed by the host
};

// One guest (one vCPU, or one child process): validation state that spans its batches and its
// own track in the host's trace. Used from one host thread at a time.
class GuestTrace {
public:
  // `track_name` names the guest's track ("guest: sample-guest"). `memory` must outlive this.
  GuestTrace(std::string track_name, const GuestMemory& memory, ClockAnchor clock,
             Symbolizer symbolizer = {});
  ~GuestTrace();
  GuestTrace(const GuestTrace&) = delete;
  GuestTrace& operator=(const GuestTrace&) = delete;

  // A batch of `count` records at guest address `address`, from a buffer that holds at most
  // `capacity` records. Validated as a whole first: on success it is merged into the trace and
  // nothing is returned; otherwise nothing of it is used, it is counted, and the diagnostic says
  // why.
  std::optional<Diagnostic> flush(std::uint64_t address, std::uint64_t count,
                                  std::uint64_t capacity);

  // The guest stopped (halt, time limit, crash): scopes still open are closed now, counted as
  // repairs.
  void finish();

  const GuestCounts& counts() const { return counts_; }

private:
  struct State;
  State* state_;
  GuestCounts counts_;
};

} // namespace hotscope::guest
