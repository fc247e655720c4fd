// The Aggregator's side of queues: records to the QueueTable, and push/pop events to the trace.
#include "text/text.hpp"
#include "trace/trace.hpp"

namespace hotscope::trace {

void Aggregator::queue_record(std::uint32_t thread, const RecordKind& row,
                              const hotscope_record& record) {
  const std::uint32_t location = intern_location(record.ref);
  const std::uint32_t queue = queues_.queue(location, names_[location].name);
  const auto item = static_cast<std::int64_t>(record.value);
  switch (record.kind) {
  case HOTSCOPE_RECORD_QUEUE_PUSH:
    queues_.push(queue, thread, record.value, record.ticks);
    push_event({record.ticks, thread, *row.event, location, item});
    break;
  case HOTSCOPE_RECORD_QUEUE_POP:
    queues_.pop(queue, thread, record.value, record.ticks);
    push_event({record.ticks, thread, *row.event, location, item});
    break;
  default:
    queues_.set_capacity(queue, record.value);
    break;
  }
}

void Aggregator::finish_pass() {
  queues_.finish_pass();
  tasks_.finish_pass();
  locks_.finish_pass();
  forget_threads_out_of_window();
}

// "" for a thread whose entry is gone (folded away).
std::string Aggregator::thread_label(std::uint32_t thread) const {
  const auto found = threads_.find(thread);
  if (found == threads_.end()) {
    return "";
  }
  return found->second.name.empty() ? text::cat("thread ", found->second.os_tid)
                                    : found->second.name;
}

} // namespace hotscope::trace
