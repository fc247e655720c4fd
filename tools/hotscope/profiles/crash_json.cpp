// The checks of a crash report (crash.<pid>.json, docs/crash.md) before `hotscope crash` reads
// it: each key the command reads has its type, so that a damaged report is refused in one line
// naming the key, as a damaged stats.json or heap.json is.
#include "checker.hpp"

namespace hotscope::cli::profiles {

void check_crash_report(const nlohmann::json& report, const std::string& source) {
  const Checker checker(source, "a crash report");
  checker.keys(report, "",
               {{"process", Type::String},
                {"pid", Type::Count},
                {"signal", Type::Object},
                {"terminate", Type::Object},
                {"guest", Type::Object},
                {"thread", Type::Object, true},
                {"backtrace", Type::Array, true},
                {"threads", Type::Array, true}});
  if (const auto signal = report.find("signal"); signal != report.end()) {
    checker.keys(*signal, "\"signal\"",
                 {{"name", Type::String}, {"code_name", Type::String}, {"address", Type::Count}});
  }
  checker.keys(report.at("thread"), "\"thread\"", {{"name", Type::String}, {"tid", Type::Count}});
  checker.elements(report, "", "backtrace",
                   [&](const nlohmann::json& frame, const std::string& at) {
                     checker.keys(frame, at,
                                  {{"address", Type::Count, true},
                                   {"module", Type::String},
                                   {"offset", Type::Count},
                                   {"build_id", Type::String},
                                   {"function", Type::String},
                                   {"function_offset", Type::Count}});
                   });
  checker.elements(report, "", "threads", [&](const nlohmann::json& thread, const std::string& at) {
    checker.keys(thread, at,
                 {{"name", Type::String},
                  {"tid", Type::Count},
                  {"crashed", Type::Bool},
                  {"open_scopes", Type::Array, true}});
    checker.elements(
        thread, at, "open_scopes", [&](const nlohmann::json& scope, const std::string& scope_at) {
          checker.keys(scope, scope_at, {{"name", Type::String}, {"open_ns", Type::Number}});
        });
  });
}

} // namespace hotscope::cli::profiles
