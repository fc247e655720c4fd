// The Prometheus text exposition (/v1/metrics, metrics.prom) from known snapshots: the format's
// rules (checked by promtool and by tests/agent/prometheus_check.hpp), and each family's series.
#include "export/export.hpp"
#include "export/snapshot_fixture.hpp"
#include "prometheus_check.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using namespace hotscope;
namespace ht = hotscope::testing;

std::string prometheus(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_prometheus(snapshot, out);
  return out.str();
}

TEST(Prometheus, KnownSnapshotFollowsTheFormatRules) {
  const std::string text = prometheus(ht::known_snapshot());
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("# TYPE hotscope_function_calls_total counter\n"
                      "hotscope_function_calls_total{function=\"Tree::insert\",file=\"demo.cpp\","
                      "line=\"12\"} 1\n"),
            std::string::npos)
      << text;
  // load: 2 calls of 1.5 ms, in the fixed buckets.
  const std::string load = "{function=\"load\",file=\"demo.cpp\",line=\"12\"";
  EXPECT_NE(text.find("# TYPE hotscope_function_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + load + ",le=\"1e-07\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + load + ",le=\"0.001\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + load + ",le=\"0.0025\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + load + ",le=\"100\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + load + ",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(text.find("quantile"), std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_sum" + load + "} 0.003\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_count" + load + "} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_records_dropped_total 2\n"), std::string::npos);
  // Threads by name, never by tid (a new series on every restart).
  EXPECT_NE(text.find("hotscope_thread_records_dropped_total{thread=\"main\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_thread_records_dropped_total{thread=\"(unnamed)\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(text.find("tid"), std::string::npos);
  EXPECT_NE(text.find("hotscope_info{version=\"0.1.0\",clock_source=\"tsc\","
                      "frequency_origin=\"cpuid\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_series_last_value{series=\"heap\"} 10592\n"), std::string::npos);
}

// Prometheus aggregates series across processes: an absolute build path in `file` would split
// the same function built in two places.
TEST(Prometheus, FileIsTheBaseName) {
  Snapshot snapshot = ht::known_snapshot();
  snapshot.functions[0].file = "/home/builder/work/service/src/demo_main.cpp";
  const std::string text = prometheus(snapshot);
  EXPECT_NE(text.find("hotscope_function_calls_total{function=\"main\",file=\"demo_main.cpp\","
                      "line=\"12\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("/home/builder"), std::string::npos);
}

TEST(Prometheus, CpuTimeOfLiveThreadsOnly) {
  Snapshot snapshot = ht::known_snapshot();
  snapshot.threads[0].os = {"R", 1'500'000'000, 250'000'000, 3, 4};
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("# TYPE hotscope_thread_cpu_seconds_total counter\n"
                      "hotscope_thread_cpu_seconds_total{thread=\"main\",mode=\"system\"} 0.25\n"
                      "hotscope_thread_cpu_seconds_total{thread=\"main\",mode=\"user\"} 1.5\n#"),
            std::string::npos)
      << text;
}

TEST(Prometheus, QueueDepthAndWaitHistogram) {
  EXPECT_EQ(prometheus(ht::known_snapshot()).find("hotscope_queue_"), std::string::npos);
  Snapshot snapshot = ht::known_snapshot();
  QueueStats jobs;
  jobs.name = "jobs";
  jobs.pushed = 10;
  jobs.popped = 7;
  jobs.depth = 3;
  jobs.wait.calls = 7;
  jobs.wait.total_ns = 7'000'000;
  for (const std::uint64_t bound : kDurationBucketsNs) { // 3 waits of 0.5 ms, 4 of 1.5 ms
    jobs.wait.at_most_bucket.push_back(bound >= 1'500'000 ? 7 : bound >= 500'000 ? 3 : 0);
  }
  QueueStats idle;
  idle.name = "idle";
  snapshot.queues = {jobs, idle};
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  for (const char* line : {"hotscope_queue_depth{queue=\"jobs\"} 3\n",
                           "hotscope_queue_pushed_total{queue=\"jobs\"} 10\n",
                           "hotscope_queue_popped_total{queue=\"jobs\"} 7\n",
                           "# TYPE hotscope_queue_wait_seconds histogram\n",
                           "hotscope_queue_wait_seconds_bucket{queue=\"jobs\",le=\"0.00025\"} 0\n",
                           "hotscope_queue_wait_seconds_bucket{queue=\"jobs\",le=\"0.0005\"} 3\n",
                           "hotscope_queue_wait_seconds_bucket{queue=\"jobs\",le=\"0.0025\"} 7\n",
                           "hotscope_queue_wait_seconds_bucket{queue=\"jobs\",le=\"+Inf\"} 7\n",
                           "hotscope_queue_wait_seconds_sum{queue=\"jobs\"} 0.007\n",
                           "hotscope_queue_wait_seconds_count{queue=\"jobs\"} 7\n",
                           "hotscope_queue_wait_seconds_bucket{queue=\"idle\",le=\"+Inf\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

// promtool's verdict on `text`, when it is installed ("" when it accepts it).
std::string promtool_problems(const std::string& text) {
  if (std::string(PROMTOOL).empty()) {
    std::cout << "promtool not installed: checked by prometheus_check.hpp only\n";
    return "";
  }
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("hotscope-{}.prom", getpid())).string();
  std::ofstream(file) << text;
  const std::string command = std::string(PROMTOOL) + " check metrics <" + file + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (pipe != nullptr && fgets(buffer, sizeof buffer, pipe) != nullptr) {
    output += buffer;
  }
  const int status = pipe == nullptr ? -1 : pclose(pipe);
  std::filesystem::remove(file);
  return status == 0 ? "" : fmt::format("promtool: status {}: {}", status, output);
}

// Per lock name (two pthread mutexes of one name add up), the wait and hold histograms; the
// deadlocks standing, found and the inversions.
TEST(Prometheus, LockSeriesAndDeadlocks) {
  EXPECT_EQ(prometheus(ht::known_snapshot()).find("hotscope_lock"), std::string::npos);
  Snapshot snapshot = ht::known_snapshot_with_locks();
  LockStats other = snapshot.locks[1]; // another m2, at another address
  other.address = 0x55d0c0de2000;
  other.contended = 4;
  other.acquisitions = 7;
  snapshot.locks.push_back(other);
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_EQ(promtool_problems(text), "") << text;
  for (const char* line :
       {"hotscope_lock_acquisitions_total{lock=\"cache_mutex\"} 10\n",
        "hotscope_lock_acquisitions_total{lock=\"m2\"} 10\n",
        "hotscope_lock_contended_total{lock=\"cache_mutex\"} 2\n",
        "hotscope_lock_contended_total{lock=\"m2\"} 4\n",
        "# TYPE hotscope_lock_wait_seconds histogram\n",
        "hotscope_lock_wait_seconds_bucket{lock=\"cache_mutex\",le=\"1e-07\"} 0\n",
        "hotscope_lock_wait_seconds_bucket{lock=\"cache_mutex\",le=\"2.5e-07\"} 1\n",
        "hotscope_lock_wait_seconds_bucket{lock=\"cache_mutex\",le=\"5e-07\"} 2\n",
        "hotscope_lock_wait_seconds_count{lock=\"cache_mutex\"} 2\n",
        "hotscope_lock_wait_seconds_sum{lock=\"cache_mutex\"} 7e-07\n",
        "hotscope_lock_wait_seconds_bucket{lock=\"m2\",le=\"+Inf\"} 0\n",
        "# TYPE hotscope_lock_hold_seconds histogram\n",
        "hotscope_lock_hold_seconds_count{lock=\"cache_mutex\"} 10\n",
        "hotscope_lock_hold_seconds_sum{lock=\"cache_mutex\"} 0.01\n",
        "# TYPE hotscope_deadlocks gauge\nhotscope_deadlocks 1\n",
        "hotscope_deadlocks_found_total 1\n", "hotscope_lock_inversions_total 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

TEST(Prometheus, LabelValuesAreEscapedAndValidUtf8) {
  Snapshot snapshot = ht::known_snapshot();
  snapshot.functions[0].name = "say \"hi\"\\n\nnow \xff end";
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("function=\"say \\\"hi\\\"\\\\n\\nnow \xEF\xBF\xBD end\""), std::string::npos)
      << text;
}

TEST(Prometheus, EntriesWithTheSameLabelsBecomeOneSeries) {
  Snapshot snapshot = ht::known_snapshot();
  // Two instantiations of one template, shortened to the same name at the same line.
  snapshot.functions.push_back(ht::function_stats("load", 3, 9'000'000, 9'000'000));
  snapshot.threads.push_back(snapshot.threads[0]); // a tid reused under the same name
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  const std::string load = "{function=\"load\",file=\"demo.cpp\",line=\"12\"";
  EXPECT_NE(text.find("hotscope_function_calls_total" + load + "} 5\n"), std::string::npos);
  // Buckets add up exactly: 2 calls of 1.5 ms and 3 of 3 ms.
  for (const auto& [le, count] :
       {std::pair{"0.001", 0}, {"0.0025", 2}, {"0.005", 5}, {"+Inf", 5}}) {
    EXPECT_NE(text.find(fmt::format("hotscope_function_duration_seconds_bucket{},le=\"{}\"}} {}\n",
                                    load, le, count)),
              std::string::npos)
        << le;
  }
  EXPECT_NE(text.find("hotscope_function_duration_seconds_sum" + load + "} 0.012\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_thread_records_dropped_total{thread=\"main\"} 2\n"),
            std::string::npos);
}

TEST(Prometheus, AllocationCountersOnlyWhenAllocationsWereRecorded) {
  EXPECT_EQ(prometheus(ht::known_snapshot()).find("allocated"), std::string::npos);
  Snapshot snapshot = ht::known_snapshot_with_allocations();
  FunctionStats open; // a scope still open that has allocated: no call has ended
  open.name = "serve";
  open.file = "demo.cpp";
  open.line = 40;
  open.allocated_self = open.allocated_total = {64, 1};
  snapshot.functions.push_back(open);
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("# TYPE hotscope_allocated_bytes_total counter\n"
                      "hotscope_allocated_bytes_total 2098798\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hotscope_allocated_blocks_total 10\n"), std::string::npos);
  const std::string main = "{function=\"main\",file=\"demo.cpp\",line=\"12\"}";
  EXPECT_NE(text.find("hotscope_function_self_allocated_bytes_total" + main + " 1536\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_allocated_bytes_total" + main + " 2098688\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_self_allocated_blocks_total" + main + " 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_allocated_blocks_total" + main + " 8\n"),
            std::string::npos);
  const std::string serve = "{function=\"serve\",file=\"demo.cpp\",line=\"40\"";
  EXPECT_NE(text.find("hotscope_function_duration_seconds_bucket" + serve + ",le=\"+Inf\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("hotscope_function_duration_seconds_count" + serve + "} 0\n"),
            std::string::npos);
}

TEST(Prometheus, HeapFiguresOnlyWhenTheHeapProfilerRuns) {
  EXPECT_EQ(prometheus(ht::known_snapshot()).find("hotscope_heap_"), std::string::npos);
  Snapshot snapshot = ht::known_snapshot();
  snapshot.heap = HeapFigures{{5000, 40, 1200, 7, 3000, 20}, "sampled"};
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  for (const char* line : {"hotscope_heap_allocated_bytes_total{mode=\"sampled\"} 5000\n",
                           "hotscope_heap_allocated_blocks_total{mode=\"sampled\"} 40\n",
                           "# TYPE hotscope_heap_live_bytes gauge\n"
                           "hotscope_heap_live_bytes{mode=\"sampled\"} 1200\n",
                           "hotscope_heap_live_blocks{mode=\"sampled\"} 7\n",
                           "hotscope_heap_peak_bytes{mode=\"sampled\"} 3000\n",
                           "hotscope_heap_peak_blocks{mode=\"sampled\"} 20\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

TEST(Prometheus, TheProfilersMemoryIsOneGaugePerPart) {
  Snapshot snapshot = ht::known_snapshot();
  snapshot.memory = {1 << 20, 65536, 2048, 4096};
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("# TYPE hotscope_memory_bytes gauge\n"
                      "hotscope_memory_bytes{part=\"rings\"} 1048576\n"
                      "hotscope_memory_bytes{part=\"trace_window\"} 65536\n"
                      "hotscope_memory_bytes{part=\"statistics\"} 2048\n"
                      "hotscope_memory_bytes{part=\"slow_calls\"} 4096\n"),
            std::string::npos)
      << text;
}

// The CPU sampler's counters, 0 while it is off.
TEST(Prometheus, CpuSamplesAndTheLostOnes) {
  EXPECT_NE(prometheus(ht::known_snapshot()).find("\nhotscope_cpu_samples_total 0\n"),
            std::string::npos);
  Snapshot snapshot = ht::known_snapshot();
  snapshot.cpu.samples = 1234;
  snapshot.cpu.lost = 5;
  const std::string text = prometheus(snapshot);
  EXPECT_EQ(ht::prometheus_problems(text), std::vector<std::string>{}) << text;
  EXPECT_NE(text.find("# TYPE hotscope_cpu_samples_total counter\nhotscope_cpu_samples_total "
                      "1234\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE hotscope_cpu_samples_lost_total counter\n"
                      "hotscope_cpu_samples_lost_total 5\n"),
            std::string::npos)
      << text;
}

std::string openmetrics(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_openmetrics(snapshot, out);
  return out.str();
}

SlowCall kept_call(const Snapshot& snapshot, std::uint64_t id, const std::string& function,
                   std::uint64_t start_ns, std::uint64_t duration_ns) {
  SlowCall call;
  call.id = id;
  call.function = static_cast<std::uint32_t>(
      std::find(snapshot.names.begin(), snapshot.names.end(), function) - snapshot.names.begin());
  call.start_ns = start_ns;
  call.duration_ns = duration_ns;
  return call;
}

// docs/slow.md, "Exemplars": each bucket's exemplar is the slowest kept call inside it, its end
// as the timestamp; a bucket that counts no call has none; the Prometheus text has none.
TEST(Prometheus, OpenMetricsBucketsCarryTheSlowestKeptCallInside) {
  Snapshot snapshot = ht::known_snapshot(); // load: 2 calls of 1.5 ms; main: 1 of 8.001 ms
  FunctionStats& main = snapshot.functions[0];
  main.stats.calls = 2; // and one of 150 s, past the last finite bucket
  main.stats.total_ns += 150'000'000'000;
  snapshot.slow_calls = {kept_call(snapshot, 20, "main", 1'001'000, 8'000'000),
                         kept_call(snapshot, 21, "main", 0, 150'000'000'000),
                         kept_call(snapshot, 17, "load", 1'500'000, 1'500'000),
                         kept_call(snapshot, 18, "load", 2'000'000, 1'400'000),
                         kept_call(snapshot, 19, "load", 4'000'000, 900'000),
                         kept_call(snapshot, 22, "(not a function)", 0, 1'000)};
  snapshot.slow_calls.back().function = 999; // past the names: no series
  const std::string text = openmetrics(snapshot);
  const std::string load =
      "hotscope_function_duration_seconds_bucket{function=\"load\",file=\"demo."
      "cpp\",line=\"12\",le=";
  const std::string main_bucket = "hotscope_function_duration_seconds_bucket{function=\"main\","
                                  "file=\"demo.cpp\",line=\"12\",le=";
  for (const std::string& line :
       {load + "\"0.001\"} 0\n", load + "\"0.0025\"} 2 # {call_id=\"17\"} 0.0015 1700000000.003\n",
        load + "\"0.005\"} 2\n", load + "\"+Inf\"} 2\n",
        main_bucket + "\"0.01\"} 1 # {call_id=\"20\"} 0.008 1700000000.009001\n",
        main_bucket + "\"+Inf\"} 2 # {call_id=\"21\"} 150 1700000150\n",
        std::string("# TYPE hotscope_function_calls counter\nhotscope_function_calls_total{")}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_EQ(text.find("call_id=\"18\""), std::string::npos);
  EXPECT_EQ(text.find("call_id=\"19\""), std::string::npos); // its bucket counts no call
  EXPECT_EQ(text.find("call_id=\"22\""), std::string::npos);
  EXPECT_EQ(text.find("Tree::insert\",file=\"demo.cpp\",line=\"12\",le=\"0.005\"} 1 #"),
            std::string::npos);
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
  EXPECT_EQ(text.find("_total counter"), std::string::npos) << text;
  EXPECT_EQ(prometheus(snapshot).find("call_id"), std::string::npos);
}

TEST(Prometheus, TheCheckerCatchesBrokenExpositions) {
  EXPECT_FALSE(ht::prometheus_problems("# HELP a_total x\n# TYPE a_total counter\na_total 1")
                   .empty());                                   // no final line feed
  EXPECT_FALSE(ht::prometheus_problems("a_total 1\n").empty()); // no TYPE
  EXPECT_FALSE(
      ht::prometheus_problems("# HELP a_total x\n# TYPE a_total counter\na_total{l=\"\\d\"} 1\n")
          .empty()); // bad escape
  EXPECT_FALSE(ht::prometheus_problems("# HELP a x\n# TYPE a gauge\n# HELP b x\n"
                                       "# TYPE b gauge\nb 1\na 2\n")
                   .empty()); // not contiguous
  EXPECT_FALSE(ht::prometheus_problems(
                   "# HELP s x\n# TYPE s summary\ns{quantile=\"0.9\"} 1\ns{quantile=\"0.5\"} 1\n"
                   "s_sum 1\ns_count 1\n")
                   .empty()); // quantiles out of order
  const std::string histogram = "# HELP h x\n# TYPE h histogram\n";
  EXPECT_TRUE(ht::prometheus_problems(histogram + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
                                                  "h_sum 3\nh_count 2\n")
                  .empty());
  EXPECT_FALSE(ht::prometheus_problems(histogram + "h_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\n"
                                                   "h_sum 3\nh_count 2\n")
                   .empty()); // not cumulative
  EXPECT_FALSE(ht::prometheus_problems(histogram + "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
                                                   "h_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n")
                   .empty()); // le descending
  EXPECT_FALSE(ht::prometheus_problems(histogram + "h_bucket{le=\"1\"} 1\nh_sum 3\nh_count 2\n")
                   .empty()); // no +Inf bucket
}

} // namespace
