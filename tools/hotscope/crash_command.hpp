// `hotscope crash FILE [--binary PATH]...`: a crash report (crash.<pid>.json, docs/crash.md) with
// its native frames named. The crashing process writes addresses only (naming them is not safe in
// a signal handler); this names them from the objects' symbols, matched by build id, on this
// machine or another one given the binaries.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hotscope::cli {

class CrashCommand {
public:
  explicit CrashCommand(CLI::App& app);
  // The exit status when `hotscope crash` was given, else nothing.
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
  std::string file_;
  std::vector<std::string> binaries_;
};

// The report as text. A frame's object is the --binary whose build id is the frame's (or, when
// the report has none, whose file name is the object's), else the file at the path the report
// names when its build id is the frame's.
std::string crash_text(const nlohmann::json& report, const std::vector<std::string>& binaries);

} // namespace hotscope::cli
