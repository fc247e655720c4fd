#include "guest/runner/session.hpp"

#include "hotscope_guest_abi.h"

#include <cstdio>
#include <filesystem>
#include <vector>

namespace hotscope::guest {

Session::Session(const RunnerOptions& options, std::string track_name, const GuestMemory& memory,
                 ClockAnchor clock, Symbolizer symbolizer)
    : options_(options), name_(std::move(track_name)), memory_(memory),
      trace_(name_, memory, clock, std::move(symbolizer)) {
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
  if (const std::optional<Diagnostic> problem =
          trace_.flush(address, count, HOTSCOPE_GUEST_CAPACITY)) {
    report(problem->to_string());
  }
  return true;
}

void Session::print(std::uint64_t address, std::uint64_t length) {
  ++counts_.prints;
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
