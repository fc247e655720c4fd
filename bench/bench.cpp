// Benchmarks of the hot path. Every case is measured the same way: one iteration times a batch
// of operations with steady_clock (manual time) and the per-operation cost is reported as the
// counter ns_per_op, so cases compare as ratios within one run. See docs/performance.md.
#include "clock/clock.hpp"
#include "instrument/instrument.hpp"
#include "locks/locks.hpp"
#include "trace/trace.hpp"
#include "workload.hpp"

#include <hotscope/hotscope.hpp>
#include <hotscope/lockable.hpp>
#include <hotscope/task.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <pthread.h>
#include <string>
#include <vector>
#include <x86intrin.h>

#if HOTSCOPE_BENCH_LTTNG
#include "lttng_tp.h"
#endif

namespace {

// Pairs (rdtsc, scope, tracepoint) per timed batch: long enough that the two clock reads around
// a batch are noise, short enough that a batch of scopes (2 records each) fits an empty ring.
constexpr std::int64_t kPairsPerBatch = 4096;
constexpr std::int64_t kWorkloadCallsPerBatch = 64;

// Drains every ring. A barrier runs it once per iteration, after every thread's timed batch and
// before any next one, so draining never overlaps a timed batch and each batch finds room.
struct Drain {
  void operator()() noexcept { hotscope::trace::collect_now(); }
};
using DrainBarrier = std::barrier<Drain>;

// One barrier per thread count for the whole process: every thread of a run arrives equally
// often, so the phases stay in step from one run to the next.
DrainBarrier& drain_barrier(int threads) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DrainBarrier>> barriers;
  std::lock_guard lock(mutex);
  auto& barrier = barriers[threads];
  if (!barrier) {
    barrier = std::make_unique<DrainBarrier>(threads);
  }
  return *barrier;
}

// Runs the benchmark loop: `batch` performs `ops` operations and is the only timed part.
template <class Batch> void run_batches(benchmark::State& state, std::int64_t ops, Batch batch) {
  DrainBarrier& barrier = drain_barrier(state.threads());
  std::vector<double> batch_seconds;
  batch_seconds.reserve(static_cast<std::size_t>(state.max_iterations));
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    batch();
    const auto stop = std::chrono::steady_clock::now();
    batch_seconds.push_back(std::chrono::duration<double>(stop - start).count());
    state.SetIterationTime(batch_seconds.back());
    barrier.arrive_and_wait();
  }
  // ns_per_op is the median batch: on a shared machine a batch that was preempted or
  // interrupted is an outlier, not a cost of the code. ns_per_op_mean keeps every batch.
  const double mean = std::accumulate(batch_seconds.begin(), batch_seconds.end(), 0.0) /
                      static_cast<double>(batch_seconds.size());
  const auto middle = batch_seconds.begin() + static_cast<std::ptrdiff_t>(batch_seconds.size() / 2);
  std::nth_element(batch_seconds.begin(), middle, batch_seconds.end());
  // Google Benchmark sums counters over threads; kAvgThreads makes that the mean of the threads'
  // own per-operation costs. (Its time column divides by all threads' iterations instead.)
  const double to_ns_per_op = 1e9 / static_cast<double>(ops);
  state.counters["ns_per_op"] =
      benchmark::Counter(*middle * to_ns_per_op, benchmark::Counter::kAvgThreads);
  state.counters["ns_per_op_mean"] =
      benchmark::Counter(mean * to_ns_per_op, benchmark::Counter::kAvgThreads);
}

void rdtsc_pair(benchmark::State& state) {
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      std::uint64_t begin = __rdtsc();
      benchmark::DoNotOptimize(begin);
      std::uint64_t end = __rdtsc();
      benchmark::DoNotOptimize(end);
    }
  });
}
// Two threads: the control for the scope's two-thread case (what the machine itself loses).
BENCHMARK(rdtsc_pair)->UseManualTime()->Threads(1)->Threads(2);

// Registers this thread's ring and writes it through once, so ring creation and first-touch
// page faults stay out of the timed batches; the barrier then empties it.
bool prepare_ring(benchmark::State& state) {
  HOTSCOPE_MESSAGE("warm-up"); // the first record registers the ring
  const std::uint64_t capacity = hotscope::detail::current_ring()->capacity;
  for (std::uint64_t i = 0; i + 1 < capacity / 2; ++i) { // the message took one record
    HOTSCOPE_SCOPE("warm-up");
  }
  drain_barrier(state.threads()).arrive_and_wait();
  if (capacity < 2 * kPairsPerBatch) {
    state.SkipWithError("HOTSCOPE_RING_RECORDS is smaller than a batch of scopes");
    return false;
  }
  return true;
}

// Every timed scope must have been recorded: a dropped scope takes the cheaper path.
void check_nothing_dropped(benchmark::State& state) {
  if (state.thread_index() != 0) {
    return;
  }
  const hotscope::Snapshot snapshot = hotscope::trace::snapshot();
  if (snapshot.records.dropped != 0) {
    state.SkipWithError(("records were dropped: " + std::to_string(snapshot.records.dropped) +
                         "; the measured cost is not that of recorded scopes")
                            .c_str());
  }
}

void hotscope_scope(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return; // every thread sees the same capacity, so all of them return here
  }
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      HOTSCOPE_SCOPE("x");
    }
  });
  check_nothing_dropped(state);
}
BENCHMARK(hotscope_scope)->UseManualTime()->Threads(1)->Threads(2);

// An instrumented function's call (docs/instrument.md): the compiler's entry and exit hooks, as
// -finstrument-functions calls them, against a macro scope. Run with HOTSCOPE_MIN_NS=0, or the
// collector filters this function (its calls are short) and the row reports it.
extern "C" void __cyg_profile_func_enter(void* function, void* call_site);
extern "C" void __cyg_profile_func_exit(void* function, void* call_site);

void instrumented_call(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return;
  }
  void* const function = reinterpret_cast<void*>(&instrumented_call);
  run_batches(state, kPairsPerBatch, [function] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      __cyg_profile_func_enter(function, nullptr);
      __cyg_profile_func_exit(function, nullptr);
    }
  });
  check_nothing_dropped(state);
  if (hotscope::instrument::skipped_calls(reinterpret_cast<std::uintptr_t>(function)) != 0) {
    state.SkipWithError("the function was filtered: run with HOTSCOPE_MIN_NS=0");
  }
}
BENCHMARK(instrumented_call)->UseManualTime()->Threads(1);

// An XRay function's call as hotscope's handler sees it (docs/instrument.md, "XRay"): ENTRY and
// EXIT of function 1, named by a table of one entry this benchmark fills as start_xray would.
// Without XRay's trampoline (it saves and restores the registers around the handler):
// hotscope-xray-bench measures a whole call.
void instrumented_call_xray(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return;
  }
  static const std::uint64_t entries[] = {
      reinterpret_cast<std::uintptr_t>(&instrumented_call_xray)};
  hotscope::instrument::xray_entries = entries;
  hotscope::instrument::xray_count = 1;
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      hotscope::instrument::xray_event(1, hotscope::instrument::kXrayEntry);
      hotscope::instrument::xray_event(1, hotscope::instrument::kXrayExit);
    }
  });
  check_nothing_dropped(state);
  hotscope::instrument::xray_count = 0;
}
BENCHMARK(instrumented_call_xray)->UseManualTime()->Threads(1);

// A filtered function's call: the hooks find it in the filter's table and record nothing.
void instrumented_call_filtered(benchmark::State& state) {
  void (*const self)(benchmark::State&) = &instrumented_call_filtered;
  void* const function = reinterpret_cast<void*>(self);
  hotscope::instrument::filter(reinterpret_cast<std::uintptr_t>(function));
  run_batches(state, kPairsPerBatch, [function] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      __cyg_profile_func_enter(function, nullptr);
      __cyg_profile_func_exit(function, nullptr);
    }
  });
}
BENCHMARK(instrumented_call_filtered)->UseManualTime()->Threads(1);

// What the heap hooks add per allocated block for memory per function: one ALLOCATION record
// into the thread's existing ring (no clock read), from inside an open scope as in real use.
void hotscope_allocation(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return;
  }
  HOTSCOPE_SCOPE("allocating");
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      hotscope::detail::record_allocation(static_cast<std::size_t>(i));
    }
  });
  check_nothing_dropped(state);
}
BENCHMARK(hotscope_allocation)->UseManualTime()->Threads(1);

// An item through a queue: HOTSCOPE_QUEUE_PUSH then HOTSCOPE_QUEUE_POP, two records like a
// scope's BEGIN and END, so the goal is the scope's cost.
void hotscope_queue_push_pop(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return;
  }
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      HOTSCOPE_QUEUE_PUSH("bench_queue", i);
      HOTSCOPE_QUEUE_POP("bench_queue", i);
    }
  });
  check_nothing_dropped(state);
}
BENCHMARK(hotscope_queue_push_pop)->UseManualTime()->Threads(1);

// An uncontended lock and unlock: a bare std::mutex, and hotscope::Lockable around one (a record
// at the acquisition and one at the release: docs/locks.md). The goal is the difference.
void mutex_plain(benchmark::State& state) {
  std::mutex mutex;
  run_batches(state, kPairsPerBatch, [&] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      mutex.lock();
      benchmark::ClobberMemory();
      mutex.unlock();
    }
  });
}
BENCHMARK(mutex_plain)->UseManualTime()->Threads(1);

void hotscope_lockable(benchmark::State& state) {
  if (!prepare_ring(state)) {
    return;
  }
  HOTSCOPE_LOCKABLE(std::mutex, bench_mutex);
  run_batches(state, kPairsPerBatch, [&] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      bench_mutex.lock();
      benchmark::ClobberMemory();
      bench_mutex.unlock();
    }
  });
  check_nothing_dropped(state);
}
BENCHMARK(hotscope_lockable)->UseManualTime()->Threads(1);

// A coroutine resumed and suspended in a loop, as an executor would: without hotscope, and as a
// task (HOTSCOPE_TASK, TaskPromise), where each resume to suspend is one running slice: two
// records like a scope's, plus the wrapper's bookkeeping. The difference is what a task adds.
struct NotATask {};
template <typename Base> struct Loop {
  struct promise_type : Base {
    Loop get_return_object() {
      return Loop{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
  std::coroutine_handle<promise_type> handle;
};

Loop<NotATask> plain_loop() {
  for (;;) {
    co_await std::suspend_always{};
  }
}

Loop<hotscope::TaskPromise> task_loop() {
  HOTSCOPE_TASK("bench_task");
  for (;;) {
    co_await std::suspend_always{};
  }
}

template <typename Make> void coroutine_resumes(benchmark::State& state, Make make) {
  if (!prepare_ring(state)) {
    return;
  }
  auto loop = make();
  loop.handle.resume(); // runs up to its first suspension
  run_batches(state, kPairsPerBatch, [&] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      loop.handle.resume();
    }
  });
  loop.handle.destroy();
  check_nothing_dropped(state);
}
void coroutine_resume_plain(benchmark::State& state) {
  coroutine_resumes(state, plain_loop);
}
void hotscope_task_resume(benchmark::State& state) {
  coroutine_resumes(state, task_loop);
}
BENCHMARK(coroutine_resume_plain)->UseManualTime()->Threads(1);
BENCHMARK(hotscope_task_resume)->UseManualTime()->Threads(1);

// An uncontended pthread mutex lock + unlock: glibc's functions called directly (as the interposer
// calls them), then through the interposer (src/locks, docs/locks.md) off and with
// HOTSCOPE_LOCKS=1, where an uncontended acquisition records nothing. The difference between
// the first and the last is what interposing costs a program.
enum class MutexPath { Bare, InterposedOff, Interposed };
template <MutexPath path> void pthread_mutex_pair(benchmark::State& state) {
  namespace locks = hotscope::locks;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  locks::start(path == MutexPath::Interposed ? locks::Mode::Contended : locks::Mode::Off);
  run_batches(state, kPairsPerBatch, [&] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      if constexpr (path == MutexPath::Bare) {
        locks::detail::real.mutex_lock(&mutex);
        locks::detail::real.mutex_unlock(&mutex);
      } else {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
      }
    }
  });
  locks::start(locks::Mode::Off);
}
BENCHMARK(pthread_mutex_pair<MutexPath::Bare>)->Name("pthread_mutex_bare")->UseManualTime();
BENCHMARK(pthread_mutex_pair<MutexPath::InterposedOff>)
    ->Name("pthread_mutex_interposed_off")
    ->UseManualTime();
BENCHMARK(pthread_mutex_pair<MutexPath::Interposed>)
    ->Name("pthread_mutex_interposed")
    ->UseManualTime();

#if HOTSCOPE_BENCH_LTTNG
std::atomic<std::uint64_t> lttng_events_emitted{0};

void lttng_pair(benchmark::State& state) {
  // A disabled tracepoint costs one branch; only a recording session makes this case mean anything.
  if (!tracepoint_enabled(hotscope_bench, begin) || !tracepoint_enabled(hotscope_bench, end)) {
    state.SkipWithError("no LTTng session records hotscope_bench:* (scripts/bench.sh sets one up)");
    return;
  }
  static constexpr int kLocation = 0; // the payload: an address, like a scope's location
  run_batches(state, kPairsPerBatch, [] {
    for (std::int64_t i = 0; i < kPairsPerBatch; ++i) {
      tracepoint(hotscope_bench, begin, &kLocation);
      tracepoint(hotscope_bench, end, &kLocation);
    }
  });
  lttng_events_emitted += static_cast<std::uint64_t>(2 * kPairsPerBatch * state.iterations());
}
BENCHMARK(lttng_pair)->UseManualTime();
#endif

// About 1 KiB of fields of 1 to 7 digits.
const std::string& workload_input() {
  static const std::string csv = [] {
    std::string text;
    std::uint64_t x = 12345;
    while (text.size() < 1024) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      text += std::to_string((x >> 33) % 10'000'000) + ",";
    }
    return text;
  }();
  return csv;
}

template <std::uint64_t (*Workload)(std::string_view)> void workload(benchmark::State& state) {
  const std::string_view csv = workload_input();
  run_batches(state, kWorkloadCallsPerBatch, [csv] {
    for (std::int64_t i = 0; i < kWorkloadCallsPerBatch; ++i) {
      benchmark::DoNotOptimize(Workload(csv));
    }
  });
}
BENCHMARK(workload<sum_fields_plain>)->Name("workload_plain")->UseManualTime();
BENCHMARK(workload<sum_fields_hotscope_off>)->Name("workload_hotscope_off")->UseManualTime();

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  // The collector thread would drain rings while batches are timed; the barrier drains instead.
  hotscope::trace::pause_collector_for_testing(true);
  const hotscope::ClockInfo clock = hotscope::clock::info();
  benchmark::AddCustomContext("hotscope_clock", clock.source + " (" + clock.frequency_origin + ")");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
#if HOTSCOPE_BENCH_LTTNG
  // scripts/bench.sh compares this with the events found in the trace.
  std::printf("lttng events emitted: %llu\n",
              static_cast<unsigned long long>(lttng_events_emitted.load()));
#endif
  return 0;
}
