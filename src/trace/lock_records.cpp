// The Aggregator's side of locks: lock records to the LockTable, with the scopes open on the
// thread, and the trace events of the waits and handoffs (docs/locks.md).
#include "text/text.hpp"
#include "trace/trace.hpp"

#include <algorithm>
#include <cstring>

namespace hotscope::trace {
namespace {

const char* lock_kind_name(std::uint32_t flags) {
  switch ((flags & HOTSCOPE_LOCATION_LOCK_KIND_MASK) >> HOTSCOPE_LOCATION_LOCK_KIND_SHIFT) {
  case HOTSCOPE_LOCK_RECURSIVE:
    return "recursive_mutex";
  case HOTSCOPE_LOCK_SHARED:
    return "shared_mutex";
  case HOTSCOPE_LOCK_TIMED:
    return "timed_mutex";
  case HOTSCOPE_LOCK_RECURSIVE_TIMED:
    return "recursive_timed_mutex";
  case HOTSCOPE_LOCK_SHARED_TIMED:
    return "shared_timed_mutex";
  default:
    return "mutex";
  }
}

} // namespace

LockTable::Lock Aggregator::lock_of(const hotscope_record& record) {
  if (record.ref == HOTSCOPE_LOCK_REF_PTHREAD_MUTEX ||
      record.ref == HOTSCOPE_LOCK_REF_PTHREAD_RWLOCK) {
    const char* kind =
        record.ref == HOTSCOPE_LOCK_REF_PTHREAD_MUTEX ? "pthread_mutex" : "pthread_rwlock";
    auto [found, inserted] = lock_names_.try_emplace(record.value, 0);
    if (inserted) {
      found->second =
          intern(record.value, LocationText{address_lock_name(kind, record.value), "", 0, 0}, 'K');
    }
    return {found->second, names_[found->second].name, kind, false, record.value};
  }
  const std::uint32_t location = intern_location(record.ref);
  const LocationText& where = names_[location];
  return {location, where.name, lock_kind_name(where.flags), true, record.value};
}

void Aggregator::lock_record(std::uint32_t thread_index, ThreadState& thread,
                             const hotscope_record& record,
                             std::span<const hotscope_record> payload) {
  lock_scopes_.clear();
  for (const Frame& frame : thread.stack) {
    lock_scopes_.push_back(frame.location);
  }
  const LockTable::At at{thread_index, thread.os_tid, record.ticks, lock_scopes_};
  switch (record.kind) {
  case HOTSCOPE_RECORD_LOCK_HOLDER:
    locks_.holder(at, record.value, static_cast<std::int64_t>(record.ref));
    return;
  case HOTSCOPE_RECORD_LOCK_ORDER:
    locks_.order(at, record.ref, record.value);
    return;
  case HOTSCOPE_RECORD_STACK: {
    std::vector<std::uint64_t> frames(std::min<std::uint64_t>(record.value, payload.size() * 4));
    std::memcpy(frames.data(), payload.data(), frames.size() * sizeof(std::uint64_t));
    locks_.stack(thread_index, frames);
    return;
  }
  default:
    break;
  }
  const LockTable::Lock lock = lock_of(record);
  switch (record.kind) {
  case HOTSCOPE_RECORD_LOCK_WAIT:
    locks_.wait(at, lock);
    break;
  case HOTSCOPE_RECORD_LOCK_ACQUIRE:
  case HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED:
    wait_ended(thread_index, record, lock.name,
               locks_.acquire(at, lock, record.kind == HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED));
    break;
  case HOTSCOPE_RECORD_LOCK_RELEASE:
    if (const std::optional<LockTable::Handoff> handoff = locks_.release(at, lock)) {
      push_event(
          {handoff->ticks, handoff->thread, EventKind::LockHandoff, handoff->name, handoff->flow});
    }
    break;
  default: // HOTSCOPE_RECORD_LOCK_TRY_FAIL
    wait_ended(thread_index, record, lock.name, locks_.try_failed(at, lock));
    break;
  }
}

void Aggregator::wait_ended(std::uint32_t thread_index, const hotscope_record& record,
                            std::uint32_t lock_name, const LockTable::WaitEnd& end) {
  if (!end.ended) {
    return;
  }
  const std::uint64_t waited = record.ticks > end.since ? record.ticks - end.since : 0;
  push_event({record.ticks, thread_index, EventKind::LockWait, lock_name,
              static_cast<std::int64_t>(waited)});
  if (end.flow > 0) {
    push_event({record.ticks, thread_index, EventKind::LockAcquired, lock_name, end.flow});
  }
  if (end.handoff) {
    push_event({end.handoff->ticks, end.handoff->thread, EventKind::LockHandoff, end.handoff->name,
                end.handoff->flow});
  }
}

} // namespace hotscope::trace
