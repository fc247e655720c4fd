#include "trace/trace.hpp"

#include "text/text.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace hotscope::trace {
namespace {

std::string payload_text(std::span<const hotscope_record> payload, std::uint64_t length) {
  const std::size_t capacity = payload.size() * HOTSCOPE_PAYLOAD_BYTES_PER_RECORD;
  std::string text(std::min<std::uint64_t>(length, capacity), '\0');
  std::memcpy(text.data(), payload.data(), text.size());
  const auto nul = text.find('\0');
  if (nul != std::string::npos) {
    text.resize(nul);
  }
  return text;
}

} // namespace

void Aggregator::Stats::add(std::uint64_t duration, std::uint64_t self_ticks) {
  Durations::add(duration);
  self += self_ticks;
}

void Aggregator::Stats::merge(const Stats& other) {
  Durations::merge(other);
  self += other.self;
  allocated_self += other.allocated_self;
  allocated_total += other.allocated_total;
  cpu_self += other.cpu_self;
  cpu_total += other.cpu_total;
}

Aggregator::Aggregator(std::size_t window_bytes, Resolver resolver, const SlowCallSettings& slow,
                       FunctionFilter filter)
    : resolver_(std::move(resolver)), window_(window_bytes), slow_(slow),
      filter_(std::move(filter)) {}

void Aggregator::maybe_filter(std::uint32_t location, std::uint64_t entry) {
  if (filter_.min_ns == 0 || !filter_.apply) {
    return;
  }
  const Stats& figures = stats_[location];
  if (figures.calls < filter_.after_calls || filtered_locations_.count(location) != 0) {
    return;
  }
  if (filter_min_ticks_ == 0) {
    filter_min_ticks_ =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(filter_.min_ns) *
                                                              filter_.ticks_per_second() / 1e9));
  }
  if (figures.max >= filter_min_ticks_) {
    return;
  }
  if (filter_.apply(entry)) {
    filtered_locations_.insert(location);
    filtered_.emplace_back(location, entry);
  }
}

std::uint32_t Aggregator::add_thread(std::int64_t os_tid, std::string name) {
  const std::uint32_t index = next_thread_++;
  ThreadState& thread = threads_[index];
  thread.os_tid = os_tid;
  thread.name = std::move(name);
  return index;
}

std::uint32_t Aggregator::intern_location(std::uint64_t ref, bool function) {
  // Locations are 24-byte structs: the low bits of their addresses say little. A function's code
  // and a location's static data never share an address, so both share the cache.
  InternedRef& cached = intern_cache_[((ref >> 3) ^ (ref >> 13)) % kInternCacheSlots];
  if (cached.ref == ref && cached.id != UINT32_MAX) {
    return cached.id;
  }
  const auto found = name_ids_.find(ref);
  const auto resolve = [&] {
    if (!function) {
      return intern(ref, resolver_.location(ref), 'L');
    }
    return intern(ref,
                  resolver_.function ? resolver_.function(ref)
                                     : LocationText{"0x" + text::hex(ref), "", 0, 0},
                  'F');
  };
  const std::uint32_t id = found != name_ids_.end() ? found->second : resolve();
  cached = {ref, id};
  return id;
}

std::uint32_t Aggregator::intern_text(std::uint64_t ref) {
  const auto found = name_ids_.find(ref);
  return found != name_ids_.end() ? found->second
                                  : intern(ref, LocationText{resolver_.text(ref), "", 0}, 'T');
}

std::uint32_t Aggregator::intern(std::uint64_t ref, LocationText text, char kind) {
  std::string key(reinterpret_cast<const char*>(&ref), sizeof ref);
  key += kind;
  key.append(reinterpret_cast<const char*>(&text.line), sizeof text.line);
  key.append(reinterpret_cast<const char*>(&text.flags), sizeof text.flags);
  key += text.name;
  key += '\0';
  key += text.file;
  const auto [it, inserted] =
      ids_by_ref_and_text_.try_emplace(std::move(key), static_cast<std::uint32_t>(names_.size()));
  if (inserted) {
    names_.push_back(std::move(text));
  }
  name_ids_[ref] = it->second;
  return it->second;
}

void Aggregator::forget_addresses() {
  name_ids_.clear();
  intern_cache_.fill({});
}

void Aggregator::begin(ThreadState& thread, std::uint32_t location, std::uint64_t ticks,
                       std::uint64_t stack_address) {
  thread.stack.push_back(Frame{location, ticks, stack_address, 0, {}, {}});
}

std::uint64_t Aggregator::end(ThreadState& thread, std::uint32_t location, std::uint64_t ticks) {
  (void)location; // the producer guarantees nesting; the innermost open scope is the one
  if (thread.stack.empty()) {
    return 0;
  }
  const Frame frame = thread.stack.back();
  thread.stack.pop_back();
  const std::uint64_t duration = ticks > frame.start ? ticks - frame.start : 0;
  const std::uint64_t self = duration > frame.children ? duration - frame.children : 0;
  Stats& global = stats_[frame.location];
  Stats& local = thread.stats[frame.location];
  global.add(duration, self);
  local.add(duration, self);
  if (!thread.stack.empty()) {
    thread.stack.back().children += duration;
  }
  if (frame.allocated_inclusive.blocks == 0) {
    return duration;
  }
  // An inner call of a recursive function hands its figure up without counting it, so the
  // outermost call counts each allocation once.
  const bool outermost = std::none_of(thread.stack.begin(), thread.stack.end(),
                                      [&](const Frame& f) { return f.location == frame.location; });
  for (Stats* stats : {&global, &local}) {
    stats->allocated_self += frame.allocated_self;
    if (outermost) {
      stats->allocated_total += frame.allocated_inclusive;
    }
  }
  if (!thread.stack.empty()) {
    thread.stack.back().allocated_inclusive += frame.allocated_inclusive;
  }
  return duration;
}

// O(1) per allocation: the figures reach the statistics when frames end (or in a snapshot).
void Aggregator::allocate(ThreadState& thread, std::uint64_t bytes) {
  const AllocationCounts block{bytes, 1};
  thread.allocations.all += block;
  if (thread.stack.empty()) {
    thread.allocations.outside_scopes += block;
    return;
  }
  thread.stack.back().allocated_self += block;
  thread.stack.back().allocated_inclusive += block;
}

void Aggregator::cpu_sample(ThreadState* thread, const cpu::Sample& sample) {
  const std::span<const Frame> open =
      thread != nullptr ? std::span<const Frame>(thread->stack) : std::span<const Frame>();
  const std::uint64_t periods = sample.weight;
  // Innermost first. A scope sits just outside the native frames it encloses: in the frame whose
  // stack holds the address it opened at (below the next outer frame's stack pointer). Scopes
  // past the frames unwound, or whose address is unknown, go outermost.
  std::vector<std::uint64_t>& words = cpu_words_;
  words.clear();
  std::size_t unplaced = open.size(); // open[0, unplaced) are still to place
  const std::uint32_t frames = std::min(sample.frames, cpu::kMaxFrames);
  for (std::uint32_t i = 0; i < frames; ++i) {
    const bool outermost = i + 1 == frames;
    const std::uint64_t outer_sp = !outermost        ? sample.sps[i + 1]
                                   : sample.complete ? UINT64_MAX
                                                     : sample.sps[i];
    while (unplaced > 0 && open[unplaced - 1].stack_address != 0 &&
           open[unplaced - 1].stack_address < outer_sp) {
      words.push_back(CpuStacks::kScopeWord | open[--unplaced].location);
    }
    words.push_back(sample.pcs[i]);
  }
  while (unplaced > 0) {
    words.push_back(CpuStacks::kScopeWord | open[--unplaced].location);
  }
  cpu_stacks_.add(words, sample.tid, periods);
  if (thread == nullptr) {
    return;
  }
  thread->cpu_samples += periods;
  for (std::size_t i = 0; i < open.size(); ++i) {
    const std::uint32_t location = open[i].location;
    const bool innermost = i + 1 == open.size();
    // A recursive function's sample counts once in its total: at its outermost open call.
    const bool outermost_call =
        std::none_of(open.begin(), open.begin() + static_cast<long>(i),
                     [&](const Frame& f) { return f.location == location; });
    for (Stats* stats : {&stats_[location], &thread->stats[location]}) {
      stats->cpu_self += innermost ? periods : 0;
      stats->cpu_total += outermost_call ? periods : 0;
    }
  }
}

std::vector<Aggregator::OpenAllocation>
Aggregator::open_allocations(const std::vector<Frame>& stack) {
  std::vector<bool> outermost(stack.size());
  std::unordered_set<std::uint32_t> below;
  for (std::size_t i = 0; i < stack.size(); ++i) {
    outermost[i] = below.insert(stack[i].location).second;
  }
  // A frame's inclusive figure so far also holds what its open children allocated.
  std::vector<OpenAllocation> open;
  AllocationCounts inclusive;
  for (std::size_t i = stack.size(); i-- > 0;) {
    const Frame& frame = stack[i];
    inclusive += frame.allocated_inclusive;
    if (inclusive.blocks != 0) {
      open.push_back(
          {frame.location, frame.allocated_self, outermost[i] ? inclusive : AllocationCounts{}});
    }
  }
  return open;
}

void Aggregator::forget_open_allocations(std::vector<Frame>& stack) {
  for (Frame& frame : stack) {
    frame.allocated_self = {};
    frame.allocated_inclusive = {};
  }
}

void Aggregator::consume(std::uint32_t thread_index, std::span<const hotscope_record> records,
                         std::uint64_t first_position,
                         std::span<const cpu::Sample* const> samples) {
  ThreadState& thread = threads_[thread_index];
  consuming_ = thread_index;
  consuming_slow_ = &thread.slow;
  std::size_t next_sample = 0;
  const auto samples_up_to = [&](std::uint64_t position) {
    while (next_sample < samples.size() && samples[next_sample]->ring_head <= position) {
      cpu_sample(&thread, *samples[next_sample++]);
    }
  };
  for (std::size_t i = 0; i < records.size();) {
    samples_up_to(first_position + i);
    const hotscope_record& record = records[i];
    const std::size_t payload =
        std::min<std::size_t>(record.payload_records, records.size() - i - 1);
    thread.records.kept += 1 + payload;
    if (record.kind != HOTSCOPE_RECORD_ALLOCATION) { // which carries no timestamp
      thread.last_ticks = record.ticks;
    }
    // Unknown kinds are skipped; guests' batches are validated before they get here.
    if (const RecordKind* row = record_kind(record.kind)) {
      consume_record(thread_index, thread, *row, record, records.subspan(i + 1, payload));
    }
    i += 1 + payload;
  }
  samples_up_to(UINT64_MAX);
  consuming_ = UINT32_MAX;
  consuming_slow_ = nullptr;
}

void Aggregator::consume_record(std::uint32_t thread_index, ThreadState& thread,
                                const RecordKind& row, const hotscope_record& record,
                                std::span<const hotscope_record> payload) {
  const auto event = [&](std::uint32_t name, std::int64_t value) {
    push_event({record.ticks, thread_index, *row.event, name, value});
  };
  switch (row.kind) {
  case HOTSCOPE_RECORD_BEGIN:
  case HOTSCOPE_RECORD_FUNCTION_BEGIN: {
    const std::uint32_t location =
        intern_location(record.ref, record.kind == HOTSCOPE_RECORD_FUNCTION_BEGIN);
    begin(thread, location, record.ticks, record.value);
    window_.push({record.ticks, thread_index, *row.event, location, 0});
    slow_.begin(thread.slow, location, record.ticks, slow_figures(thread_index, thread));
    break;
  }
  case HOTSCOPE_RECORD_END:
  case HOTSCOPE_RECORD_FUNCTION_END: {
    const std::uint32_t location =
        intern_location(record.ref, record.kind == HOTSCOPE_RECORD_FUNCTION_END);
    end(thread, location, record.ticks);
    if (record.kind == HOTSCOPE_RECORD_FUNCTION_END) {
      maybe_filter(location, record.ref);
    }
    window_.push({record.ticks, thread_index, *row.event, location, 0});
    slow_.end(thread.slow, record.ticks, slow_figures(thread_index, thread));
    break;
  }
  case HOTSCOPE_RECORD_MESSAGE_STATIC:
    event(intern_text(record.ref), 0);
    break;
  case HOTSCOPE_RECORD_MESSAGE_INLINE: {
    std::string text = payload_text(payload, record.value);
    const WindowEvent message{record.ticks, thread_index, *row.event, kInlineText, 0};
    if (thread.slow.buffering()) {
      thread.slow.event(message, &text);
    }
    window_.push_text(message, std::move(text));
    break;
  }
  case HOTSCOPE_RECORD_COUNTER: {
    const std::uint32_t location = intern_location(record.ref);
    const auto value = static_cast<std::int64_t>(record.value);
    Counter& counter = counters_[location];
    ++counter.updates;
    // Threads are drained one after the other: the latest value is the latest by time, not
    // the one drained last.
    if (record.ticks >= counter.last_ticks) {
      counter.last = value;
      counter.last_ticks = record.ticks;
    }
    counter.min = std::min(counter.min, value);
    counter.max = std::max(counter.max, value);
    event(location, value);
    break;
  }
  case HOTSCOPE_RECORD_THREAD_NAME:
    thread.name = payload_text(payload, record.value);
    break;
  case HOTSCOPE_RECORD_ALLOCATION:
    allocate(thread, record.value);
    break;
  case HOTSCOPE_RECORD_STACK: // a lock record's (a guest's become inline messages in its validator)
    lock_record(thread_index, thread, record, payload);
    break;
  case HOTSCOPE_RECORD_QUEUE_PUSH:
  case HOTSCOPE_RECORD_QUEUE_POP:
  case HOTSCOPE_RECORD_QUEUE_CAPACITY:
    queue_record(thread_index, row, record);
    break;
  case HOTSCOPE_RECORD_TASK_CREATE:
  case HOTSCOPE_RECORD_TASK_RESUME:
  case HOTSCOPE_RECORD_TASK_SUSPEND:
  case HOTSCOPE_RECORD_TASK_COMPLETE:
  case HOTSCOPE_RECORD_TASK_DESTROY:
    task_record(thread_index, thread, row, record);
    break;
  case HOTSCOPE_RECORD_HEAP_ALLOC:
  case HOTSCOPE_RECORD_HEAP_FREE:
  case HOTSCOPE_RECORD_HEAP_REALLOC:
    break; // a guest's: its validator hands them to the guest's heap, not to the trace
  case HOTSCOPE_RECORD_LOCK_WAIT:
  case HOTSCOPE_RECORD_LOCK_ACQUIRE:
  case HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED:
  case HOTSCOPE_RECORD_LOCK_RELEASE:
  case HOTSCOPE_RECORD_LOCK_TRY_FAIL:
  case HOTSCOPE_RECORD_LOCK_HOLDER:
  case HOTSCOPE_RECORD_LOCK_ORDER:
    lock_record(thread_index, thread, record, payload);
    break;
  }
}

void Aggregator::set_dropped(std::uint32_t thread, std::uint64_t dropped) {
  ThreadState& state = threads_[thread];
  state.records.dropped = dropped - state.dropped_before_reset;
}

void Aggregator::set_batches(std::uint32_t thread, const BatchCounts& batches) {
  set_dropped(thread, batches.records_rejected);
  threads_[thread].batches = batches;
}

void Aggregator::mark_exited(std::uint32_t thread, const OsThreadFigures& at_exit) {
  ThreadState& state = threads_[thread];
  if (state.exited) {
    return;
  }
  state.exited = true;
  state.at_exit = at_exit;
  state.slow = {}; // its open calls never end
  locks_.thread_exited(thread);
  exited_kept_.push_back(thread);
  if (exited_kept_.size() > kExitedThreadsKept) {
    const std::uint32_t oldest = exited_kept_.front();
    exited_kept_.pop_front();
    fold_thread(threads_[oldest]);
    folded_in_window_.push_back(oldest);
  }
  forget_threads_out_of_window();
}

// Bounds memory under thread churn: the statistics of all but the newest exited threads are
// merged into one entry (docs/architecture.md, "The Aggregator").
void Aggregator::fold_thread(ThreadState& thread) {
  for (const auto& [location, stats] : thread.stats) {
    folded_thread_stats_[location].merge(stats);
  }
  thread.stats = {}; // its buckets too
  // Scopes it left open keep their allocations: a snapshot reads them from unfolded threads
  // only, so they move into the statistics now.
  for (const OpenAllocation& open : open_allocations(thread.stack)) {
    for (Stats* stats : {&stats_[open.location], &folded_thread_stats_[open.location]}) {
      stats->allocated_self += open.self;
      stats->allocated_total += open.total;
    }
  }
  forget_open_allocations(thread.stack);
  folded_records_.kept += thread.records.kept;
  folded_records_.dropped += thread.records.dropped;
  thread.records = {};
  folded_allocations_ += thread.allocations;
  folded_cpu_samples_ += thread.cpu_samples;
  thread.cpu_samples = 0;
  folded_os_.state.assign(1, 'X'); // ended, as each of them (`= "X"` trips GCC 12's -Wrestrict)
  folded_os_.cpu_user_ns += thread.at_exit.cpu_user_ns;
  folded_os_.cpu_system_ns += thread.at_exit.cpu_system_ns;
  folded_os_.voluntary_switches += thread.at_exit.voluntary_switches;
  folded_os_.involuntary_switches += thread.at_exit.involuntary_switches;
  thread.allocations = {};
  thread.stats_folded = true;
  ++threads_folded_;
}

// A folded thread's identity goes once no trace event refers to it. Threads end roughly in the
// order of their last events, so looking at the oldest few is enough: one that lingers behind
// an older one goes with it, a pass or a window's turn later.
void Aggregator::forget_threads_out_of_window() {
  const std::uint64_t oldest_event = window_.oldest_ticks();
  while (!folded_in_window_.empty()) {
    const auto found = threads_.find(folded_in_window_.front());
    if (found != threads_.end() && found->second.last_ticks >= oldest_event) {
      break;
    }
    if (found != threads_.end()) {
      threads_.erase(found);
    }
    folded_in_window_.pop_front();
  }
}

// An estimate: the containers' elements and what they point to, not the allocator's overhead.
std::size_t Aggregator::statistics_bytes() const {
  const auto table_bytes = [](const std::unordered_map<std::uint32_t, Stats>& table) {
    std::size_t bytes = table.bucket_count() * sizeof(void*);
    for (const auto& [location, stats] : table) {
      bytes += sizeof(std::pair<const std::uint32_t, Stats>) + sizeof(void*) +
               stats.histogram.allocated_bytes();
    }
    return bytes;
  };
  std::size_t bytes = table_bytes(stats_) + table_bytes(folded_thread_stats_) +
                      name_ids_.size() * (sizeof(std::pair<std::uint64_t, std::uint32_t>) + 16) +
                      ids_by_ref_and_text_.size() * (sizeof(std::string) + 40) +
                      sizeof(intern_cache_) + counters_.size() * (sizeof(Counter) + 16) +
                      tasks_.bytes() + cpu_stacks_.bytes() + locks_.bytes();
  for (const LocationText& name : names_) {
    // Twice: the key of ids_by_ref_and_text_ holds the texts too.
    bytes += sizeof(LocationText) + 2 * (name.name.capacity() + name.file.capacity());
  }
  for (const auto& [index, thread] : threads_) {
    bytes += sizeof(ThreadState) + thread.name.capacity() +
             thread.stack.capacity() * sizeof(Frame) + table_bytes(thread.stats) +
             thread.slow.buffered_bytes();
  }
  return bytes;
}

void Aggregator::reset() {
  stats_.clear();
  counters_.clear();
  queues_.reset();
  locks_.reset();
  tasks_.reset();
  folded_thread_stats_.clear();
  folded_records_ = {};
  folded_allocations_ = {};
  folded_os_ = {};
  folded_cpu_samples_ = 0;
  cpu_stacks_.reset();
  cpu_at_reset_ = cpu_now_;
  threads_folded_ = 0;
  window_.clear();
  std::erase_if(threads_, [](const auto& entry) { return entry.second.exited; });
  exited_kept_.clear();
  folded_in_window_.clear();
  std::vector<SlowThread*> slow_threads;
  for (auto& [index, thread] : threads_) {
    slow_threads.push_back(&thread.slow);
  }
  slow_.reset(std::move(slow_threads));
  for (auto& [index, thread] : threads_) {
    thread.stats.clear();
    thread.dropped_before_reset += thread.records.dropped;
    thread.records = {};
    // Unlike their time, open scopes' allocations restart: the window counts what it saw.
    thread.allocations = {};
    thread.cpu_samples = 0;
    forget_open_allocations(thread.stack);
  }
}

} // namespace hotscope::trace
