// The demo's command line, parsed in a file of its own: the three builds of the demo (with
// hotscope, compiled out, every function instrumented) share its one object, as CLI11's
// header-only parser is most of the demo's compile time.
#ifndef DEMO_COMMAND_LINE_HPP
#define DEMO_COMMAND_LINE_HPP

#include <optional>

namespace demo {

struct CommandLine {
  double seconds = 5; // 0: until SIGINT/SIGTERM
  unsigned threads = 4;
  unsigned rate = 2000;
};

// The exit status when the command line says to stop now (--help, a bad option, which CLI11
// has printed), else nothing and `line` filled in.
std::optional<int> parse_command_line(int argc, char** argv, CommandLine& line);

} // namespace demo

#endif
