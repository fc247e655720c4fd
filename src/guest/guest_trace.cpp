// A guest's track in the process's trace: validated batches go to the collector as an external
// track; rejected ones only count, as the track's dropped records.
#include "clock/clock.hpp"
#include "guest/guest.hpp"
#include "runtime/runtime.hpp"
#include "trace/trace.hpp"

namespace hotscope::guest {
namespace {

std::uint32_t new_track(std::string name) {
  runtime::ensure_started();
  return trace::add_external_track(std::move(name));
}

} // namespace

GuestTrace::GuestTrace(std::string track_name, const GuestMemory& memory, ClockAnchor clock,
                       Symbolizer symbolizer)
    : validator_(track_name, memory, clock, std::move(symbolizer)),
      track_(new_track(std::move(track_name))) {}

GuestTrace::~GuestTrace() {
  finish();
  trace::close_external_track(track_);
}

std::optional<Diagnostic> GuestTrace::flush(std::uint64_t address, std::uint64_t count,
                                            std::uint64_t capacity) {
  BatchValidator::Result result = validator_.validate(address, count, capacity);
  heap_events_ = result.heap;
  if (result.rejected) {
    last_rejection_ = result.rejected->to_string();
  } else {
    trace::consume_external(track_, result.records);
  }
  report_batches();
  return result.rejected;
}

void GuestTrace::host_span(std::uint64_t location, std::uint64_t begin, std::uint64_t end) {
  const std::span<const hotscope_record> records = validator_.host_span(location, begin, end);
  if (!records.empty()) {
    trace::consume_external(track_, records);
  }
}

void GuestTrace::finish() {
  const std::span<const hotscope_record> ends = validator_.close_open_scopes(clock::now_ticks());
  if (!ends.empty()) {
    trace::consume_external(track_, ends);
    report_batches();
  }
}

void GuestTrace::report_batches() {
  const GuestCounts& counts = validator_.counts();
  trace::set_external_batches(track_,
                              {counts.batches_accepted, counts.batches_rejected,
                               counts.records_rejected, counts.nesting_repairs, last_rejection_});
}

const GuestCounts& GuestTrace::counts() const {
  return validator_.counts();
}

} // namespace hotscope::guest
