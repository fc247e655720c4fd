// hotscope-vm: the worker behind `hotscope vm run` (docs/guest.md, "hotscope vm run").
//   hotscope vm run GUEST [--calls N] [--out DIR] [--process] [--time-limit-ms MS]
// starts a guest (a KVM micro-VM, or with --process a child process), calls its dispatch entry
// N times, each call inside the host scopes dispatch_function > call_guest_function, and writes
// the usual reports into DIR with the guest as its own track, the guest image's identity, and the
// guest's heap profile (guest-NAME.heap.json) when its allocator reported blocks. A separate
// executable because it links libhotscope, whose runtime the `hotscope` command itself must not
// start.
#include "atomic_file/atomic_file.hpp"
#include "clock/clock.hpp"
#include "config/config.hpp"
#include "conventions.hpp"
#include "export/export.hpp"
#include "guest/runner/runner.hpp"
#include "guest_crash.hpp"
#include "runtime/runtime.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string guest;
  std::uint64_t calls = 10;
  std::string out_dir = "hotscope-vm-out";
  bool process = false;
  unsigned time_limit_ms = 5000;
  std::uint64_t max_flushes = 100000;
};

// Exit codes (and hotscope::cli::kUsageError, 2).
constexpr int kGuestMisbehaved = 1; // stopped, or batches rejected: see the diagnostics
constexpr int kCannotStart = 3;

// Where the reports go, for the reports written on a signal (HOTSCOPE_ON_SIGNAL=report, which
// `hotscope vm` sets): set once, before the guest starts. The mutex keeps them from being written
// at the same time as those of the run's end.
std::string reports_dir;
std::vector<hotscope::GuestImage> guest_images;
std::mutex reports_mutex;

std::string write_reports() {
  const std::lock_guard lock(reports_mutex);
  hotscope::Snapshot snapshot = hotscope::trace::snapshot();
  snapshot.guest_images = guest_images;
  return hotscope::exporters::write_all(snapshot, reports_dir);
}

// What the guest recorded until the signal came; the signal then ends hotscope-vm.
void write_reports_on_signal() {
  if (const std::string problem = write_reports(); !problem.empty()) {
    std::fprintf(stderr, "hotscope: %s\n", problem.c_str());
  }
}

// The functions the host offers its guests, by number (hotscope_guest_host_call).
std::vector<hotscope::guest::HostFunction> host_functions() {
  return {{"host_time_ns", [](std::uint64_t) { return hotscope::clock::monotonic_ns(); }}};
}

// The guest's heap profile, written when its allocator reported anything.
struct HeapOutput {
  std::string problem; // "" or why it could not be written
  std::string file;    // "guest-NAME.heap.json", or "" when not written
  std::string summary; // DHAT's Total / At t-gmax / At t-end, and what did not add up
};

HeapOutput write_heap_profile(const hotscope::guest::Runner& runner, const std::string& command) {
  const hotscope::guest::GuestHeap& heap = runner.heap();
  if (!heap.used()) {
    return {};
  }
  HeapOutput output;
  output.file =
      "guest-" + std::filesystem::path(runner.image().path).stem().string() + ".heap.json";
  const std::string path = (std::filesystem::path(reports_dir) / output.file).string();
  const hotscope::HeapProfile profile = heap.profile(hotscope::clock::now_ticks(), command);
  if (const std::string problem = hotscope::atomic_file::write(
          path, [&](std::ostream& out) { hotscope::exporters::write_dhat_json(profile, out); });
      !problem.empty()) {
    output.problem = "cannot write " + path + ": " + problem;
    return output;
  }
  const hotscope::heap::Totals totals = heap.totals();
  const hotscope::guest::GuestHeapCounts& counts = heap.counts();
  output.summary = fmt::format(
      "hotscope vm: guest heap: Total: {} bytes in {} blocks; At t-gmax: {} bytes in {} blocks; "
      "At t-end: {} bytes in {} blocks; {} unknown frees, {} double frees, {} unknown reallocs",
      totals.total_bytes, totals.total_blocks, totals.peak_bytes, totals.peak_blocks,
      totals.live_bytes, totals.live_blocks, counts.unknown_frees, counts.double_frees,
      counts.unknown_reallocs);
  return output;
}

// `hotscope vm run`'s options, declared on `app`.
void add_options(CLI::App& app, Options& options) {
  hotscope::cli::apply_conventions(app);
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "Run a guest, call its entry N times, write reports");
  run->add_option("guest", options.guest,
                  "The guest image: a VM guest (guest/vm.ld), or with --process a process guest")
      ->required();
  run->add_option("--calls", options.calls, "Calls into the guest's dispatch entry")
      ->capture_default_str()
      ->check(hotscope::cli::whole_number(1, 1'000'000'000));
  run->add_option("--out", options.out_dir, "Directory for the reports")->capture_default_str();
  run->add_flag("--process", options.process,
                "Run the guest as a child process (memfd channel) instead of in a KVM VM");
  run->add_option("--time-limit-ms", options.time_limit_ms, "Longest one call may run")
      ->capture_default_str()
      ->check(hotscope::cli::whole_number(1, 3'600'000));
  run->add_option("--max-flushes", options.max_flushes,
                  "Most flushes one call may make; more is a flood and stops the guest")
      ->capture_default_str()
      ->check(hotscope::cli::whole_number(1, 1'000'000'000));
}

// The run's one-paragraph summary on standard output.
void print_summary(const hotscope::guest::Runner& runner, std::uint64_t returned,
                   const Options& options, const HeapOutput& heap) {
  const hotscope::guest::RunnerCounts& counts = runner.counts();
  const hotscope::guest::GuestCounts& records = runner.trace_counts();
  std::printf("%s",
              fmt::format("hotscope vm: {} of {} calls returned; {} flushes: {} batches accepted "
                          "({} records), {} rejected ({} records); {} nesting repairs; {} prints; "
                          "{} host calls; {} diagnostics\n{}reports in {}/ (trace.txt, "
                          "trace.json, report.txt, stats.json, trace.folded{})\n",
                          returned, options.calls, counts.flushes, records.batches_accepted,
                          records.records_accepted, records.batches_rejected,
                          records.records_rejected, records.nesting_repairs, counts.prints,
                          counts.host_calls, counts.diagnostics,
                          heap.summary.empty() ? "" : heap.summary + "\n", options.out_dir,
                          heap.file.empty() ? "" : ", " + heap.file)
                  .c_str());
}

} // namespace

// The host's side of each call, as an embedder's would be: at namespace scope so that the
// reports name them plainly.
std::uint64_t call_guest_function(hotscope::guest::Runner& runner, std::uint64_t argument) {
  HOTSCOPE_FUNCTION();
  return runner.call(argument).value;
}

std::uint64_t dispatch_function(hotscope::guest::Runner& runner, std::uint64_t argument) {
  HOTSCOPE_FUNCTION();
  return call_guest_function(runner, argument);
}

int main(int argc, char** argv) {
  CLI::App app{"hotscope vm: run a guest under guest tracing", "hotscope vm"};
  Options options;
  add_options(app, options);
  if (const auto status = hotscope::cli::parse_command_line(app, argc, argv)) {
    return *status;
  }
  // Before the guest runs: a run whose reports cannot be written is not worth starting.
  if (const std::string problem = hotscope::config::check_out_dir(options.out_dir, "--out ");
      !problem.empty()) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return hotscope::cli::kUsageError;
  }
  reports_dir = options.out_dir;
  hotscope::runtime::ensure_started();
  hotscope::runtime::report_on_signal(write_reports_on_signal);

  hotscope::guest::RunnerOptions runner_options;
  runner_options.time_limit = std::chrono::milliseconds(options.time_limit_ms);
  runner_options.max_flushes_per_call = options.max_flushes;
  runner_options.host_functions = host_functions();
  runner_options.on_crash = [](const hotscope::guest::GuestCrash& crash) {
    const std::string problem = hotscope::cli::write_guest_crash(crash, reports_dir);
    std::fprintf(stderr, "hotscope: %s\n",
                 (problem.empty() ? fmt::format("the guest's crash report: {}/crash.{}.txt",
                                                reports_dir, crash.pid)
                                  : problem)
                     .c_str());
  };
  std::string error;
  std::unique_ptr<hotscope::guest::Runner> runner =
      options.process ? hotscope::guest::start_process_guest(options.guest, runner_options, error)
                      : hotscope::guest::start_kvm_guest(options.guest, runner_options, error);
  if (!runner) {
    std::fprintf(stderr, "hotscope: %s\n", error.c_str());
    return kCannotStart;
  }
  {
    const std::lock_guard lock(reports_mutex);
    guest_images.push_back(runner->image());
  }
  std::uint64_t returned = 0;
  for (std::uint64_t i = 0; i < options.calls && !runner->stopped(); ++i) {
    dispatch_function(*runner, i);
    returned += runner->stopped() ? 0 : 1;
  }
  runner->finish();

  std::string command = "hotscope vm";
  for (int i = 1; i < argc; ++i) {
    command += std::string(" ") + argv[i];
  }
  if (const std::string problem = write_reports(); !problem.empty()) {
    std::fprintf(stderr, "hotscope: %s\n", problem.c_str());
    return kCannotStart;
  }
  const HeapOutput heap = write_heap_profile(*runner, command);
  if (!heap.problem.empty()) {
    std::fprintf(stderr, "hotscope: %s\n", heap.problem.c_str());
    return kCannotStart;
  }
  print_summary(*runner, returned, options, heap);
  return runner->stopped() || runner->counts().diagnostics != 0 ? kGuestMisbehaved : 0;
}
