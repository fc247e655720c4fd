#include "conventions.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace hotscope::cli {
namespace {

// The command line's deepest command, as the user would type it: "hotscope trace".
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  const CLI::App* command = &app;
  while (true) {
    const std::vector<const CLI::App*> chosen =
        command->get_subcommands([](const CLI::App* subcommand) { return subcommand->parsed(); });
    if (chosen.empty()) {
      return path;
    }
    command = chosen.front();
    path += " " + command->get_name();
  }
}

std::string one_line(const CLI::App* top, const CLI::Error& error) {
  const CLI::App& app = *top;
  const std::string help = command_path(app);
  if (help == app.get_name() && app.get_require_subcommand_min() > 0) {
    // No command was recognised: name what was given instead, if anything.
    for (const std::string& argument : app.remaining()) {
      if (!argument.empty() && argument.front() != '-') {
        return fmt::format("hotscope: unknown command '{}'; see {} --help\n", argument, help);
      }
    }
    if (error.get_name() == "RequiredError") {
      return fmt::format("hotscope: say which command to run; see {} --help\n", help);
    }
  }
  std::string message = error.what();
  // CLI11 says "--seconds: must be ...": a person writes "--seconds must be ...".
  if (error.get_name() == "ValidationError") {
    if (const std::size_t colon = message.find(": "); colon != std::string::npos) {
      message.erase(colon, 1);
    }
  }
  return fmt::format("hotscope: {}; see {} --help\n", message, help);
}

} // namespace

void apply_conventions(CLI::App& app) {
  app.set_version_flag("--version", "hotscope " HOTSCOPE_VERSION, "Print the version and exit");
  app.failure_message(one_line);
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version are not errors; every real one has one documented exit code.
    return app.exit(error) == 0 ? 0 : kUsageError;
  }
  return std::nullopt;
}

CLI::Validator whole_number(std::uint64_t low, std::uint64_t high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < low ||
            value > high) {
          return fmt::format("must be a whole number from {} to {} (not {})", low, high, text);
        }
        return "";
      },
      fmt::format("{}..{}", low, high));
}

CLI::Validator number_in(double low, double high, bool low_included) {
  const std::string expected =
      high == HUGE_VAL ? fmt::format("{} {}", low_included ? "at least" : "greater than", low)
                       : fmt::format("from {} to {}", low, high);
  return CLI::Validator(
      [low, high, low_included, expected](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool above_low = low_included ? value >= low : value > low;
        if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
            !above_low || value > high) {
          return fmt::format("must be {} (not {})", expected, text);
        }
        return "";
      },
      expected);
}

} // namespace hotscope::cli
