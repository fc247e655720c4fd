// Every record kind of include/hotscope/record.h, once, with what a reader of records needs to
// know about it (docs/architecture.md, "Record kinds"). The aggregator and the guest validator
// read their rules here; their switches over kinds list every kind, so -Wswitch-enum names the
// code a new kind still needs.
#pragma once

#include "snapshot/snapshot.hpp"

#include <hotscope/record.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>

namespace hotscope::trace {

// What `ref` holds.
enum class RecordRef : std::uint8_t {
  None,       // unused
  Location,   // a hotscope_source_location
  StaticText, // a static NUL-terminated text
  Block,      // a guest heap block's address
  LockName,   // a hotscope_source_location naming a lock, or 0 (the lock is named by its address)
  Number,     // a number the reader never dereferences: a thread id, a lock's address
  Function,   // a function's entry address, named through its object's symbols
};

// The payload records that follow the record.
enum class RecordPayload : std::uint8_t {
  None,
  InlineText,  // value: text length, at most HOTSCOPE_INLINE_TEXT_MAX, 32 bytes per record
  StackFrames, // value: 1 to HOTSCOPE_STACK_FRAMES_MAX return addresses, 4 per record
  HeapStack,   // uint64 slots, 4 per record: up to HOTSCOPE_STACK_FRAMES_MAX return addresses
  HeapOldBlockAndStack, // the old block's address, then as HeapStack
};

// What the record does to the slices (scopes, a task's running spans) open on its thread.
enum class SliceEffect : std::uint8_t { None, Opens, Closes };

struct RecordKind {
  hotscope_record_kind kind;
  const char* name; // for diagnostics
  RecordRef ref;
  RecordPayload payload;
  SliceEffect slice;
  std::optional<EventKind> event; // the trace event the aggregator makes of it
  bool from_guest;                // a guest may send it (docs/guest.md, "Validation")
};

namespace record_kind_table {
using R = RecordRef;
using P = RecordPayload;
using S = SliceEffect;
using E = EventKind;
inline constexpr RecordKind kRows[] = {
    {HOTSCOPE_RECORD_BEGIN, "BEGIN", R::Location, P::None, S::Opens, E::Begin, true},
    {HOTSCOPE_RECORD_END, "END", R::Location, P::None, S::Closes, E::End, true},
    {HOTSCOPE_RECORD_MESSAGE_STATIC, "MESSAGE_STATIC", R::StaticText, P::None, S::None, E::Message,
     true},
    {HOTSCOPE_RECORD_MESSAGE_INLINE, "MESSAGE_INLINE", R::None, P::InlineText, S::None, E::Message,
     true},
    {HOTSCOPE_RECORD_COUNTER, "COUNTER", R::Location, P::None, S::None, E::Counter, true},
    {HOTSCOPE_RECORD_THREAD_NAME, "THREAD_NAME", R::None, P::InlineText, S::None, {}, true},
    {HOTSCOPE_RECORD_ALLOCATION, "ALLOCATION", R::None, P::None, S::None, {}, true},
    {HOTSCOPE_RECORD_STACK, "STACK", R::None, P::StackFrames, S::None, {}, true},
    {HOTSCOPE_RECORD_QUEUE_PUSH, "QUEUE_PUSH", R::Location, P::None, S::None, E::QueuePush, true},
    {HOTSCOPE_RECORD_QUEUE_POP, "QUEUE_POP", R::Location, P::None, S::None, E::QueuePop, true},
    {HOTSCOPE_RECORD_QUEUE_CAPACITY, "QUEUE_CAPACITY", R::Location, P::None, S::None, {}, true},
    {HOTSCOPE_RECORD_TASK_CREATE, "TASK_CREATE", R::Location, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_TASK_RESUME, "TASK_RESUME", R::Location, P::None, S::Opens, E::TaskResume,
     false},
    {HOTSCOPE_RECORD_TASK_SUSPEND, "TASK_SUSPEND", R::Location, P::None, S::Closes, E::TaskSuspend,
     false},
    {HOTSCOPE_RECORD_TASK_COMPLETE, "TASK_COMPLETE", R::Location, P::None, S::Closes,
     E::TaskComplete, false},
    {HOTSCOPE_RECORD_TASK_DESTROY, "TASK_DESTROY", R::Location, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_HEAP_ALLOC, "HEAP_ALLOC", R::Block, P::HeapStack, S::None, {}, true},
    {HOTSCOPE_RECORD_HEAP_FREE, "HEAP_FREE", R::Block, P::HeapStack, S::None, {}, true},
    {HOTSCOPE_RECORD_HEAP_REALLOC,
     "HEAP_REALLOC",
     R::Block,
     P::HeapOldBlockAndStack,
     S::None,
     {},
     true},
    {HOTSCOPE_RECORD_LOCK_WAIT, "LOCK_WAIT", R::LockName, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_LOCK_ACQUIRE, "LOCK_ACQUIRE", R::LockName, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED,
     "LOCK_ACQUIRE_SHARED",
     R::LockName,
     P::None,
     S::None,
     {},
     false},
    {HOTSCOPE_RECORD_LOCK_RELEASE, "LOCK_RELEASE", R::LockName, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_LOCK_TRY_FAIL, "LOCK_TRY_FAIL", R::LockName, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_LOCK_HOLDER, "LOCK_HOLDER", R::Number, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_LOCK_ORDER, "LOCK_ORDER", R::Number, P::None, S::None, {}, false},
    {HOTSCOPE_RECORD_FUNCTION_BEGIN, "FUNCTION_BEGIN", R::Function, P::None, S::Opens, E::Begin,
     false},
    {HOTSCOPE_RECORD_FUNCTION_END, "FUNCTION_END", R::Function, P::None, S::Closes, E::End, false},
};
} // namespace record_kind_table

// One row per kind, kind i in row i - 1.
inline constexpr const auto& kRecordKinds = record_kind_table::kRows;

// The row of a kind, or nullptr for a value record.h does not define.
constexpr const RecordKind* record_kind(std::uint32_t kind) {
  return kind >= 1 && kind <= std::size(kRecordKinds) ? &kRecordKinds[kind - 1] : nullptr;
}

namespace record_kind_table {
// Row i is kind i + 1, and a slice effect agrees with the event's (which the exporters follow).
constexpr bool consistent() {
  for (std::size_t i = 0; i < std::size(kRecordKinds); ++i) {
    const RecordKind& row = kRecordKinds[i];
    if (static_cast<std::size_t>(row.kind) != i + 1 || row.name == nullptr) {
      return false;
    }
    const bool opens = row.event && opens_slice(*row.event);
    const bool closes = row.event && closes_slice(*row.event);
    if (opens != (row.slice == SliceEffect::Opens) ||
        closes != (row.slice == SliceEffect::Closes)) {
      return false;
    }
  }
  return true;
}
} // namespace record_kind_table

static_assert(std::size(kRecordKinds) == HOTSCOPE_RECORD_KIND_LAST,
              "every kind of record.h needs a row in kRecordKinds");
static_assert(record_kind_table::consistent(),
              "kRecordKinds: one row per kind in the order of their values, slices as the events");

} // namespace hotscope::trace
