// The host's trust boundary for guest records (docs/guest.md, "Validation"): a batch is copied
// out of guest memory once, checked whole against the state earlier batches left, and only then
// converted and committed. Nothing here trusts a byte the guest wrote.
#include "guest/guest.hpp"
#include "guest/guest_text.hpp"
#include "guest/tick_converter.hpp"
#include "text/text.hpp"
#include "trace/record_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace hotscope::guest {
namespace {

constexpr std::uint32_t kNoName = UINT32_MAX;
constexpr std::uint64_t kFramesPerRecord = HOTSCOPE_RECORD_SIZE / sizeof(std::uint64_t);

std::uint64_t records_for(std::uint64_t bytes, std::uint64_t per_record) {
  return (bytes + per_record - 1) / per_record;
}

using trace::RecordKind;
using trace::RecordPayload;
using trace::RecordRef;

// Payload slots a heap record puts before its stack: a realloc's old address.
std::uint64_t heap_lead_slots(std::uint32_t kind) {
  return trace::record_kind(kind)->payload == RecordPayload::HeapOldBlockAndStack ? 1 : 0;
}

// The uint64 slot `slot` of the payload that follows `record`.
std::uint64_t payload_slot(const hotscope_record* record, std::uint64_t slot) {
  std::uint64_t value = 0;
  std::memcpy(&value, reinterpret_cast<const char*>(record + 1) + slot * sizeof(value),
              sizeof(value));
  return value;
}

// One host-form text record (MESSAGE_INLINE or THREAD_NAME) with its payload.
void append_text(std::vector<hotscope_record>& out, std::uint32_t kind, std::uint64_t ticks,
                 std::string_view text) {
  const std::uint64_t payload = records_for(text.size(), HOTSCOPE_PAYLOAD_BYTES_PER_RECORD);
  out.push_back({ticks, 0, text.size(), kind, static_cast<std::uint32_t>(payload)});
  const std::size_t at = out.size();
  out.resize(at + payload); // zeroed: the text needs no terminator
  std::memcpy(static_cast<void*>(out.data() + at), text.data(), text.size());
}

} // namespace

std::string Diagnostic::to_string() const {
  return record ? text::cat("guest batch rejected at record ", *record, ": ", message)
                : text::cat("guest batch rejected: ", message);
}

struct BatchValidator::State {
  State(std::string track_name, const GuestMemory& memory, ClockAnchor clock, Symbolizer symbolizer,
        NameStore& names)
      : track_name(std::move(track_name)), memory(memory), clock(clock), to_host(clock),
        symbolizer(std::move(symbolizer)), names(names) {}

  std::optional<Diagnostic> check(std::uint64_t address, std::uint64_t count,
                                  std::uint64_t capacity);
  std::optional<std::string> check_record(std::size_t index, std::uint64_t count);
  std::optional<std::string> check_heap(std::size_t index) const;
  std::optional<std::string> resolve(std::size_t index, bool location);
  std::optional<std::string> read_text(std::uint64_t address, const char* what, std::string& out);
  void commit();
  void begin(std::uint64_t location, std::uint64_t ticks);
  void end(std::uint64_t location, std::uint64_t ticks);
  void append_stack(std::size_t index, std::uint64_t ticks);
  void append_heap_event(std::size_t index, std::uint64_t ticks);

  const std::string track_name;
  const GuestMemory& memory;
  const ClockAnchor clock;
  const TickConverter to_host;
  const Symbolizer symbolizer;
  NameStore& names;
  GuestCounts counts;

  // Carried from batch to batch; changed only by accepted batches.
  bool seen_ticks = false;
  std::uint64_t last_guest_ticks = 0;
  std::uint64_t last_host_ticks = 0;
  std::vector<std::uint64_t> open;   // host refs of the open scopes' locations, innermost last
  std::size_t begins_over_depth = 0; // begins past kMaxDepth not passed on; their ends are dropped
  std::size_t guest_names = 0;       // entries this guest added to the name store
  std::uint64_t host_floor = 0;      // the end of the last host span: no guest record before it

  // One batch, reused: the copy, what checking learned per record, the host-form output.
  std::vector<hotscope_record> batch;
  std::vector<std::uint64_t> host_ticks;
  std::vector<std::uint32_t> name_of; // index into batch_names, or kNoName
  std::vector<NameStore::Name> batch_names;
  std::vector<std::uint64_t> batch_refs; // host refs of batch_names
  std::unordered_map<std::uint64_t, std::uint32_t> location_names, text_names; // by guest ref
  std::uint64_t batch_last_guest_ticks = 0;
  std::uint64_t batch_last_host_ticks = 0;
  std::vector<hotscope_record> out;
  std::vector<GuestHeapEvent> heap_events;
  std::vector<std::uint64_t> heap_frames;    // the heap events' stacks, one after the other
  std::vector<std::size_t> heap_stack_start; // where each event's stack starts in heap_frames
};

BatchValidator::BatchValidator(std::string track_name, const GuestMemory& memory, ClockAnchor clock,
                               Symbolizer symbolizer, NameStore& names) {
  const auto usable = [](double rate) { return std::isfinite(rate) && rate > 0; };
  if (!usable(clock.guest_ticks_per_second) || !usable(clock.host_ticks_per_second)) {
    throw std::invalid_argument(
        text::cat("guest clock anchor: tick rates must be positive and finite (guest ",
                  text::shortest(clock.guest_ticks_per_second), ", host ",
                  text::shortest(clock.host_ticks_per_second), ")"));
  }
  state_ =
      std::make_unique<State>(std::move(track_name), memory, clock, std::move(symbolizer), names);
}

BatchValidator::~BatchValidator() = default;

const GuestCounts& BatchValidator::counts() const {
  return state_->counts;
}

BatchValidator::Result BatchValidator::validate(std::uint64_t address, std::uint64_t count,
                                                std::uint64_t capacity) {
  State& s = *state_;
  if (std::optional<Diagnostic> problem = s.check(address, count, capacity)) {
    ++s.counts.batches_rejected;
    s.counts.records_rejected += count <= capacity && capacity <= kMaxCapacity ? count : 0;
    return {std::move(problem), {}, {}};
  }
  s.commit();
  ++s.counts.batches_accepted;
  s.counts.records_accepted += count;
  return {std::nullopt, s.out, s.heap_events};
}

std::span<const hotscope_record> BatchValidator::close_open_scopes(std::uint64_t now) {
  State& s = *state_;
  s.out.clear();
  const std::uint64_t ticks = std::max({now, s.last_host_ticks, s.host_floor});
  for (auto it = s.open.rbegin(); it != s.open.rend(); ++it) {
    s.out.push_back({ticks, *it, 0, HOTSCOPE_RECORD_END, 0});
  }
  s.counts.nesting_repairs += s.open.size();
  s.open.clear();
  s.begins_over_depth = 0;
  return s.out;
}

std::span<const hotscope_record> BatchValidator::host_span(std::uint64_t location,
                                                           std::uint64_t begin, std::uint64_t end) {
  State& s = *state_;
  s.out.clear();
  if (s.open.size() >= kMaxDepth) {
    return {};
  }
  begin = std::max({begin, s.last_host_ticks, s.host_floor});
  end = std::max(end, begin);
  s.out.push_back({begin, location, 0, HOTSCOPE_RECORD_BEGIN, 0});
  s.out.push_back({end, location, 0, HOTSCOPE_RECORD_END, 0});
  s.host_floor = end;
  return s.out;
}

// Everything that can reject a batch, on a copy of it; changes nothing but scratch space.
std::optional<Diagnostic> BatchValidator::State::check(std::uint64_t address, std::uint64_t count,
                                                       std::uint64_t capacity) {
  const auto whole = [](std::string message) {
    return Diagnostic{std::nullopt, std::move(message)};
  };
  if (capacity == 0 || capacity > kMaxCapacity) {
    return whole(text::cat("buffer capacity of ", capacity, " records is outside 1..", kMaxCapacity,
                           "; give the size of the guest's trace buffer"));
  }
  if (count > capacity) {
    return whole(text::cat(count, " records flushed from a buffer of ", capacity,
                           "; a guest flushes at most a full buffer"));
  }
  const std::uint64_t bytes = count * HOTSCOPE_RECORD_SIZE; // count <= 2^20: no overflow
  if (address > UINT64_MAX - bytes) {
    return whole(text::cat(
        "buffer at 0x", text::hex(address), " of ", count,
        " records wraps around the address space; pass the guest address of the trace buffer"));
  }
  batch.resize(count);
  if (count > 0 && !memory.read(address, batch.data(), bytes)) {
    return whole(text::cat(
        "buffer 0x", text::hex(address), "..0x", text::hex(address + bytes), " (", count,
        " records) is not inside guest memory; pass the guest address of the trace buffer"));
  }
  host_ticks.assign(count, 0);
  name_of.assign(count, kNoName);
  batch_names.clear();
  location_names.clear();
  text_names.clear();
  batch_last_guest_ticks = last_guest_ticks;
  batch_last_host_ticks = last_host_ticks;
  bool ticks_seen = seen_ticks;
  for (std::size_t i = 0; i < count;) {
    const hotscope_record& record = batch[i];
    if (ticks_seen && record.ticks < batch_last_guest_ticks) {
      return Diagnostic{
          i,
          text::cat("timestamp ", record.ticks, " is earlier than the previous record's ",
                    batch_last_guest_ticks, i == 0 ? " (in the previous batch)" : "",
                    "; guest timestamps must come from one monotonic clock (the TSC of one vCPU)")};
    }
    ticks_seen = true;
    batch_last_guest_ticks = record.ticks;
    const std::optional<std::uint64_t> host = to_host(record.ticks);
    if (!host) {
      return Diagnostic{i, text::cat("timestamp ", record.ticks,
                                     " is too far from the clock anchor (guest tick ",
                                     clock.guest_ticks,
                                     ") to place on the host clock; guest timestamps must be raw "
                                     "TSC reads taken while the guest runs")};
    }
    host_ticks[i] = *host;
    batch_last_host_ticks = *host;
    if (std::optional<std::string> problem = check_record(i, count)) {
      return Diagnostic{i, std::move(*problem)};
    }
    i += 1 + record.payload_records; // checked: within the batch
  }
  batch_refs.resize(batch_names.size());
  if (std::optional<std::string> problem = names.intern(batch_names, batch_refs, guest_names)) {
    return whole(std::move(*problem));
  }
  return std::nullopt;
}

// One record (and its payload) against the format; records the names it refers to.
std::optional<std::string> BatchValidator::State::check_record(std::size_t index,
                                                               std::uint64_t count) {
  const hotscope_record& record = batch[index];
  const RecordKind* row = trace::record_kind(record.kind);
  if (row == nullptr || !row->from_guest) {
    return text::cat("unknown record kind ", record.kind,
                     "; the guest must write records as include/hotscope/record.h (version ",
                     HOTSCOPE_RECORD_VERSION, ") defines them");
  }
  const char* kind = row->name;
  std::uint64_t payload = 0; // what the kind needs
  switch (row->payload) {
  case RecordPayload::None:
    if (row->kind == HOTSCOPE_RECORD_ALLOCATION && record.value > kMaxAllocation) {
      return text::cat("ALLOCATION of ", record.value,
                       " bytes is more than a guest can have (at most ", kMaxAllocation, ")");
    }
    break;
  case RecordPayload::InlineText:
    if (record.value > HOTSCOPE_INLINE_TEXT_MAX) {
      return text::cat(kind, " text of ", record.value,
                       " bytes is longer than HOTSCOPE_INLINE_TEXT_MAX (", HOTSCOPE_INLINE_TEXT_MAX,
                       "); cut inline text to that length");
    }
    payload = records_for(record.value, HOTSCOPE_PAYLOAD_BYTES_PER_RECORD);
    break;
  case RecordPayload::StackFrames:
    if (record.value == 0 || record.value > HOTSCOPE_STACK_FRAMES_MAX) {
      return text::cat(kind, " of ", record.value,
                       " frames is outside 1..HOTSCOPE_STACK_FRAMES_MAX (",
                       HOTSCOPE_STACK_FRAMES_MAX, ")");
    }
    payload = records_for(record.value, kFramesPerRecord);
    break;
  case RecordPayload::HeapStack:
  case RecordPayload::HeapOldBlockAndStack: {
    // The kind allows a range: the stack's length is up to the guest.
    const std::uint64_t lead = heap_lead_slots(record.kind);
    const std::uint64_t most = records_for(lead + HOTSCOPE_STACK_FRAMES_MAX, kFramesPerRecord);
    if (record.payload_records < lead || record.payload_records > most) {
      return text::cat(
          kind, " record says ", record.payload_records, " payload records where it carries ", lead,
          " to ", most, " (", lead != 0 ? "the old block's address and " : "",
          "a stack of at most HOTSCOPE_STACK_FRAMES_MAX (", HOTSCOPE_STACK_FRAMES_MAX, ") frames)");
    }
    payload = record.payload_records;
    break;
  }
  }
  if (record.payload_records != payload) {
    return text::cat(kind, " record says ", record.payload_records,
                     " payload records where its value ", record.value, " needs ", payload);
  }
  if (payload > count - index - 1) {
    return text::cat(kind, " record's ", payload,
                     " payload records run past the end of the batch (", count,
                     " records); flush whole records only");
  }
  switch (row->ref) {
  case RecordRef::Location:
    return resolve(index, true);
  case RecordRef::StaticText:
    return resolve(index, false);
  case RecordRef::Block:
    return check_heap(index);
  case RecordRef::None:
  case RecordRef::LockName: // lock kinds never come from a guest (checked before)
  case RecordRef::Number:
  case RecordRef::Function: // nor do function kinds
    break;
  }
  if (row->payload == RecordPayload::InlineText) {
    std::string_view text(reinterpret_cast<const char*>(batch.data() + index + 1), record.value);
    text = text.substr(0, text.find('\0'));
    if (std::optional<std::string> problem = unprintable(text)) {
      return text::cat(kind, " text has ", *problem, "; guest text must be printable UTF-8");
    }
  }
  return std::nullopt;
}

// A heap record's block and stack, its payload known to be inside the batch. Whether the block
// is live is not checked here: the heap's accounting counts what does not add up.
std::optional<std::string> BatchValidator::State::check_heap(std::size_t index) const {
  const hotscope_record& record = batch[index];
  const char* kind = trace::record_kind(record.kind)->name;
  const bool sized = record.kind != HOTSCOPE_RECORD_HEAP_FREE;
  if (record.ref == 0 && record.kind != HOTSCOPE_RECORD_HEAP_REALLOC) {
    return text::cat(kind, " of block address 0; record only blocks the allocator handed out");
  }
  if (sized && record.value > kMaxAllocation) {
    return text::cat(kind, " of ", record.value, " bytes is more than a guest can have (at most ",
                     kMaxAllocation, ")");
  }
  if (sized && record.ref > UINT64_MAX - record.value) {
    return text::cat(kind, " block at 0x", text::hex(record.ref), " of ", record.value,
                     " bytes wraps around the address space");
  }
  bool ended = false;
  for (std::uint64_t slot = heap_lead_slots(record.kind);
       slot < record.payload_records * kFramesPerRecord; ++slot) {
    const bool empty = payload_slot(&record, slot) == 0;
    if (ended && !empty) {
      return text::cat(
          kind,
          " stack has a return address after an empty slot; unused slots must be 0 and come last");
    }
    ended |= empty;
  }
  return std::nullopt;
}

// The location or static text a record refers to, read once per batch and guest address.
std::optional<std::string> BatchValidator::State::resolve(std::size_t index, bool location) {
  const std::uint64_t ref = batch[index].ref;
  auto& known = location ? location_names : text_names;
  if (const auto found = known.find(ref); found != known.end()) {
    name_of[index] = found->second;
    return std::nullopt;
  }
  NameStore::Name name;
  name.is_location = location;
  if (ref == 0) {
    return location ? "no source location (ref 0); pass the address of a static "
                      "hotscope_source_location"
                    : "no message text (ref 0); pass the address of a static NUL-terminated text";
  }
  if (location) {
    struct {
      std::uint64_t name;
      std::uint64_t file;
      std::uint32_t line;
      std::uint32_t flags;
    } raw{};
    static_assert(sizeof(raw) == sizeof(hotscope_source_location));
    if (!memory.read(ref, &raw, sizeof(raw))) {
      return text::cat(
          "source location at 0x", text::hex(ref),
          " is not inside guest memory; pass the address of a static hotscope_source_location");
    }
    if ((raw.flags & ~std::uint32_t{HOTSCOPE_LOCATION_FUNCTION_SIGNATURE}) != 0) {
      return text::cat("source location at 0x", text::hex(ref), " has unknown flags 0x",
                       text::hex(raw.flags));
    }
    if (raw.name == 0) {
      return text::cat("source location at 0x", text::hex(ref), " has no name");
    }
    if (auto problem = read_text(raw.name, "location name", name.name)) {
      return problem;
    }
    if (raw.file != 0) {
      if (auto problem = read_text(raw.file, "location file", name.file)) {
        return problem;
      }
    }
    name.line = raw.line;
    name.flags = raw.flags;
  } else if (auto problem = read_text(ref, "message text", name.name)) {
    return problem;
  }
  const auto id = static_cast<std::uint32_t>(batch_names.size());
  batch_names.push_back(std::move(name));
  known.emplace(ref, id);
  name_of[index] = id;
  return std::nullopt;
}

// A NUL-terminated text of at most kMaxTextBytes (NUL included) at a guest address. Read in
// small aligned pieces, so that a short text near the end of guest memory is still found.
std::optional<std::string> BatchValidator::State::read_text(std::uint64_t address, const char* what,
                                                            std::string& out) {
  constexpr std::size_t kPiece = 32;
  char bytes[kMaxTextBytes];
  for (std::size_t length = 0; length < kMaxTextBytes;) {
    if (address > UINT64_MAX - length) {
      return text::cat(what, " at 0x", text::hex(address),
                       " runs past the end of the address space");
    }
    const std::uint64_t at = address + length;
    std::size_t piece = std::min<std::size_t>(kPiece - at % kPiece, kMaxTextBytes - length);
    bool cut = false;
    if (!memory.read(at, bytes + length, piece)) {
      // The end of guest memory is inside this piece: the text must end before it.
      std::size_t readable = 0;
      while (readable < piece && memory.read(at + readable, bytes + length + readable, 1)) {
        ++readable;
      }
      piece = readable;
      cut = true;
    }
    if (const void* nul = std::memchr(bytes + length, '\0', piece)) {
      out.assign(bytes, static_cast<std::size_t>(static_cast<const char*>(nul) - bytes));
      if (std::optional<std::string> problem = unprintable(out)) {
        return text::cat(what, " at 0x", text::hex(address), " has ", *problem,
                         "; guest text must be printable UTF-8");
      }
      return std::nullopt;
    }
    if (cut) {
      return text::cat(what, " at 0x", text::hex(address),
                       " runs out of guest memory before its NUL; pass the address of a static "
                       "NUL-terminated text");
    }
    length += piece;
  }
  return text::cat(what, " at 0x", text::hex(address), " is not NUL-terminated within ",
                   kMaxTextBytes, " bytes; guest texts must be shorter");
}

// The batch passed every check: convert it and update the state it carries to the next batch.
// Nothing here can reject the batch any more.
void BatchValidator::State::commit() {
  out.clear();
  heap_events.clear();
  heap_frames.clear();
  heap_stack_start.clear();
  for (std::size_t i = 0; i < batch.size();) {
    const hotscope_record& record = batch[i];
    const std::uint64_t ticks = std::max(host_ticks[i], host_floor);
    const std::uint64_t ref = name_of[i] == kNoName ? 0 : batch_refs[name_of[i]];
    const std::string_view text(reinterpret_cast<const char*>(batch.data() + i + 1),
                                record.payload_records == 0 ? 0 : record.value);
    switch (trace::record_kind(record.kind)->kind) { // check() let only known kinds through
    case HOTSCOPE_RECORD_BEGIN:
      begin(ref, ticks);
      break;
    case HOTSCOPE_RECORD_END:
      end(ref, ticks);
      break;
    case HOTSCOPE_RECORD_MESSAGE_STATIC:
    case HOTSCOPE_RECORD_COUNTER:
    case HOTSCOPE_RECORD_ALLOCATION:
    case HOTSCOPE_RECORD_QUEUE_PUSH:
    case HOTSCOPE_RECORD_QUEUE_POP:
    case HOTSCOPE_RECORD_QUEUE_CAPACITY:
      out.push_back({ticks, ref, record.value, record.kind, 0});
      break;
    case HOTSCOPE_RECORD_MESSAGE_INLINE:
      append_text(out, record.kind, ticks, text.substr(0, text.find('\0')));
      break;
    case HOTSCOPE_RECORD_THREAD_NAME:
      append_text(out, record.kind, ticks,
                  text::cat(track_name, " (", text.substr(0, text.find('\0')), ")"));
      break;
    case HOTSCOPE_RECORD_STACK:
      append_stack(i, ticks);
      break;
    case HOTSCOPE_RECORD_HEAP_ALLOC:
    case HOTSCOPE_RECORD_HEAP_REALLOC:
      if (record.ref != 0) { // a failed realloc allocated nothing
        out.push_back({ticks, 0, record.value, HOTSCOPE_RECORD_ALLOCATION, 0});
      }
      append_heap_event(i, ticks);
      break;
    case HOTSCOPE_RECORD_HEAP_FREE:
      append_heap_event(i, ticks);
      break;
    case HOTSCOPE_RECORD_TASK_CREATE:
    case HOTSCOPE_RECORD_TASK_RESUME:
    case HOTSCOPE_RECORD_TASK_SUSPEND:
    case HOTSCOPE_RECORD_TASK_COMPLETE:
    case HOTSCOPE_RECORD_TASK_DESTROY:
    case HOTSCOPE_RECORD_LOCK_WAIT:
    case HOTSCOPE_RECORD_LOCK_ACQUIRE:
    case HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED:
    case HOTSCOPE_RECORD_LOCK_RELEASE:
    case HOTSCOPE_RECORD_LOCK_TRY_FAIL:
    case HOTSCOPE_RECORD_LOCK_HOLDER:
    case HOTSCOPE_RECORD_LOCK_ORDER:
    case HOTSCOPE_RECORD_FUNCTION_BEGIN:
    case HOTSCOPE_RECORD_FUNCTION_END:
      break; // not from a guest: check() rejected them
    }
    i += 1 + record.payload_records;
  }
  for (std::size_t e = 0; e < heap_events.size(); ++e) { // heap_frames has stopped growing
    const std::size_t end =
        e + 1 < heap_events.size() ? heap_stack_start[e + 1] : heap_frames.size();
    heap_events[e].stack = std::span<const std::uint64_t>(heap_frames)
                               .subspan(heap_stack_start[e], end - heap_stack_start[e]);
  }
  if (!batch.empty()) {
    seen_ticks = true;
    last_guest_ticks = batch_last_guest_ticks;
    last_host_ticks = batch_last_host_ticks;
  }
}

void BatchValidator::State::begin(std::uint64_t location, std::uint64_t ticks) {
  if (open.size() >= kMaxDepth) {
    ++begins_over_depth;
    ++counts.nesting_repairs;
    return;
  }
  open.push_back(location);
  out.push_back({ticks, location, 0, HOTSCOPE_RECORD_BEGIN, 0});
}

// An end closes the innermost open scope of its location; scopes opened inside that one and
// not closed are closed with it. An end that matches no open scope is dropped. Locations are
// compared by their host refs, which are interned by content.
void BatchValidator::State::end(std::uint64_t location, std::uint64_t ticks) {
  if (begins_over_depth > 0) {
    --begins_over_depth; // the end of a begin that was not passed on
    return;
  }
  const auto match = std::find(open.rbegin(), open.rend(), location);
  if (match == open.rend()) {
    ++counts.nesting_repairs;
    return;
  }
  const auto unclosed = static_cast<std::size_t>(match - open.rbegin());
  counts.nesting_repairs += unclosed;
  for (std::size_t i = 0; i <= unclosed; ++i) {
    out.push_back({ticks, open.back(), 0, HOTSCOPE_RECORD_END, 0});
    open.pop_back();
  }
}

void BatchValidator::State::append_heap_event(std::size_t index, std::uint64_t ticks) {
  const hotscope_record& record = batch[index];
  const std::uint64_t lead = heap_lead_slots(record.kind);
  GuestHeapEvent event;
  event.kind = record.kind;
  event.ticks = ticks;
  event.address = record.ref;
  event.old_address = lead != 0 ? payload_slot(&record, 0) : 0;
  event.size = record.kind == HOTSCOPE_RECORD_HEAP_FREE ? 0 : record.value;
  heap_stack_start.push_back(heap_frames.size());
  for (std::uint64_t slot = lead; slot < record.payload_records * kFramesPerRecord; ++slot) {
    const std::uint64_t address = payload_slot(&record, slot);
    if (address == 0) {
      break; // check_heap(): the rest are empty too
    }
    heap_frames.push_back(address);
  }
  heap_events.push_back(event);
}

// A guest stack trace as one inline message per frame: "#0 parse+0x1a" or "#1 0x401a2c".
void BatchValidator::State::append_stack(std::size_t index, std::uint64_t ticks) {
  const hotscope_record& record = batch[index];
  for (std::uint64_t frame = 0; frame < record.value; ++frame) {
    std::uint64_t address = 0;
    std::memcpy(&address,
                reinterpret_cast<const char*>(batch.data() + index + 1) + frame * sizeof(address),
                sizeof(address));
    std::optional<Symbol> symbol;
    if (symbolizer) {
      symbol = symbolizer(address);
    }
    // Symbol names come from the guest's ELF: shown only when printable, and cut to fit.
    const std::string text =
        symbol && !symbol->name.empty() && !unprintable(symbol->name)
            ? text::cat("#", frame, " ", cut_utf8(symbol->name, HOTSCOPE_INLINE_TEXT_MAX - 24),
                        "+0x", text::hex(symbol->offset))
            : text::cat("#", frame, " 0x", text::hex(address));
    append_text(out, HOTSCOPE_RECORD_MESSAGE_INLINE, ticks, text);
  }
}

} // namespace hotscope::guest
