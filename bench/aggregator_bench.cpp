// The collector's cost per record, apart from the rings and the machine's other threads
// (docs/performance.md, "The slowest calls"): an Aggregator fed the same hand-made batches with
// the slowest calls off (K = 0) and on (K = 4). Two shapes: empty scopes at one level (the
// throughput bench's), and requests as hotscope-demo makes them: a handler with nested calls, a
// message, a counter and an allocation, one call in 1,000 ten times slower.
#include "trace/trace.hpp"

#include <benchmark/benchmark.h>

#include <hotscope/record.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using hotscope::trace::Aggregator;

hotscope::trace::Resolver numbered() {
  return {[](std::uint64_t ref) {
            return hotscope::trace::LocationText{"f" + std::to_string(ref), "bench.cpp", 1};
          },
          [](std::uint64_t ref) { return "text" + std::to_string(ref); }};
}

hotscope_record record(std::uint32_t kind, std::uint64_t ticks, std::uint64_t ref,
                       std::uint64_t value = 0) {
  return hotscope_record{ticks, ref, value, kind, 0};
}

// 100,000 records of empty scopes, 20 ticks each.
std::vector<hotscope_record> flat_scopes(std::uint64_t& now) {
  std::vector<hotscope_record> records;
  for (int i = 0; i < 50'000; ++i) {
    records.push_back(record(HOTSCOPE_RECORD_BEGIN, now, 1));
    records.push_back(record(HOTSCOPE_RECORD_END, now += 20, 1));
    now += 5;
  }
  return records;
}

// About 100,000 records of requests: handle > parse, lookup > lock, a message, a counter, an
// allocation, render; 14 records each.
std::vector<hotscope_record> requests(std::uint64_t& now) {
  std::vector<hotscope_record> records;
  for (int i = 0; i < 7'200; ++i) {
    const std::uint64_t slow = i % 1000 == 999 ? 10 : 1;
    const auto scope = [&](std::uint64_t ref, std::uint64_t ticks) {
      records.push_back(record(HOTSCOPE_RECORD_BEGIN, now, ref));
      records.push_back(record(HOTSCOPE_RECORD_END, now += ticks, ref));
    };
    records.push_back(record(HOTSCOPE_RECORD_BEGIN, now, 10));
    scope(11, 300 * slow);
    records.push_back(record(HOTSCOPE_RECORD_BEGIN, now, 12));
    scope(13, 40);
    records.push_back(record(HOTSCOPE_RECORD_MESSAGE_STATIC, now += 5, 14));
    records.push_back(record(HOTSCOPE_RECORD_COUNTER, now += 5, 15, i));
    records.push_back(record(HOTSCOPE_RECORD_END, now += 200 * slow, 12));
    records.push_back(record(HOTSCOPE_RECORD_ALLOCATION, 0, 0, 256));
    scope(16, 500);
    records.push_back(record(HOTSCOPE_RECORD_END, now += 10, 10));
    now += 100;
  }
  return records;
}

template <std::vector<hotscope_record> (*Shape)(std::uint64_t&)>
void consume(benchmark::State& state) {
  Aggregator aggregator(32u << 20, numbered(),
                        {static_cast<unsigned>(state.range(0)), std::size_t{16} << 20});
  const std::uint32_t thread = aggregator.add_thread(1, "bench");
  std::uint64_t now = 0;
  std::vector<hotscope_record> batch = Shape(now);
  const std::uint64_t span = now;
  for (auto _ : state) {
    state.PauseTiming(); // the next batch, later in time
    for (hotscope_record& r : batch) {
      r.ticks += r.kind == HOTSCOPE_RECORD_ALLOCATION ? 0 : span;
    }
    state.ResumeTiming();
    aggregator.consume(thread, batch);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch.size()));
}
BENCHMARK(consume<flat_scopes>)->Name("consume/flat_scopes/slowest")->Arg(0)->Arg(4);
BENCHMARK(consume<requests>)->Name("consume/requests/slowest")->Arg(0)->Arg(4);

} // namespace

BENCHMARK_MAIN();
