#include "crash_command.hpp"

#include "agent_client.hpp"
#include "conventions.hpp"
#include "names/names.hpp"
#include "profiles/profiles.hpp"
#include "symbols/symbols.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

namespace hotscope::cli {
namespace {

using nlohmann::json;

// The objects' symbol tables, each file read once.
class Objects {
public:
  explicit Objects(const std::vector<std::string>& binaries) : binaries_(binaries) {}

  // The table naming a frame in `module` (built as `build_id`); nullptr with `why` when none.
  const symbols::SymbolTable* find(const std::string& module, const std::string& build_id,
                                   std::string& why) {
    const std::string file_name = std::filesystem::path(module).filename();
    for (const std::string& binary : binaries_) {
      const symbols::SymbolTable& table = open(binary);
      if (build_id.empty() ? std::filesystem::path(binary).filename() == file_name
                           : table.build_id() == build_id) {
        return &table;
      }
    }
    const symbols::SymbolTable& table = open(module);
    if (table.size() == 0) {
      why = "not readable here: pass the object with --binary";
      return nullptr;
    }
    if (!build_id.empty() && table.build_id() != build_id) {
      why = "the file there now is another build: pass the crashed one with --binary";
      return nullptr;
    }
    return &table;
  }

private:
  const symbols::SymbolTable& open(const std::string& path) {
    std::unique_ptr<symbols::SymbolTable>& table = tables_[path];
    if (table == nullptr) {
      table = std::make_unique<symbols::SymbolTable>(symbols::SymbolTable::of_file(path));
    }
    return *table;
  }

  const std::vector<std::string>& binaries_;
  std::map<std::string, std::unique_ptr<symbols::SymbolTable>> tables_;
};

std::string heading(const json& report) {
  std::string text = fmt::format("{} (pid {}): ", report.value("process", "?"),
                                 report.value("pid", std::uint64_t{0}));
  if (const auto guest = report.find("guest");
      guest != report.end()) { // how it ended, signal included
    text += fmt::format("guest ({}): {}", guest->value("transport", "?"), guest->value("exit", ""));
  } else if (const auto signal = report.find("signal"); signal != report.end()) {
    text += fmt::format("{} ({})", signal->value("name", "?"), signal->value("code_name", ""));
    if (signal->contains("address")) {
      text += fmt::format(" at {:#x}", signal->at("address").get<std::uint64_t>());
    }
  } else {
    const json& terminate = report.at("terminate");
    text += "std::terminate";
    if (terminate.at("exception").is_string()) {
      text += ": uncaught " +
              names::demangle_type(terminate.at("exception").get<std::string>().c_str());
    }
    if (terminate.at("what").is_string()) {
      text += ": " + terminate.at("what").get<std::string>();
    }
  }
  const json& thread = report.at("thread");
  return text + fmt::format(", in thread {} (tid {})\n", thread.value("name", ""),
                            thread.value("tid", std::uint64_t{0}));
}

std::string backtrace(const json& report, Objects& objects) {
  std::string text = "\nbacktrace:\n";
  std::size_t index = 0;
  for (const json& frame : report.at("backtrace")) {
    const auto address = frame.at("address").get<std::uint64_t>();
    text += fmt::format("  #{:<2} {:#x}", index, address);
    if (frame.contains("module")) {
      const std::string module = frame.at("module");
      const auto offset = frame.at("offset").get<std::uint64_t>();
      std::string why;
      const symbols::SymbolTable* table = objects.find(module, frame.value("build_id", ""), why);
      // A return address is after its call: the call's own address names the caller.
      const std::uint64_t at = index == 0 ? offset : offset - 1;
      const std::string_view symbol =
          table == nullptr ? std::string_view() : table->names_at({&at, 1}).front();
      const std::string name = symbol.empty() ? "??" : names::demangle(std::string(symbol).c_str());
      text += fmt::format(" {} in {}+{:#x}", name, module, offset);
      if (!why.empty()) {
        text += " (" + why + ")";
      }
    } else if (frame.contains("function")) { // a guest's, named by the host from its image
      text += fmt::format(" {}+{:#x} (guest)", frame.at("function").get<std::string>(),
                          frame.at("function_offset").get<std::uint64_t>());
    }
    text += "\n";
    ++index;
  }
  return text;
}

std::string threads(const json& report) {
  std::string text = "\nthreads:\n";
  for (const json& thread : report.at("threads")) {
    text += fmt::format("  {} (tid {}){}", thread.value("name", ""),
                        thread.value("tid", std::uint64_t{0}),
                        thread.value("crashed", false) ? ", crashed" : "");
    std::string scopes;
    for (const json& scope : thread.at("open_scopes")) {
      scopes += fmt::format("{}{} ({:.3f} ms)", scopes.empty() ? "" : " > ",
                            scope.value("name", ""), scope.value("open_ns", 0.0) / 1e6);
    }
    text += ": " + (scopes.empty() ? "no scope open" : scopes) + "\n";
  }
  return text;
}

} // namespace

std::string crash_text(const json& report, const std::vector<std::string>& binaries) {
  Objects objects(binaries);
  return heading(report) + backtrace(report, objects) + threads(report);
}

CrashCommand::CrashCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "crash", "Name the native frames of a crash report (crash.<pid>.json, docs/crash.md)");
  command_->add_option("file", file_, "The crash.<pid>.json a crashed process wrote")->required();
  command_->add_option("--binary", binaries_,
                       "The crashed program or a library it loaded, as it ran (matched by build "
                       "id): for a report from another machine; several allowed");
}

std::optional<int> CrashCommand::run() const {
  if (!command_->parsed()) {
    return std::nullopt;
  }
  std::ifstream in(file_);
  const json report = json::parse(in, nullptr, false);
  if (!in || report.is_discarded() || report.value("format", "") != "hotscope-crash") {
    std::fprintf(stderr, "hotscope: %s: not a crash report (crash.<pid>.json, docs/crash.md)\n",
                 file_.c_str());
    return 1;
  }
  try {
    profiles::check_crash_report(report, file_);
    std::fputs(crash_text(report, binaries_).c_str(), stdout);
  } catch (const Failure& damaged) { // names the file and the key
    std::fprintf(stderr, "hotscope: %s\n", damaged.what());
    return 1;
  } catch (const json::exception& error) { // a key the checks leave to the reader
    std::fprintf(stderr, "hotscope: %s: %s\n", file_.c_str(), error.what());
    return 1;
  }
  return 0;
}

} // namespace hotscope::cli
