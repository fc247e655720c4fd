// Hand-built snapshots for the exporter tests: one builder, and one known snapshot whose every
// figure the tests can state exactly.
#pragma once

#include "snapshot/snapshot.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>

namespace hotscope::testing {

class SnapshotBuilder {
public:
  SnapshotBuilder() {
    snapshot_.hotscope_version = "0.1.0";
    snapshot_.pid = 4242;
    snapshot_.process_name = "demo";
    snapshot_.clock = {"tsc", "cpuid", 3e9, true, "invariant TSC"};
    snapshot_.start_unix_ns = 1'700'000'000'000'000'000;
    snapshot_.duration_ns = 10'000'000;
  }

  // Adds a thread; its index is its position.
  std::uint32_t thread(std::int64_t os_tid, std::string name) {
    ThreadInfo info;
    info.index = static_cast<std::uint32_t>(snapshot_.threads.size());
    info.os_tid = os_tid;
    info.name = std::move(name);
    snapshot_.threads.push_back(info);
    return info.index;
  }

  SnapshotBuilder& begin(std::uint32_t thread, std::uint64_t ns, const std::string& name) {
    return event(thread, ns, EventKind::Begin, name, 0);
  }
  SnapshotBuilder& end(std::uint32_t thread, std::uint64_t ns, const std::string& name) {
    return event(thread, ns, EventKind::End, name, 0);
  }
  SnapshotBuilder& message(std::uint32_t thread, std::uint64_t ns, const std::string& text) {
    return event(thread, ns, EventKind::Message, text, 0);
  }
  SnapshotBuilder& counter(std::uint32_t thread, std::uint64_t ns, const std::string& name,
                           std::int64_t value) {
    return event(thread, ns, EventKind::Counter, name, value);
  }

  SnapshotBuilder& push(std::uint32_t thread, std::uint64_t ns, const std::string& queue,
                        std::int64_t item) {
    return event(thread, ns, EventKind::QueuePush, queue, item);
  }
  SnapshotBuilder& pop(std::uint32_t thread, std::uint64_t ns, const std::string& queue,
                       std::int64_t item) {
    return event(thread, ns, EventKind::QueuePop, queue, item);
  }

  // A lock wait on `thread` that ended at `ns` after `waited` ns; the release on another thread
  // that let a waiter in (`flow` > 0) and that waiter's acquisition, the flow's two ends.
  SnapshotBuilder& lock_wait(std::uint32_t thread, std::uint64_t ns, const std::string& lock,
                             std::int64_t waited) {
    return event(thread, ns, EventKind::LockWait, lock, waited);
  }
  SnapshotBuilder& handoff(std::uint32_t thread, std::uint64_t ns, const std::string& lock,
                           std::int64_t flow) {
    return event(thread, ns, EventKind::LockHandoff, lock, flow);
  }
  SnapshotBuilder& acquired(std::uint32_t thread, std::uint64_t ns, const std::string& lock,
                            std::int64_t flow) {
    return event(thread, ns, EventKind::LockAcquired, lock, flow);
  }

  Snapshot& snapshot() { return snapshot_; }

  // The snapshot with its trace sorted by time, as the collector delivers it.
  Snapshot build() {
    std::stable_sort(snapshot_.trace.begin(), snapshot_.trace.end(),
                     [](const TraceEvent& a, const TraceEvent& b) { return a.ns < b.ns; });
    return snapshot_;
  }

private:
  SnapshotBuilder& event(std::uint32_t thread, std::uint64_t ns, EventKind kind,
                         const std::string& name, std::int64_t value) {
    auto [it, added] =
        name_index_.try_emplace(name, static_cast<std::uint32_t>(snapshot_.names.size()));
    if (added) {
      snapshot_.names.push_back(name);
    }
    snapshot_.trace.push_back({ns, thread, kind, it->second, value});
    return *this;
  }

  Snapshot snapshot_;
  std::map<std::string, std::uint32_t> name_index_;
};

inline FunctionStats function_stats(std::string name, std::uint64_t calls, std::uint64_t total_ns,
                                    std::uint64_t self_ns) {
  FunctionStats f;
  f.name = std::move(name);
  f.file = "demo.cpp";
  f.line = 12;
  f.stats.calls = calls;
  f.stats.total_ns = total_ns;
  f.stats.self_ns = self_ns;
  f.stats.min_ns = total_ns / calls / 2;
  f.stats.max_ns = total_ns / calls * 2;
  f.stats.mean_ns = static_cast<double>(total_ns) / static_cast<double>(calls);
  f.stats.p50_ns = total_ns / calls;
  f.stats.p90_ns = f.stats.p50_ns + 1;
  f.stats.p95_ns = f.stats.p50_ns + 2;
  f.stats.p99_ns = f.stats.p50_ns + 3;
  f.stats.p999_ns = f.stats.p50_ns + 4;
  // Every call took total_ns / calls.
  for (const std::uint64_t bound : kDurationBucketsNs) {
    f.stats.at_most_bucket.push_back(bound >= total_ns / calls ? calls : 0);
  }
  return f;
}

// Thread "main" (tid 4242) runs main, which calls Tree::insert, which logs a message and a
// counter; the unnamed thread 4243 runs load. Self times: main 5'001'000 ns, Tree::insert
// 3'000'000 ns, load 3'000'000 ns.
inline Snapshot known_snapshot() {
  SnapshotBuilder b;
  const std::uint32_t main_thread = b.thread(4242, "main");
  const std::uint32_t loader = b.thread(4243, "");
  b.begin(main_thread, 1'000'000, "main")
      .begin(main_thread, 2'000'500, "Tree::insert")
      .message(main_thread, 3'000'000, "gc-peak")
      .counter(main_thread, 3'000'000, "heap", 10592)
      .end(main_thread, 5'000'500, "Tree::insert")
      .begin(loader, 1'500'000, "load")
      .end(loader, 4'500'000, "load")
      .end(main_thread, 9'001'000, "main");

  Snapshot& s = b.snapshot();
  s.records = {20, 18, 2};
  s.threads[0].records = {12, 11, 1};
  s.threads[1].records = {8, 7, 1};
  s.functions = {function_stats("main", 1, 8'001'000, 5'001'000),
                 function_stats("Tree::insert", 1, 3'000'000, 3'000'000),
                 function_stats("load", 2, 3'000'000, 3'000'000)};
  s.threads[0].functions = {s.functions[0], s.functions[1]};
  s.threads[1].functions = {s.functions[2]};
  s.counters = {{"heap", 1, 10592, 10592, 10592}};
  return b.build();
}

// known_snapshot() in a program that records allocations: main allocates 1.50 KiB in 3 blocks
// itself and calls Tree::insert, which allocates 2.00 MiB in 5 blocks; load allocates 100 B in one
// block; main's thread allocates 10 B in one block outside any scope.
inline Snapshot known_snapshot_with_allocations() {
  Snapshot s = known_snapshot();
  s.functions[0].allocated_self = {1536, 3};
  s.functions[0].allocated_total = {1536 + 2'097'152, 8};
  s.functions[1].allocated_self = s.functions[1].allocated_total = {2'097'152, 5};
  s.functions[2].allocated_self = s.functions[2].allocated_total = {100, 1};
  s.threads[0].functions = {s.functions[0], s.functions[1]};
  s.threads[1].functions = {s.functions[2]};
  s.threads[0].allocations = {{1536 + 2'097'152 + 10, 9}, {10, 1}};
  s.threads[1].allocations = {{100, 1}, {}};
  s.allocations = {{1536 + 2'097'152 + 10 + 100, 10}, {10, 1}};
  return s;
}

// A function of the test program itself, which has no dynamic symbol: a CPU frame in it is named
// by the program's file and the offset.
[[gnu::noinline]] inline int cpu_fixture_code(int value) {
  asm volatile("" : "+r"(value));
  return value + 1;
}

inline std::uint64_t code_address(const void* code) {
  return reinterpret_cast<std::uint64_t>(code);
}

// known_snapshot() with CPU samples at 100 Hz: three stacks, innermost first, native frames
// (rand interrupted, a return address into the test program, one into std::terminate) with the
// scopes main and Tree::insert among them; a stack in no mapping; a stack without frames.
inline Snapshot known_snapshot_with_cpu() {
  Snapshot s = known_snapshot();
  CpuProfile& cpu = s.cpu;
  cpu.hz = 100;
  cpu.period_ns = 10'000'000;
  cpu.samples = 10;
  cpu.scopes = {{"main", "demo.cpp", 12}, {"Tree::insert", "tree.cpp", 30}};
  const auto native = [](std::uint64_t address) { return CpuFrame{address, -1}; };
  const auto scope = [](std::int32_t index) { return CpuFrame{0, index}; };
  const std::uint64_t in_program = code_address(reinterpret_cast<const void*>(&cpu_fixture_code));
  const std::uint64_t terminate = code_address(reinterpret_cast<const void*>(&std::terminate));
  // A C function without aliases that no sanitizer intercepts (dladdr picks among aliases, and
  // an interceptor is the test program's symbol).
  const std::uint64_t rand = code_address(reinterpret_cast<const void*>(&::rand));
  cpu.stacks = {
      {{native(rand), scope(1), native(in_program + 1), scope(0), native(terminate + 1)}, 6},
      {{scope(0), native(in_program), native(terminate + 1)}, 2},
      {{native(0x10)}, 1},
      {{}, 1},
  };
  cpu.threads = {{4242, 8}, {4243, 2}};
  s.threads[0].cpu_samples = 8;
  s.threads[1].cpu_samples = 2;
  return s;
}

// Two threads and two locks. locker-a (tid 100) holds cache_mutex inside "flush" and hands it to
// locker-b (tid 101), which waited for it inside "update" (flow 7, 1100 to 1600 ns); locker-a
// hands it on again outside any scope (flow 8) to a wait of locker-b outside any scope (2400 to
// 2600 ns); locker-b gives up a wait for m2 (3000 to 3500 ns). The statistics: cache_mutex
// contended at "update" in std::terminate's caller, the pthread mutex m2 at an address in no
// mapping; a deadlock standing (locker-a waits for m2, held by locker-b, which waits for
// cache_mutex); an inversion of the two.
inline Snapshot known_snapshot_with_locks() {
  SnapshotBuilder b;
  const std::uint32_t a = b.thread(100, "locker-a");
  const std::uint32_t w = b.thread(101, "locker-b");
  b.begin(a, 900, "flush")
      .begin(w, 1000, "update")
      .handoff(a, 1500, "cache_mutex", 7)
      .lock_wait(w, 1600, "cache_mutex", 500)
      .acquired(w, 1600, "cache_mutex", 7)
      .end(a, 1700, "flush")
      .end(w, 2000, "update")
      .handoff(a, 2500, "cache_mutex", 8)
      .lock_wait(w, 2600, "cache_mutex", 200)
      .acquired(w, 2600, "cache_mutex", 8)
      .lock_wait(w, 3500, "m2", 500);
  Snapshot& s = b.snapshot();
  const std::uint64_t terminate = code_address(reinterpret_cast<const void*>(&std::terminate));
  LockStats cache;
  cache.name = "cache_mutex";
  cache.kind = "mutex";
  cache.acquisitions = 10;
  cache.contended = 2;
  cache.wait = {2, 700, 0, 200, 500, 350.0, 200, 500, 500, 500, 500, {}};
  cache.hold = {10,        10'000'000, 0,         400'000,   1'500'000, 1'000'000.0,
                1'000'000, 1'200'000,  1'300'000, 1'400'000, 1'450'000, {}};
  for (const std::uint64_t bound : kDurationBucketsNs) { // waits of 200 and 500 ns
    cache.wait.at_most_bucket.push_back(bound >= 500 ? 2 : bound >= 200 ? 1 : 0);
    cache.hold.at_most_bucket.push_back(bound >= 1'500'000 ? 10 : 0);
  }
  cache.top_waiters = {{"locker-b", 2, 700}};
  cache.contended_at = {{{{"update"}, {terminate + 1}}, 1, 500}, {{{}, {}}, 1, 200}};
  cache.holders = {{"locker-a", 100, 5'000'000, false}};
  cache.waiters = {{"locker-b", 101, 2'000'000, false}};
  LockStats m2;
  m2.name = "m2";
  m2.kind = "pthread_mutex";
  m2.address = 0x55d0c0de1000;
  m2.acquisitions = 3;
  m2.try_failed = 1;
  m2.contended_at = {{{{"flush"}, {0x11}}, 0, 0}};
  m2.holders = {{"locker-b", 101, 7'000'000, true}};
  s.locks = {cache, m2};
  s.deadlocks = {{{{{"locker-a", 100, 3'000'000, false},
                    "m2",
                    {"locker-b", 101, 12'300'000'000, true},
                    {"flush"}},
                   {{"locker-b", 101, 2'000'000, false},
                    "cache_mutex",
                    {"locker-a", 100, 12'500'000'000, false},
                    {"update", "inner"}}}}};
  s.inversions = {{"cache_mutex",
                   "m2",
                   "locker-a",
                   {{"flush"}, {}},
                   "locker-b",
                   {{}, {terminate + 1, 0x11}},
                   1234}};
  s.lock_figures = {1, 4, 5};
  return b.build();
}

} // namespace hotscope::testing
