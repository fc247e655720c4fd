#include "heap/recorder/recorder.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace hotscope::heap {

Recorder::Recorder(config::HeapOptions options, SampledAddresses& addresses, CodeRanges skip)
    : options_(std::move(options)), sampled_addresses_(addresses), skip_(std::move(skip)),
      // The sampled mode reads the time at samples only.
      clock_(!sampling()) {
  if (sampling()) {
    sampled_ = SampledEngine(static_cast<double>(options_.sample_bytes));
  }
  if (options_.attached) {
    engine_.count_unknown_as_before_attach();
  }
}

std::uint64_t Recorder::time_of(std::uint64_t ticks) {
  const std::uint64_t start = clock_.start_ticks();
  const std::uint64_t time = ticks > start ? ticks - start : 0;
  latest_time_ = std::max(latest_time_, time);
  return latest_time_;
}

Recorder::Captured Recorder::capture() const {
  Captured captured;
  // A sampled profile's stacks come one in hundreds of thousands of bytes allocated, and rarely
  // repeat at the same depth: walked each time (by the frames' rules, prepare_capture), without
  // the stack cache, whose pages each first stack would touch.
  const Unwinder unwinder = sampling() && options_.unwinder == Unwinder::Libunwind
                                ? Unwinder::LibunwindUncached
                                : options_.unwinder;
  captured.depth = capture_stack(unwinder, skip_, {captured.frames.data(), options_.depth},
                                 &captured.remembered);
  return captured;
}

StackId Recorder::current_stack() {
  const Captured captured = capture();
  if (captured.remembered.known()) {
    return captured.remembered.id();
  }
  // Never unwind while holding the mutex: the unwinder takes the loader's lock, and a thread
  // holding that lock may be waiting in malloc for this mutex.
  const std::lock_guard lock(mutex_);
  const StackId id =
      sampling() ? sampled_.intern(captured.stack()) : engine_.intern(captured.stack());
  if (captured.remembered.cached()) {
    RememberedStack::remember(*captured.remembered.slot(), captured.remembered.generation(), id);
  }
  return id;
}

void Recorder::append_with_stack(EventLog::Ring& ring, HeapEvent::Kind kind, std::uintptr_t address,
                                 std::uint64_t size) {
  const Captured captured = capture();
  const RememberedStack& remembered = captured.remembered;
  if (remembered.known()) {
    append(ring, kind, address, size, remembered.id());
    return;
  }
  // The words: the cache's slot (0 when not cached), then the frames; the event's stack, the
  // slot's generation (drain()).
  append_words(ring, kind, address, size, remembered.generation(), captured.depth + 1, [&] {
    std::uintptr_t* words = events_.words_of(ring);
    words[0] = reinterpret_cast<std::uintptr_t>(remembered.slot());
    std::copy(captured.frames.begin(), captured.frames.begin() + captured.depth, words + 1);
  });
}

void Recorder::make_room(std::uint64_t& waiting_since_ns) {
  const std::uint64_t now_ns = clock::monotonic_ns();
  if (waiting_since_ns == 0) {
    waiting_since_ns = now_ns;
  }
  const std::uint64_t waited_ns = now_ns - waiting_since_ns;
  if (collector_running_.load(std::memory_order_relaxed) && waited_ns < collector_grace_ns) {
    collector_doorbell_.ring(); // a system call only when it has looked since the last ring
  } else if (mutex_.try_lock()) {
    drain(waited_ns >= event_wait_ns ? event_wait_ns : 0);
    mutex_.unlock();
    return;
  }
  // Another thread drains, this ring among others: it frees a slot every few hundred
  // nanoseconds. A short sleep lets it free hundreds, where yielding took a system call per
  // event and kept both threads' caches busy with the same lines.
  const timespec pause{0, 20'000};
  nanosleep(&pause, nullptr);
}

void Recorder::sampled_alloc(std::uintptr_t address, std::size_t size, StackId stack) {
  const std::lock_guard lock(mutex_);
  sampled_.alloc(address, size, stack, now());
  sampled_addresses_.add(address);
  publish_figures();
}

void Recorder::forget_sampled(std::uintptr_t address) {
  if (sampled_.free(address, now())) {
    sampled_addresses_.remove(address);
    publish_figures();
  }
}

std::size_t Recorder::drain(std::uint64_t wait_ns) {
  const std::size_t applied = events_.drain(
      [this](const HeapEvent& event, std::uintptr_t source, std::span<const std::uintptr_t> words) {
        const std::uint64_t time = time_of(event.time);
        StackId stack = event.stack;
        if (!words.empty()) { // append_with_stack's
          const std::span<const std::uintptr_t> frames = words.subspan(1);
          const AheadHash& ahead = ahead_hashes_[event.sequence % ahead_hashes_.size()];
          stack = engine_.intern(frames, ahead.sequence == event.sequence ? ahead.hash
                                                                          : hash_values(frames));
          if (words[0] != 0) {
            RememberedStack::remember(*reinterpret_cast<std::uint64_t*>(words[0]), event.stack,
                                      stack);
          }
        }
        switch (event.kind) {
        case HeapEvent::Alloc:
          engine_.alloc(event.address, event.size, stack, time);
          break;
        case HeapEvent::Free:
          engine_.free(event.address, time);
          break;
        case HeapEvent::ReallocBegin:
          engine_.realloc_begin(source, event.address);
          break;
        case HeapEvent::ReallocEnd:
          engine_.realloc_end(source, event.address, event.size, stack, time);
          break;
        }
      },
      wait_ns,
      [this](const HeapEvent& event, std::span<const std::uintptr_t> words) {
        engine_.prefetch(event.address);
        if (!words.empty()) {
          const std::uint64_t hash = hash_values(words.subspan(1));
          ahead_hashes_[event.sequence % ahead_hashes_.size()] = {event.sequence, hash};
          engine_.prefetch_stack(hash);
        }
      });
  if (applied != 0) {
    publish_figures();
  }
  return applied;
}

void Recorder::publish_figures() noexcept {
  const LiveFigures live = sampling() ? sampled_.live_figures() : engine_.live_figures();
  const std::uint64_t figures[] = {live.live_bytes, live.live_blocks, live.peak_bytes,
                                   live.peak_blocks};
  for (std::size_t i = 0; i < published_.size(); ++i) {
    published_[i].store(figures[i], std::memory_order_relaxed);
  }
}

LiveFigures Recorder::published_figures() const noexcept {
  return {
      published_[0].load(std::memory_order_relaxed), published_[1].load(std::memory_order_relaxed),
      published_[2].load(std::memory_order_relaxed), published_[3].load(std::memory_order_relaxed)};
}

namespace {

// The mutex within a second, or false. Polled rather than a timed lock: sanitizers do not follow
// a timed mutex's lock, and at exit a millisecond's step is precise enough.
bool lock_within_a_second(std::unique_lock<std::mutex>& lock) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!lock.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace

std::optional<Recorder::Taken> Recorder::take(void (*stop)()) {
  // At exit, within a second: the thread that holds it may be this very thread, interrupted by
  // the signal handler that called exit().
  std::unique_lock lock(mutex_, std::defer_lock);
  if (stop == nullptr) {
    lock.lock();
  } else if (!lock_within_a_second(lock)) {
    stop();
    return std::nullopt;
  }
  Taken taken;
  taken.sampled_allocations = sampled_.sampled_allocations();
  drain(event_wait_ns);
  taken.lost_events = events_.lost() + events_without_ring_.load(std::memory_order_relaxed);
  const std::uint64_t end_time = now();
  taken.raw = sampling() ? sampled_.snapshot(end_time) : engine_.snapshot(end_time);
  taken.raw.attached = options_.attached;
  if (stop != nullptr) {
    stop();
  }
  const double microseconds = clock_.microseconds_per_tick(end_time);
  lock.unlock();
  taken.raw = in_microseconds(std::move(taken.raw), microseconds);
  // Sites whose blocks all ended before a reset have nothing left in this window.
  std::erase_if(taken.raw.sites, [](const RawSite& site) { return site.counts.total_blocks == 0; });
  return taken;
}

HeapTotals Recorder::totals() {
  const std::lock_guard lock(mutex_);
  drain();
  return sampling() ? sampled_.totals() : engine_.totals();
}

void Recorder::restart() {
  const std::lock_guard lock(mutex_);
  if (sampling()) {
    sampled_.restart(now());
  } else {
    drain(event_wait_ns);
    engine_.restart(now());
  }
  publish_figures();
}

std::vector<std::span<const std::uintptr_t>> Recorder::stacks_since(std::size_t& done) {
  std::vector<std::span<const std::uintptr_t>> stacks;
  const std::lock_guard lock(mutex_);
  for (; done < engine_.stack_count(); ++done) {
    stacks.push_back(engine_.stack(static_cast<StackId>(done)));
  }
  return stacks;
}

std::size_t Recorder::stacks_interned() {
  const std::lock_guard lock(mutex_);
  return engine_.stack_count();
}

std::int64_t Recorder::pprof_period() const {
  return sampling() ? static_cast<std::int64_t>(options_.sample_bytes) : std::int64_t{1};
}

} // namespace hotscope::heap
