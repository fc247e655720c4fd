// The Aggregator's side of tasks: a task's running slice is a frame on the thread that runs it,
// like a scope, and its duration goes to the TaskTable with the task's other records.
#include "trace/trace.hpp"

namespace hotscope::trace {

void Aggregator::task_record(std::uint32_t thread_index, ThreadState& thread, const RecordKind& row,
                             const hotscope_record& record) {
  const std::uint32_t location = intern_location(record.ref);
  const LocationText& where = names_[location];
  const std::uint32_t task =
      tasks_.task(location, where.name, (where.flags & HOTSCOPE_LOCATION_ASIO_OPERATION) != 0);
  const std::uint64_t id = record.value;
  const auto event = [&] {
    push_event({record.ticks, thread_index, *row.event, location, static_cast<std::int64_t>(id)});
  };
  switch (record.kind) {
  case HOTSCOPE_RECORD_TASK_CREATE:
    tasks_.create(task, id, record.ticks);
    break;
  case HOTSCOPE_RECORD_TASK_RESUME:
    tasks_.resume(task);
    begin(thread, location, record.ticks, 0); // a task's slice: where it runs is not known
    event();
    break;
  case HOTSCOPE_RECORD_TASK_SUSPEND:
    tasks_.ran(task, id, end(thread, location, record.ticks));
    event();
    break;
  case HOTSCOPE_RECORD_TASK_COMPLETE:
    tasks_.ran(task, id, end(thread, location, record.ticks));
    tasks_.end(task, id, record.ticks, true);
    event();
    break;
  default: // HOTSCOPE_RECORD_TASK_DESTROY: destroyed while suspended, no slice open
    tasks_.end(task, id, record.ticks, false);
    break;
  }
}

} // namespace hotscope::trace
