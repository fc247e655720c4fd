// A guest's crash report, written by the host (docs/crash.md, "Guests"): crash.<pid>.txt and
// crash.<pid>.json in the crash reports' formats, from what the runner saw of the crash and the
// process's trace at that moment (the guest's track and the host thread that called it).
#pragma once

#include "guest/runner/runner.hpp"

#include <string>

namespace hotscope::cli {

// Writes the report of `crash` into `dir`, the trace taken now. Returns "" or why it could not.
std::string write_guest_crash(const guest::GuestCrash& crash, const std::string& dir);

} // namespace hotscope::cli
