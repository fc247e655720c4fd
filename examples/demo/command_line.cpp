#include "command_line.hpp"

#include <CLI/CLI.hpp>

namespace demo {

std::optional<int> parse_command_line(int argc, char** argv, CommandLine& line) {
  CLI::App app{"Simulated multi-threaded request pipeline (acceptor, parser, workers, writer)"};
  app.add_option("--seconds", line.seconds, "How long to run; 0 runs until SIGINT/SIGTERM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", line.threads, "Worker threads")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--rate", line.rate, "Requests per second offered by the acceptor")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  return std::nullopt;
}

} // namespace demo
