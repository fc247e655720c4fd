#include "guest/runner/session.hpp"

#include "clock/clock.hpp"

#include "hotscope_guest_abi.h"

#include <cstdio>
#include <filesystem>
#include <vector>

namespace hotscope::guest {

Session::Session(const RunnerOptions& options, std::string track_name, const GuestMemory& memory,
                 ClockAnchor clock, Symbolizer symbolizer, GuestImage image)
    : options_(options), name_(std::move(track_name)), memory_(memory), image_(std::move(image)),
      symbolizer_(symbolizer), trace_(name_, memory, clock, symbolizer),
      heap_(clock.host_ticks, symbolizer, std::filesystem::path(image_.path).filename().string(),
            [this](const std::string& line) { report(line); }) {
  image_.track = name_;
  if (!options_.print) {
    options_.print = [](std::string_view text) {
      std::fprintf(stdout, "guest: %.*s\n", static_cast<int>(text.size()), text.data());
      std::fflush(stdout);
    };
  }
  if (!options_.diagnostic) {
    options_.diagnostic = [](const std::string& line) {
      std::fprintf(stderr, "hotscope: %s\n", line.c_str());
    };
  }
  intern_host_calls();
}

// The span names live in the process's name store, as the guest's own names do: the trace keeps
// their addresses.
void Session::intern_host_calls() {
  std::vector<NameStore::Name> names(kFunctionCalls + options_.host_functions.size());
  names[kFlushCall].name = "host_call flush";
  names[kPrintCall].name = "host_call print";
  names[kUnknownCall].name = "host_call (unknown function)";
  for (std::size_t i = 0; i < options_.host_functions.size(); ++i) {
    names[kFunctionCalls + i].name = "host_call " + options_.host_functions[i].name;
  }
  for (NameStore::Name& name : names) {
    name.is_location = true;
  }
  host_calls_.assign(names.size(), 0);
  std::size_t entries = 0;
  if (const std::optional<std::string> problem =
          NameStore::process().intern(names, host_calls_, entries)) {
    host_calls_.assign(names.size(), 0);
    report("host calls are not shown on the track: " + *problem);
  }
}

void Session::host_span(std::size_t call, std::uint64_t begin) {
  if (host_calls_[call] != 0) {
    trace_.host_span(host_calls_[call], begin, clock::now_ticks());
  }
}

Session::~Session() {
  finish();
}

void Session::begin_call() {
  flushes_this_call_ = 0;
  ++counts_.calls;
}

bool Session::flush(std::uint64_t address, std::uint64_t count) {
  ++counts_.flushes;
  if (++flushes_this_call_ > options_.max_flushes_per_call) {
    stop("flushed more than " + std::to_string(options_.max_flushes_per_call) +
         " times in one call (a flood of exits): stopped. If the guest needs that many, raise "
         "the limit (RunnerOptions::max_flushes_per_call, hotscope vm run --max-flushes)");
    return false;
  }
  const std::uint64_t begin = clock::now_ticks();
  if (const std::optional<Diagnostic> problem =
          trace_.flush(address, count, HOTSCOPE_GUEST_CAPACITY)) {
    report(problem->to_string());
  }
  heap_.apply(trace_.heap_events());
  host_span(kFlushCall, begin);
  return true;
}

std::uint64_t Session::host_call(std::uint64_t function, std::uint64_t argument) {
  ++counts_.host_calls;
  const std::uint64_t begin = clock::now_ticks();
  if (function >= options_.host_functions.size()) {
    if (++counts_.unknown_host_calls == 1) {
      report("host call of function " + std::to_string(function) + ", which the host does not " +
             "provide (it has " + std::to_string(options_.host_functions.size()) +
             "); the guest gets all ones, and later ones are only counted");
    }
    host_span(kUnknownCall, begin);
    return ~std::uint64_t{0};
  }
  const std::uint64_t result = options_.host_functions[function].call(argument);
  host_span(kFunctionCalls + function, begin);
  return result;
}

void Session::print(std::uint64_t address, std::uint64_t length) {
  ++counts_.prints;
  const std::uint64_t begin = clock::now_ticks();
  print_text(address, length);
  host_span(kPrintCall, begin);
}

void Session::print_text(std::uint64_t address, std::uint64_t length) {
  if (length > HOTSCOPE_GUEST_PRINT_MAX) {
    report("print host call of " + std::to_string(length) + " bytes refused: the limit is " +
           std::to_string(HOTSCOPE_GUEST_PRINT_MAX) + " (HOTSCOPE_GUEST_PRINT_MAX)");
    return;
  }
  std::string text(length, '\0');
  if (!memory_.read(address, text.data(), text.size())) {
    char where[64];
    std::snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(address));
    report(std::string("print host call refused: its ") + std::to_string(length) + " bytes at " +
           where + " are not inside guest memory");
    return;
  }
  for (char& c : text) { // the guest's text must not drive the host's terminal
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      c = '?';
    }
  }
  options_.print(text);
}

void Session::report(const std::string& problem) {
  ++counts_.diagnostics;
  options_.diagnostic(name_ + ": " + problem);
}

void Session::stop(const std::string& why) {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  report(why);
  finish();
}

void Session::crash(GuestCrash crash, std::uint64_t address, std::uint64_t count) {
  if (stopped_) {
    return;
  }
  if (count != 0) {
    if (const std::optional<Diagnostic> problem =
            trace_.flush(address, count, HOTSCOPE_GUEST_CAPACITY)) {
      report("the records left in its buffer at the crash: " + problem->to_string());
    } else {
      heap_.apply(trace_.heap_events());
      crash.unflushed = count;
    }
  }
  crash.image = image_;
  crash.track = trace_.track();
  if (!crash.registers.empty() && symbolizer_) {
    crash.function = symbolizer_(crash.registers.front().second);
  }
  if (options_.on_crash) {
    options_.on_crash(crash);
  }
  stop(crash.exit);
}

void Session::finish() {
  if (!finished_) {
    finished_ = true;
    trace_.finish();
  }
}

std::string default_track_name(const std::string& elf_path) {
  return "guest: " + std::filesystem::path(elf_path).stem().string();
}

} // namespace hotscope::guest
