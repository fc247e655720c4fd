#include "trace/slow_calls.hpp"

#include "text/text.hpp"

#include <algorithm>
#include <optional>

namespace hotscope::trace {
std::size_t SlowStorage::bytes() const {
  std::size_t total = sizeof(SlowStorage) + events.capacity() * sizeof(WindowEvent);
  for (const std::string& text : texts) {
    total += sizeof(std::string) + text.capacity();
  }
  return total;
}

std::size_t SlowThread::buffered_bytes() const {
  std::size_t total = events_.capacity() * sizeof(WindowEvent) + open_.capacity() * sizeof(Open) +
                      kept_inside_.capacity() * sizeof(KeptInside);
  for (const auto& [position, text] : texts_) {
    total += sizeof(std::pair<std::size_t, std::string>) + text.capacity();
  }
  return total;
}

void SlowThread::append(const WindowEvent& event, const std::string* text) {
  put(event.ticks, event.thread, event.kind, event.name, event.value);
  if (text != nullptr) { // the event's value indexes texts_ until the call is kept
    events_.back().value = static_cast<std::int64_t>(texts_.size());
    texts_.emplace_back(events_.size() - 1, *text);
  }
}

void SlowCalls::end_call(SlowThread& thread, std::uint64_t ticks, const SlowThreadFigures& figures,
                         bool enters) {
  const bool buffered = !thread.pending_;
  std::optional<SlowThread::KeptInside> kept;
  const SlowThread::Open call = thread.open_.back();
  thread.open_.pop_back();
  if (enters) {
    kept = keep(thread, call, buffered, ticks, figures);
  }
  if (thread.open_.empty()) {
    if (buffered) {
      thread.clear();
    } else { // an outermost call with nothing inside it: nothing else was touched
      thread.pending_ = false;
      thread.seen_ = 0;
    }
    return;
  }
  // The calls kept inside this one, and this one, may be inside the outer one's kept events too.
  const std::size_t depth = thread.open_.size();
  for (auto it = thread.kept_inside_.rbegin();
       it != thread.kept_inside_.rend() && it->depth == depth; ++it) {
    it->depth = depth - 1;
  }
  if (kept) {
    thread.kept_inside_.push_back(*kept);
  }
  thread.truncate(thread.open_.back().offset + thread.cap_ - 1);
}

std::optional<SlowThread::KeptInside> SlowCalls::keep(SlowThread& thread,
                                                      const SlowThread::Open& call, bool buffered,
                                                      std::uint64_t ticks,
                                                      const SlowThreadFigures& figures) {
  const std::uint64_t seen = thread.seen_ - call.seen; // from its Begin to its End
  const std::size_t kept = std::min<std::uint64_t>(seen, thread.cap_);
  auto storage = std::make_shared<SlowStorage>();
  if (buffered) {
    const WindowEvent* first = thread.events_.begin() + call.offset;
    storage->events.reserve(kept);
    storage->events.assign(first, first + static_cast<long>(kept - 1));
  } else { // nothing happened inside it
    storage->events.push_back(
        {call.start_ticks, figures.index, EventKind::Begin, call.location, 0});
  }
  for (WindowEvent& event : storage->events) {
    if (event.name == kInlineText) {
      storage->texts.push_back(thread.texts_[static_cast<std::size_t>(event.value)].second);
      event.value = static_cast<std::int64_t>(storage->texts.size() - 1);
    }
  }
  storage->events.push_back({ticks, figures.index, EventKind::End, call.location, 0});
  KeptCall kept_call;
  kept_call.id = next_id_++;
  kept_call.location = call.location;
  kept_call.thread = figures.index;
  kept_call.thread_name = figures.name == nullptr || figures.name->empty()
                              ? text::cat("thread ", figures.os_tid)
                              : *figures.name;
  kept_call.os_tid = figures.os_tid;
  kept_call.start_ticks = call.start_ticks;
  kept_call.duration_ticks = ticks > call.start_ticks ? ticks - call.start_ticks : 0;
  kept_call.allocated = {figures.allocated->bytes - call.allocated_bytes,
                         figures.allocated->blocks - call.allocated_blocks};
  kept_call.cpu_periods = *figures.cpu_periods - call.cpu_periods;
  kept_call.cut_events = seen - kept;
  // The cut begins after the last event kept before the End.
  kept_call.cut_at_ticks = seen > kept ? storage->events[kept - 2].ticks : 0;
  kept_call.storage = std::move(storage);
  kept_call.count = static_cast<std::uint32_t>(kept);
  share_storage(thread, call, kept_call);
  // A whole call whose End is in the buffer can share an outer kept call's storage.
  std::optional<SlowThread::KeptInside> inside;
  if (buffered && seen < thread.cap_ && !thread.open_.empty()) {
    inside = SlowThread::KeptInside{thread.open_.size() - 1, call.location, kept_call.id,
                                    call.offset, static_cast<std::size_t>(seen)};
  }
  if (call.location >= functions_.size()) {
    functions_.resize(call.location + 1);
    least_to_enter_.resize(call.location + 1, 0);
  }
  insert(functions_[call.location], std::move(kept_call));
  evict_over_budget();
  return inside;
}

// The calls kept inside `call` (at the depth it had) whose events all lie in its kept events
// point into its storage.
void SlowCalls::share_storage(const SlowThread& thread, const SlowThread::Open& call,
                              const KeptCall& kept) {
  const std::size_t depth = thread.open_.size();
  const std::size_t end = call.offset + kept.count - 1; // past its last buffered event
  for (auto it = thread.kept_inside_.rbegin();
       it != thread.kept_inside_.rend() && it->depth == depth; ++it) {
    if (it->offset < call.offset || it->offset + it->count > end) {
      continue;
    }
    for (KeptCall& inner : functions_[it->location].calls) {
      if (inner.id == it->id) {
        release(inner);
        inner.storage = kept.storage;
        inner.first = static_cast<std::uint32_t>(it->offset - call.offset);
        hold(inner);
      }
    }
  }
}

void SlowCalls::insert(Function& function, KeptCall call) {
  const std::uint32_t location = call.location;
  rank(location, false);
  hold(call);
  ++kept_;
  auto& calls = function.calls;
  const auto at = std::upper_bound(
      calls.begin(), calls.end(), call.duration_ticks,
      [](std::uint64_t duration, const KeptCall& kept) { return duration > kept.duration_ticks; });
  calls.insert(at, std::move(call));
  if (calls.size() > settings_.per_function) {
    release(calls.back());
    calls.pop_back();
    --kept_;
  }
  rank(location, true);
}

void SlowCalls::hold(const KeptCall& call) {
  if (holders_[call.storage.get()]++ == 0) {
    bytes_ += call.storage->bytes();
  }
  bytes_ += sizeof(KeptCall) + call.thread_name.capacity();
}

void SlowCalls::release(const KeptCall& call) {
  bytes_ -= sizeof(KeptCall) + call.thread_name.capacity();
  const auto found = holders_.find(call.storage.get());
  if (--found->second == 0) {
    bytes_ -= call.storage->bytes();
    holders_.erase(found);
  }
}

// A function's place among those to evict from, and the least duration that enters its list.
void SlowCalls::rank(std::uint32_t location, bool add) {
  const Function& function = functions_[location];
  if (function.calls.empty()) {
    least_to_enter_[location] = function.floor;
    return;
  }
  const std::tuple key{function.calls.size(), UINT64_MAX - function.calls.back().duration_ticks,
                       location};
  if (!add) {
    by_count_.erase(key);
    return;
  }
  by_count_.insert(key);
  const bool full = function.calls.size() >= settings_.per_function;
  least_to_enter_[location] =
      std::max(function.floor, full ? function.calls.back().duration_ticks + 1 : 0);
}

// Over the budget, the least slow call of a function with the most kept goes first; that
// function then takes only calls slower than it (docs/slow.md, "Memory").
void SlowCalls::evict_over_budget() {
  while (bytes_ > settings_.budget_bytes && !by_count_.empty()) {
    const std::uint32_t location = std::get<2>(*by_count_.rbegin());
    Function& function = functions_[location];
    rank(location, false);
    release(function.calls.back());
    function.floor = std::max(function.floor, function.calls.back().duration_ticks + 1);
    function.calls.pop_back();
    --kept_;
    ++evicted_;
    rank(location, true);
  }
}

void SlowCalls::reset(std::vector<SlowThread*> threads) {
  functions_.clear();
  least_to_enter_.clear();
  holders_.clear();
  by_count_.clear();
  bytes_ = 0;
  kept_ = 0;
  evicted_ = 0;
  for (SlowThread* thread : threads) {
    thread->clear();
  }
}

std::vector<KeptCall> SlowCalls::kept() const {
  std::vector<KeptCall> calls;
  calls.reserve(kept_);
  for (const Function& function : functions_) {
    calls.insert(calls.end(), function.calls.begin(), function.calls.end());
  }
  return calls;
}

SlowCallFigures SlowCalls::figures() const {
  SlowCallFigures figures;
  figures.per_function = settings_.per_function;
  figures.budget_bytes = settings_.budget_bytes;
  figures.kept = kept_;
  figures.evicted = evicted_;
  for (const Function& function : functions_) {
    figures.cut += static_cast<std::uint64_t>(
        std::count_if(function.calls.begin(), function.calls.end(),
                      [](const KeptCall& call) { return call.cut_events != 0; }));
  }
  return figures;
}

} // namespace hotscope::trace
