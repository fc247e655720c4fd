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
#include <memory>
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
// Both rates must be positive and finite (GuestTrace throws std::invalid_argument otherwise).
struct ClockAnchor {
  std::uint64_t guest_ticks = 0;
  std::uint64_t host_ticks = 0;
  double guest_ticks_per_second = 1e9;
  double host_ticks_per_second = 1e9;
};

// The host tick of a guest tick, also before the anchor; nothing when the result would fall
// outside [0, INT64_MAX] host ticks (such a timestamp cannot come from the guest's clock).
std::optional<std::uint64_t> to_host_ticks(const ClockAnchor& clock, std::uint64_t guest_ticks);

// A guest code address resolved by the guest ELF's symbol table: the function and the offset
// of the address into it.
struct Symbol {
  std::string name;
  std::uint64_t offset = 0;
};
// Guest code address to function (the guest ELF's symbol table), for guest stack traces. Called
// while a batch is committed: it must not throw. Names it returns are shown only if printable.
using Symbolizer = std::function<std::optional<Symbol>(std::uint64_t address)>;

// What went wrong with a rejected batch: the record's index in the batch (or the batch as a
// whole when the count or address is wrong) and a sentence that says what and how to fix it.
struct Diagnostic {
  std::optional<std::uint64_t> record;
  std::string message;
  std::string to_string() const; // "guest batch rejected at record 17: ..."
};

// One event of the guest's own heap (HOTSCOPE_GUEST_ALLOC, _FREE, _REALLOC) from an accepted
// batch, in host form: checked against the format, host clock, the stack copied out. Whether the
// block it names is live is for its consumer to judge: nothing here trusts that.
struct GuestHeapEvent {
  std::uint32_t kind = 0;               // HOTSCOPE_RECORD_HEAP_ALLOC, _FREE or _REALLOC
  std::uint64_t ticks = 0;              // host clock ticks
  std::uint64_t address = 0;            // the block; a realloc's new block (0: the call failed)
  std::uint64_t old_address = 0;        // a realloc's old block (0: none, a realloc of NULL)
  std::uint64_t size = 0;               // bytes; 0 for a free
  std::span<const std::uint64_t> stack; // return addresses, innermost first
};

// Everything counted for one guest: nothing a guest sends is dropped without being counted here.
struct GuestCounts {
  std::uint64_t batches_accepted = 0;
  std::uint64_t batches_rejected = 0;
  std::uint64_t records_accepted = 0;
  std::uint64_t records_rejected = 0; // records of rejected batches (0 for a count over capacity)
  std::uint64_t nesting_repairs = 0;  // ends without a matching begin, scopes closed by the host
};

// Host-owned copies of guest locations and texts, interned by content and kept for the life of
// the process (the trace refers to them by address). Bounded: a hostile guest cannot grow host
// memory without limit; a batch that would need more is rejected.
class NameStore {
public:
  struct Limits {
    std::size_t entries = 65536;
    std::size_t bytes = 16u << 20;
    std::size_t new_entries_per_guest = 4096;
  };
  // One location (name, file, line, flags) or one text (name only), as read from the guest.
  struct Name {
    bool is_location = false;
    std::string name;
    std::string file;
    std::uint32_t line = 0;
    std::uint32_t flags = 0;
  };
  explicit NameStore(Limits limits);
  ~NameStore();
  NameStore(const NameStore&) = delete;
  NameStore& operator=(const NameStore&) = delete;
  // The one store whose entries the process's trace refers to.
  static NameStore& process();

  // Host refs for `names` (addresses of a hotscope_source_location, or of a NUL-terminated
  // text), all or none: an error sentence instead when the store, or the guest's quota
  // (`guest_entries`: the entries this guest added so far, updated), would overflow.
  // Thread-safe.
  std::optional<std::string> intern(std::span<const Name> names, std::span<std::uint64_t> refs,
                                    std::size_t& guest_entries);
  std::size_t size() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The validating core of a guest's trace, without the trace itself (the fuzzer and the benchmark
// drive it directly): checks a batch against the state left by earlier batches and converts it
// to host form: host clock ticks, refs to NameStore entries, well nested, STACK records turned
// into one inline message per frame. Used from one host thread at a time.
class BatchValidator {
public:
  // `track_name` prefixes the guest's own thread name. `memory` and `names` must outlive this.
  BatchValidator(std::string track_name, const GuestMemory& memory, ClockAnchor clock,
                 Symbolizer symbolizer = {}, NameStore& names = NameStore::process());
  ~BatchValidator();
  BatchValidator(const BatchValidator&) = delete;
  BatchValidator& operator=(const BatchValidator&) = delete;

  // The host-form records and heap events of an accepted batch, or why the batch was rejected
  // (and nothing of it kept). Both stay valid until the next call. A heap allocation or realloc
  // is also an ALLOCATION record, so the trace counts it where it happened.
  struct Result {
    std::optional<Diagnostic> rejected;
    std::span<const hotscope_record> records;
    std::span<const GuestHeapEvent> heap;
  };
  Result validate(std::uint64_t address, std::uint64_t count, std::uint64_t capacity);
  // Ends, in host form, for the scopes still open, at host tick `now` or the guest's last
  // record, whichever is later; each counted as a repair.
  std::span<const hotscope_record> close_open_scopes(std::uint64_t now);
  // A span of host time inside the guest's innermost open scope (an exit to the host: a flush, a
  // print, a host function), in host form: a BEGIN of `location` (a host ref that lives as long
  // as the process) and its END. Moved later if needed so that the track stays in time order,
  // and guest records that follow are placed no earlier than its end. Empty when the open scopes
  // are at the depth limit. Valid until the next call.
  std::span<const hotscope_record> host_span(std::uint64_t location, std::uint64_t begin,
                                             std::uint64_t end);

  const GuestCounts& counts() const;

  // Host limits on a batch and on nesting.
  static constexpr std::uint64_t kMaxCapacity = 1u << 20; // records in a guest buffer
  static constexpr std::size_t kMaxTextBytes = 256;       // static text, incl. its NUL
  static constexpr std::size_t kMaxDepth = 256;           // open scopes; deeper ones are repaired
  static constexpr std::uint64_t kMaxAllocation = 1ull << 40; // bytes in one ALLOCATION record

  struct State;

private:
  std::unique_ptr<State> state_;
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
  // The heap events of the last batch flush() accepted (none after a rejected one); valid until
  // the next flush.
  std::span<const GuestHeapEvent> heap_events() const { return heap_events_; }

  // Host time spent on the guest's behalf, shown as a scope on its track: BatchValidator's
  // host_span(). `location` is a host ref that lives as long as the process.
  void host_span(std::uint64_t location, std::uint64_t begin, std::uint64_t end);

  // The guest stopped (halt, time limit, crash): scopes still open are closed now, counted as
  // repairs.
  void finish();

  const GuestCounts& counts() const;
  // The track: its ThreadInfo::index in the process's snapshots.
  std::uint32_t track() const { return track_; }

private:
  // Shows the counts in the process's statistics (the track's `batches`, docs/guest.md).
  void report_batches();

  BatchValidator validator_;
  std::uint32_t track_;
  std::string last_rejection_;
  std::span<const GuestHeapEvent> heap_events_;
};

} // namespace hotscope::guest
