// hotscope-guest-transport-bench (docs/performance.md, "Guest tracing"): what an instrumented scope
// costs inside a guest, flushes to the host included, beside the same scope on the host, in one
// run; how many flushes (VM exits, or channel round trips) 1,000 guest records take; and what a
// heap block reported allocated and freed (HOTSCOPE_GUEST_ALLOC, _FREE) costs the guest, the host's
// heap accounting included.
//   hotscope-guest-transport-bench [scopes per call, default 1000000] [repetitions, default 5]
// Times are TSC ticks read by the code measured (the guest reads the same TSC rate as the host:
// KVM_GET_TSC_KHZ), converted with hotscope's TSC frequency; medians over the repetitions.
#include "clock/clock.hpp"
#include "guest/runner/runner.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double ns_per_tick() {
  return 1e9 / hotscope::clock::ticks_per_second();
}

// The host's own scope: batches that fit the thread's ring, drained between batches (not timed).
double host_scope_ns(std::uint64_t scopes) {
  constexpr std::uint64_t kBatch = 10000; // 20,000 records: under the default 131,072-record ring
  std::uint64_t ticks = 0;
  for (std::uint64_t done = 0; done < scopes; done += kBatch) {
    const std::uint64_t start = __rdtsc();
    for (std::uint64_t i = 0; i < kBatch; ++i) {
      HOTSCOPE_SCOPE("empty");
    }
    ticks += __rdtsc() - start;
    hotscope::trace::collect_now();
  }
  return static_cast<double>(ticks) * ns_per_tick() / static_cast<double>(scopes);
}

volatile std::uint64_t sink; // keeps the floor's rdtsc pairs

double host_floor_ns(std::uint64_t iterations) {
  const std::uint64_t start = __rdtsc();
  for (std::uint64_t i = 0; i < iterations; ++i) {
    sink = __rdtsc() - __rdtsc();
  }
  return static_cast<double>(__rdtsc() - start) * ns_per_tick() / static_cast<double>(iterations);
}

// What the guest's loop does (bench/guest_bench_guest.c): the call's argument is
// iterations << 2 | mode.
enum Mode : std::uint64_t { kFloor = 0, kScope = 1, kAllocFree = 2 };

struct GuestFigures {
  double floor_ns = 0;
  double scope_ns = 0;          // flushes included
  double alloc_free_ns = 0;     // an ALLOC and a FREE, flushes included
  double scope_no_flush_ns = 0; // 500 scopes per call: the buffer never fills inside the loop
  double flushes_per_1000_records = 0;
};

bool measure_guest(hotscope::guest::Runner& runner, std::uint64_t scopes, int repetitions,
                   GuestFigures& figures) {
  std::vector<double> floors, costs, heap_costs;
  std::uint64_t flushes = 0, records = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto floor = runner.call(scopes << 2 | kFloor);
    const std::uint64_t flushes_before = runner.counts().flushes;
    const std::uint64_t records_before = runner.trace_counts().records_accepted;
    const auto scoped = runner.call(scopes << 2 | kScope);
    flushes += runner.counts().flushes - flushes_before;
    records += runner.trace_counts().records_accepted - records_before;
    const auto heap = runner.call(scopes << 2 | kAllocFree);
    if (!floor.returned || !scoped.returned || !heap.returned) {
      return false;
    }
    floors.push_back(static_cast<double>(floor.value) * ns_per_tick() / scopes);
    costs.push_back(static_cast<double>(scoped.value) * ns_per_tick() / scopes);
    heap_costs.push_back(static_cast<double>(heap.value) * ns_per_tick() / scopes);
  }
  constexpr std::uint64_t kUnflushed = 500; // 1,000 records: under HOTSCOPE_GUEST_CAPACITY
  std::vector<double> unflushed;
  for (int r = 0; r < 200; ++r) {
    const auto scoped = runner.call(kUnflushed << 2 | kScope);
    if (!scoped.returned) {
      return false;
    }
    unflushed.push_back(static_cast<double>(scoped.value) * ns_per_tick() / kUnflushed);
  }
  figures.scope_no_flush_ns = median(unflushed);
  figures.floor_ns = median(floors);
  figures.scope_ns = median(costs);
  figures.alloc_free_ns = median(heap_costs);
  figures.flushes_per_1000_records = 1000.0 * static_cast<double>(flushes) / records;
  return true;
}

} // namespace

int main(int argc, char** argv) {
  const std::uint64_t scopes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 5;
  if (scopes == 0 || repetitions <= 0) {
    std::fprintf(stderr, "usage: hotscope-guest-transport-bench [scopes per call] [repetitions]\n");
    return 2;
  }
  hotscope::trace::snapshot(); // starts hotscope (clock, collector) before anything is timed
  if (hotscope::clock::info().source != "tsc") {
    std::fprintf(stderr,
                 "hotscope-guest-transport-bench: hotscope's clock is not the TSC here; the guest "
                 "times itself with the TSC, so the figures would not compare\n");
    return 1;
  }
  std::vector<double> host_floor, host_scope;
  for (int r = 0; r < repetitions; ++r) {
    host_floor.push_back(host_floor_ns(scopes));
    host_scope.push_back(host_scope_ns(scopes));
  }
  std::printf("scopes per call: %llu, repetitions: %d, TSC %.3f GHz\n\n",
              static_cast<unsigned long long>(scopes), repetitions,
              hotscope::clock::ticks_per_second() / 1e9);
  std::printf("| where | rdtsc pair ns | empty scope ns, flushes included | scope / host scope | "
              "empty scope ns, no flush | flushes per 1,000 records | heap alloc + free ns, "
              "flushes included |\n"
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::printf("| host thread | %.2f | %.2f | 1.00 | | (none: the collector drains) | |\n",
              median(host_floor), median(host_scope));

  hotscope::guest::RunnerOptions options;
  options.time_limit = std::chrono::seconds(60);
  for (const bool kvm : {true, false}) {
    const std::string image =
        std::string(HOTSCOPE_GUEST_DIR) + (kvm ? "/bench-guest.elf" : "/bench-guest-process");
    std::string error;
    if (kvm && !hotscope::guest::kvm_unavailable_reason().empty()) {
      std::printf("| KVM guest | (no KVM: %s) | | | | | |\n",
                  hotscope::guest::kvm_unavailable_reason().c_str());
      continue;
    }
    auto runner = kvm ? hotscope::guest::start_kvm_guest(image, options, error)
                      : hotscope::guest::start_process_guest(image, options, error);
    GuestFigures figures;
    if (!runner || !measure_guest(*runner, scopes, repetitions, figures)) {
      std::fprintf(stderr, "hotscope-guest-transport-bench: %s\n",
                   error.empty() ? "the guest was stopped" : error.c_str());
      return 1;
    }
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f |\n",
                kvm ? "KVM guest" : "child-process guest", figures.floor_ns, figures.scope_ns,
                figures.scope_ns / median(host_scope), figures.scope_no_flush_ns,
                figures.flushes_per_1000_records, figures.alloc_free_ns);
  }
  return 0;
}
