// Host cost of a guest flush (docs/performance.md, "Guest tracing"): validating and converting a
// full guest buffer of nested scopes, alone and merged into the process's trace.
#include "guest/guest.hpp"

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

using namespace hotscope::guest;

constexpr std::uint64_t kBase = 0x100000;
constexpr std::size_t kRecords = 4096;
constexpr std::size_t kDepth = 8; // scopes nested 8 deep, each with its own location

// A guest's memory: 8 static locations, then a full buffer of BEGIN/END pairs nested kDepth deep.
class Guest {
public:
  Guest() : bytes_(1 << 20, 0) {
    std::size_t next = 0;
    const auto put = [&](const void* data, std::size_t size) {
      next = (next + 7) & ~std::size_t{7};
      std::memcpy(bytes_.data() + next, data, size);
      const std::uint64_t address = kBase + next;
      next += size;
      return address;
    };
    const std::uint64_t file = put("guest.c", 8);
    for (std::size_t i = 0; i < kDepth; ++i) {
      const std::string name = "guest_function_" + std::to_string(i);
      const std::uint64_t location[3] = {put(name.c_str(), name.size() + 1), file, i + 1};
      locations_.push_back(put(location, sizeof(location)));
    }
    buffer_ = kBase + ((next + 31) & ~std::size_t{31});
    records_ = reinterpret_cast<hotscope_record*>(bytes_.data() + (buffer_ - kBase));
    for (std::size_t i = 0; i < kRecords; ++i) {
      // 0..7 open, 7..0 close, again and again.
      const std::size_t step = i % (2 * kDepth);
      const bool opens = step < kDepth;
      const std::size_t level = opens ? step : 2 * kDepth - 1 - step;
      records_[i] = {0, locations_[level], 0, opens ? HOTSCOPE_RECORD_BEGIN : HOTSCOPE_RECORD_END,
                     0};
    }
  }

  // Timestamps after the previous batch's, as the guest's TSC would give.
  void stamp() {
    for (std::size_t i = 0; i < kRecords; ++i) {
      records_[i].ticks = ticks_ += 37;
    }
  }

  const FlatMemory& memory() const { return memory_; }
  std::uint64_t buffer() const { return buffer_; }

private:
  std::vector<unsigned char> bytes_;
  FlatMemory memory_{bytes_.data(), kBase, bytes_.size()};
  std::vector<std::uint64_t> locations_;
  std::uint64_t buffer_ = 0;
  hotscope_record* records_ = nullptr;
  std::uint64_t ticks_ = 1000;
};

constexpr ClockAnchor kClock{1000, 1000, 3e9, 1e9};

void report(benchmark::State& state) {
  // items_per_second is records per CPU second: 1e9 / items_per_second is ns per record.
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kRecords));
}

// Copy out, check, intern, convert: what BatchValidator::validate costs per full buffer.
void guest_validate_full_buffer(benchmark::State& state) {
  Guest guest;
  BatchValidator validator("guest: bench", guest.memory(), kClock);
  for (auto _ : state) {
    state.PauseTiming();
    guest.stamp();
    state.ResumeTiming();
    const BatchValidator::Result result = validator.validate(guest.buffer(), kRecords, kRecords);
    if (result.rejected) {
      state.SkipWithError(result.rejected->to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(result.records.data());
  }
  report(state);
}
BENCHMARK(guest_validate_full_buffer);

// The whole flush: validation plus merging into the collector's statistics and trace window.
void guest_flush_into_trace(benchmark::State& state) {
  Guest guest;
  GuestTrace trace("guest: bench", guest.memory(), kClock);
  for (auto _ : state) {
    state.PauseTiming();
    guest.stamp();
    state.ResumeTiming();
    if (const auto problem = trace.flush(guest.buffer(), kRecords, kRecords)) {
      state.SkipWithError(problem->to_string().c_str());
      break;
    }
  }
  report(state);
}
BENCHMARK(guest_flush_into_trace);

} // namespace

BENCHMARK_MAIN();
