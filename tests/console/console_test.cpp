// `hotscope console` through a real terminal (tmux, tmux.hpp) against hotscope-demo and
// console_program.cpp, and `--once` against `hotscope stats` for the same process.
#include "agent/demo_process.hpp"
#include "support/files.hpp"
#include "tmux.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <regex>
#include <sstream>

using hotscope::test_support::lines_of;

namespace {

using namespace hotscope::testing;

// console_program with HOTSCOPE_RUNTIME_DIR=<scratch>/rt, from "ready" (its work done, a thread
// stuck inside hold_lock > wait_for_peer) until stop() or the end of the test.
class Program {
public:
  // `runtime_dir`: another program's, to run two in one; by default a new one.
  explicit Program(const fs::path& runtime_dir = {})
      : runtime_dir_(runtime_dir.empty() ? scratch_.path() / "rt" : runtime_dir) {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      setenv("HOTSCOPE_RUNTIME_DIR", runtime_dir_.c_str(), 1);
      freopen((scratch_.path() / "out").c_str(), "w", stdout);
      freopen((scratch_.path() / "err").c_str(), "w", stderr);
      execl(CONSOLE_PROGRAM, CONSOLE_PROGRAM, nullptr);
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((slurp(scratch_.path() / "out") != "ready\n" ||
            !fs::exists(hotscope::agent::info_path(runtime_dir_, pid_))) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(slurp(scratch_.path() / "out"), "ready\n") << slurp(scratch_.path() / "err");
  }
  ~Program() { stop(); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  int stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = 0;
    }
    return 0;
  }
  pid_t pid() const { return pid_; }
  const fs::path& runtime_dir() const { return runtime_dir_; }

private:
  ScratchDir scratch_;
  fs::path runtime_dir_;
  pid_t pid_ = 0;
};

// The shell command line that runs the console on `runtime_dir` with `arguments`.
// `environment`: variables for the console, "NAME=value ...", a UTF-8 locale by default.
std::string console_command(const fs::path& runtime_dir, const std::vector<std::string>& arguments,
                            const std::string& environment = "LC_ALL=C.UTF-8") {
  std::string command = "env HOTSCOPE_RUNTIME_DIR=" + quote(runtime_dir) + " " + environment + " " +
                        quote(HOTSCOPE_CLI) + " console";
  for (const std::string& argument : arguments) {
    command += " " + quote(argument);
  }
  return command;
}

CommandResult cli(const fs::path& runtime_dir, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), HOTSCOPE_CLI);
  return run(arguments, {{"HOTSCOPE_RUNTIME_DIR", runtime_dir}});
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    words.push_back(word);
  }
  return words;
}

// The functions tab's rows on a screen: the lines under the heading "Function ...", up to the
// first line that is not a row.
std::vector<std::vector<std::string>> function_rows(const std::string& screen) {
  std::vector<std::vector<std::string>> rows;
  bool in_table = false;
  for (const std::string& line : lines_of(screen)) {
    const std::vector<std::string> words = words_of(line);
    if (!in_table) {
      in_table = !words.empty() && words[0].rfind("Function", 0) == 0;
      continue;
    }
    if (words.size() < 8) {
      break;
    }
    rows.push_back(words);
  }
  return rows;
}

// Row words: name, calls/s, time/s (2 words), %core, calls, ...
constexpr std::size_t kCallsWord = 5;

TEST(ConsoleLive, FunctionsTabSortsFiltersAndQuits) {
  Demo demo;
  Tmux tmux(160, 45, console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid())}));
  tmux.wait_for("demo::Service::handle ");

  tmux.keys({"n"}); // by name, A to Z
  // The header is drawn before the rows: wait for both (a capture can fall in between).
  const auto names_on = [](const std::string& screen) {
    std::vector<std::string> names;
    for (const auto& row : function_rows(screen)) {
      names.push_back(row[0]);
    }
    return names;
  };
  const std::string by_name = tmux.wait_until(
      [&](const std::string& screen) {
        const std::vector<std::string> shown = names_on(screen);
        return screen.find("Function▲") != std::string::npos &&
               std::is_sorted(shown.begin(), shown.end());
      },
      "the functions sorted by name");
  const std::vector<std::string> names = names_on(by_name);
  EXPECT_GT(names.size(), 10u) << by_name;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << by_name;

  tmux.keys({"a"}); // by the window's calls, most first
  // The calls column, top to bottom; false when a cell is not a number. As above, the screen is
  // read once the rows are redrawn: a row half redrawn has the new order's name, the old figures.
  const auto calls_on = [](const std::string& screen, std::vector<std::uint64_t>& calls) {
    calls.clear();
    for (const auto& row : function_rows(screen)) {
      const std::string& cell = row[kCallsWord];
      std::uint64_t value = 0;
      const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
      if (error != std::errc() || end != cell.data() + cell.size()) {
        return false;
      }
      calls.push_back(value);
    }
    return true;
  };
  std::vector<std::uint64_t> calls;
  const std::string by_calls = tmux.wait_until(
      [&](const std::string& screen) {
        return screen.find("Calls▼") != std::string::npos && calls_on(screen, calls) &&
               std::is_sorted(calls.rbegin(), calls.rend());
      },
      "the functions sorted by calls");
  EXPECT_TRUE(calls_on(by_calls, calls)) << by_calls;
  EXPECT_TRUE(std::is_sorted(calls.rbegin(), calls.rend())) << by_calls;
  EXPECT_NE(names_on(by_calls), names) << "the order did not change with the sort key";

  tmux.keys({"/", "p", "a", "r", "s", "e", "Enter"});
  const auto parse_only = [&](const std::string& screen) {
    const std::vector<std::string> shown = names_on(screen);
    return std::all_of(shown.begin(), shown.end(), [](std::string name) {
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      return name.find("parse") != std::string::npos;
    });
  };
  const std::string filtered = tmux.wait_until(
      [&](const std::string& screen) {
        return screen.find("matching \"parse\"") != std::string::npos && parse_only(screen);
      },
      "only the functions matching \"parse\"");
  EXPECT_GE(function_rows(filtered).size(), 2u)
      << filtered; // parse_request, demo::parse_document, Parser::...
  EXPECT_TRUE(parse_only(filtered)) << filtered;

  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// The detail pane's kept calls (docs/console.md): Enter in the pane lists a demo function's kept
// slowest calls (GET /v1/slow), Enter on one shows its tree, Backspace goes back up.
TEST(ConsoleLive, DetailListsKeptCallsAndShowsATree) {
  Demo demo;
  Tmux tmux(160, 45, console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid())}));
  tmux.wait_for("demo::Service::handle_get");
  tmux.keys({"/", "h", "a", "n", "d", "l", "e", "_", "g", "e", "t", "Enter"});
  tmux.wait_for("matching \"handle_get\"");
  tmux.keys({"Enter"});
  const std::string pane = tmux.wait_until(
      [](const std::string& screen) {
        return std::regex_search(screen,
                                 std::regex(R"(kept calls: \d+, the slowest .* on worker-\d at )"));
      },
      "the pane's kept calls");
  EXPECT_NE(pane.find("; Enter lists them"), std::string::npos) << pane;

  tmux.keys({"Enter"});
  const std::string list =
      tmux.wait_for("demo::Service::handle_get: its slowest calls, kept whole");
  EXPECT_NE(list.find("Duration"), std::string::npos) << list;
  EXPECT_TRUE(std::regex_search(list, std::regex(R"(\n +1 +[0-9.]+ [µm]?s +worker-\d +\d+ )")))
      << list;
  EXPECT_EQ(list.find("Calls/s"), std::string::npos) << list; // in place of the table
  EXPECT_NE(list.find("Enter its tree  Backspace back"), std::string::npos) << list;

  tmux.keys({"Down", "Enter"});
  const std::string tree = tmux.wait_for("started at");
  EXPECT_NE(tree.find("> demo::Service::handle_get"), std::string::npos) << tree;
  EXPECT_NE(tree.find("< demo::Service::handle_get"), std::string::npos) << tree;

  tmux.keys({"BSpace"});
  tmux.wait_for("its slowest calls, kept whole");
  tmux.keys({"BSpace"});
  const std::string back = tmux.wait_for("Calls/s");
  EXPECT_NE(back.find("kept calls: "), std::string::npos) << back; // the pane is still open
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

TEST(ConsoleLive, MemoryTabShowsSitesOrHowToTurnTheProfilerOn) {
  {
    Demo demo(Env{{"HOTSCOPE_HEAP_MODE", "full"}});
    Tmux tmux(
        160, 45,
        console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid()), "--tab", "memory"}));
    const std::string screen = tmux.wait_for("service.cpp:");
    EXPECT_NE(screen.find("Top sites by live bytes"), std::string::npos) << screen;
    EXPECT_NE(screen.find("live "), std::string::npos) << screen;
    tmux.keys({"q"});
    EXPECT_EQ(tmux.exit_status(), 0);
  }
  Demo demo; // the heap profiler linked but off
  Tmux tmux(
      160, 45,
      console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid()), "--tab", "memory"}));
  const std::string screen = tmux.wait_for("HOTSCOPE_HEAP_MODE=full");
  EXPECT_EQ(screen.find("Top sites"), std::string::npos) << screen;
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// The flame tab's `c`: the CPU samples of the last seconds, down through the demo's native
// frames, and back to wall time; with the sampler off it says how to start it.
TEST(ConsoleLive, FlameTabTogglesBetweenWallAndCpuTime) {
  {
    Demo demo(Env{{"HOTSCOPE_CPU_HZ", "99"}}, true, kBusyDemo);
    Tmux tmux(200, 45,
              console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid()), "--tab",
                                                   "flame", "--flame-seconds", "1"}));
    tmux.wait_for("self time in the trace's last 1 s");
    tmux.keys({"c"});
    const std::string cpu = tmux.wait_for("sampled at 99 Hz");
    EXPECT_NE(cpu.find("CPU time in"), std::string::npos) << cpu;
    // A second answer shows what the stacks gained over the last second or so.
    const std::string recent = tmux.wait_for("CPU time in the last");
    EXPECT_NE(recent.find("start_thread"), std::string::npos) << recent;
    tmux.keys({"c"});
    tmux.wait_for("self time in the trace's last 1 s");
    tmux.keys({"q"});
    EXPECT_EQ(tmux.exit_status(), 0);
  }
  Demo demo;
  Tmux tmux(
      200, 45,
      console_command(demo.runtime_dir(), {"-p", std::to_string(demo.pid()), "--tab", "flame"}));
  tmux.wait_for("self time in the trace's last");
  tmux.keys({"c"});
  const std::string off = tmux.wait_for("the CPU sampler is off");
  EXPECT_NE(off.find("HOTSCOPE_CPU_HZ=99"), std::string::npos) << off;
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// -n: the console keeps the last data when the process exits, says so, and watches the next
// process of that name when one starts.
TEST(ConsoleLive, ShowsThatTheTargetExitedAndFollowsItsName) {
  auto first = std::make_unique<Program>();
  const fs::path runtime_dir = first->runtime_dir();
  const std::string first_pid = std::to_string(first->pid());
  Tmux tmux(120, 30, console_command(runtime_dir, {"-n", "console_program", "--interval", "0.3"}));
  tmux.wait_for("console_test::many_quick_steps");
  first->stop();
  const std::string screen = tmux.wait_for("exited at");
  EXPECT_NE(screen.find("console_program (" + first_pid + ") exited at "), std::string::npos)
      << screen;
  // The last data stays.
  EXPECT_NE(screen.find("console_test::many_quick_steps"), std::string::npos) << screen;
  Program second(runtime_dir);
  tmux.wait_for("now watching console_program (" + std::to_string(second.pid()) + ")");
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// p pauses, r asks and resets the window, s saves the reports into the current directory.
// The help says how long the last refresh took, so a user sees what watching costs.
TEST(ConsoleLive, TheHelpSaysHowLongTheLastRefreshTook) {
  Program program;
  Tmux tmux(140, 40, console_command(program.runtime_dir(), {"-p", std::to_string(program.pid())}));
  tmux.wait_for("console_test::many_quick_steps");
  tmux.keys({"?"});
  const std::string screen = tmux.wait_for("the last refresh took ");
  const auto at = screen.find("the last refresh took ") + 22;
  const std::string figure = screen.substr(at, screen.find(' ', at) - at);
  ASSERT_FALSE(figure.empty()) << screen;
  EXPECT_TRUE(std::all_of(figure.begin(), figure.end(), ::isdigit)) << figure;
  EXPECT_NE(screen.find(" ms: asked, parsed and drawn)"), std::string::npos) << screen;
  // And each step's share, for telling the agent's part from the console's.
  for (const char* step : {" ms asking the agent, ", " parsing, ", " updating the model, ",
                           " building the page, ", " drawing"}) {
    EXPECT_NE(screen.find(step), std::string::npos) << step << "\n" << screen;
  }
  tmux.keys({"q"});
}

TEST(ConsoleLive, PauseResetAndSnapshot) {
  Program program;
  const std::string pid = std::to_string(program.pid());
  const fs::path here = program.runtime_dir().parent_path();
  Tmux tmux(140, 30,
            "cd " + quote(here) + " && " + console_command(program.runtime_dir(), {"-p", pid}));
  tmux.wait_for("console_test::many_quick_steps");
  tmux.keys({"p"});
  tmux.wait_for("PAUSED (p resumes)");
  tmux.keys({"p", "r"});
  tmux.wait_for("reset the measuring window of console_program (" + pid + ")? y to confirm");
  tmux.keys({"y"});
  tmux.wait_for("a new measuring window starts now");
  // The fixed work is gone from the new window: only the stuck thread's open scopes remain.
  tmux.wait_until(
      [](const std::string& text) {
        return text.find("console_test::many_quick_steps") == std::string::npos &&
               text.find(" functions;") != std::string::npos;
      },
      "the functions gone after the reset");
  tmux.keys({"s"});
  const std::string saved = tmux.wait_for("saved the reports in ");
  const auto start = saved.find("saved the reports in ") + 21;
  const std::string dir = saved.substr(start, saved.find('/', start) - start);
  EXPECT_EQ(dir.rfind("hotscope-console_program-" + pid + "-", 0), 0u) << saved;
  for (const char* file : {"stats.json", "report.txt", "trace.json", "trace.folded"}) {
    EXPECT_TRUE(fs::exists(here / dir / file)) << file;
  }
  EXPECT_FALSE(fs::exists(here / dir / "heap.json")); // no heap profiler: said, not written
  EXPECT_NE(saved.find("(not enabled: heap.json)"), std::string::npos) << saved;
  EXPECT_EQ(nlohmann::json::parse(slurp(here / dir / "stats.json")).at("pid"), program.pid());
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// The line of `screen` that contains `text`, or "".
std::string line_with(const std::string& screen, const std::string& text) {
  for (const std::string& line : lines_of(screen)) {
    if (line.find(text) != std::string::npos) {
      return line;
    }
  }
  return "";
}

// console_program's stuck-worker has been inside hold_lock > wait_for_peer since it started: the
// threads tab lists it first, marked STUCK with its open scopes, on the alert colours (white on
// red); main, inside nothing, is not. Down moves the selection (reverse video) off the stuck row.
TEST(ConsoleLive, ThreadsTabHighlightsTheStuckThread) {
  Program program;
  Tmux tmux(140, 30,
            console_command(program.runtime_dir(), {"-p", std::to_string(program.pid()), "--tab",
                                                    "threads", "--stuck", "300"}));
  // The whole table drawn (a capture can fall within a redraw): the stuck row and main's.
  const std::string screen = tmux.wait_until(
      [&](const std::string& text) {
        return text.find("STUCK") != std::string::npos &&
               line_with(text, "stuck-worker").find("wait_for_peer") != std::string::npos &&
               !line_with(text, " main ").empty();
      },
      "the stuck thread and main");
  EXPECT_NE(screen.find("1 stuck (inside one scope longer than 300.00 ms)"), std::string::npos)
      << screen;
  const std::string stuck = line_with(screen, "stuck-worker");
  EXPECT_NE(stuck.find("in: hold_lock > console_test::wait_for_peer"), std::string::npos) << screen;
  EXPECT_LT(screen.find("stuck-worker"), screen.find(" main ")) << screen;
  tmux.keys({"Down"});
  // Reverse video is SGR 7: "\x1b[7m", or "\x1b[0;7m" after a reset.
  const auto reversed = [](const std::string& line) {
    return line.find("[7m") != std::string::npos || line.find(";7m") != std::string::npos;
  };
  const std::string colours =
      tmux.wait_until([&](const std::string& text) { return reversed(line_with(text, " main ")); },
                      "main selected (reverse video)", true);
  EXPECT_NE(line_with(colours, "stuck-worker").find("41m"), std::string::npos) << colours;
  EXPECT_EQ(line_with(colours, " main ").find("41m"), std::string::npos) << colours;
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// NO_COLOR and an ASCII locale: the stuck thread is bold and underlined instead of coloured,
// and the sort mark is ASCII.
TEST(ConsoleLive, NoColourAndNoUnicodeWhereTheTerminalHasNone) {
  Program program;
  Tmux tmux(
      140, 30,
      console_command(program.runtime_dir(),
                      {"-p", std::to_string(program.pid()), "--tab", "threads", "--stuck", "300"},
                      "LC_ALL=C NO_COLOR=1"));
  tmux.wait_for("STUCK");
  tmux.keys({"Down"}); // the selection (reverse video) off the stuck row
  const std::string screen = tmux.wait_until(
      [](const std::string& text) {
        return line_with(text, "stuck-worker").find("4m") != std::string::npos;
      },
      "the stuck row underlined", true);
  // No colour set: SGR 30-37 or 40-47 (39 and 49, the defaults, come with every reset).
  EXPECT_FALSE(std::regex_search(screen, std::regex("\x1b\\[[0-9;]*[34][0-7]m"))) << screen;
  tmux.keys({"1"});
  tmux.wait_for("Time/s v");
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// The measuring window's length in the title ("window 4.20 s"), or "" when not shown.
std::string window_shown(const std::string& screen) {
  const auto start = screen.find("window ");
  return start == std::string::npos ? "" : screen.substr(start, screen.find(',', start) - start);
}

// A refresh slower than the interval (the process stopped for a while) must not stop the
// refreshes: the console once waited forever for a key when its wait came out negative.
TEST(ConsoleLive, KeepsRefreshingAfterARefreshSlowerThanTheInterval) {
  Program program;
  Tmux tmux(120, 30,
            console_command(program.runtime_dir(),
                            {"-p", std::to_string(program.pid()), "--interval", "0.2"}));
  tmux.wait_for("console_test::many_quick_steps");
  kill(program.pid(), SIGSTOP); // the next answer comes 1 s late
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(program.pid(), SIGCONT);
  std::string seen = window_shown(tmux.screen());
  for (int change = 0; change < 3 && !::testing::Test::HasFailure(); ++change) {
    const std::string screen =
        tmux.wait_until([&](const std::string& text) { return window_shown(text) != seen; },
                        "the window's length change after \"" + seen + "\"");
    seen = window_shown(screen);
  }
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

TEST(ConsoleLive, ATinyTerminalSaysSoAndAResizeRedraws) {
  Program program;
  Tmux tmux(60, 20, console_command(program.runtime_dir(), {"-p", std::to_string(program.pid())}));
  tmux.wait_for("terminal too small (60x20): the console needs 80x24");
  tmux.resize(100, 30);
  tmux.wait_for("console_test::many_quick_steps");
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

TEST(ConsoleLive, PicksAmongSeveralProcesses) {
  Program first;
  Program second(first.runtime_dir());
  const std::string low = std::to_string(std::min(first.pid(), second.pid()));
  const std::string high = std::to_string(std::max(first.pid(), second.pid()));
  Tmux tmux(120, 30, console_command(first.runtime_dir(), {}));
  const std::string list = tmux.wait_for("choose the process");
  EXPECT_NE(list.find(low + "  console_program"), std::string::npos) << list;
  EXPECT_NE(list.find(high + "  console_program"), std::string::npos) << list;
  tmux.keys({"Down", "Enter"});
  tmux.wait_for("console_program (" + high + ")");
  tmux.keys({"q"});
  EXPECT_EQ(tmux.exit_status(), 0);
}

// The functions tab's figures are the statistics' own: --once and `hotscope stats` agree on
// every function of a process whose work is done.
TEST(ConsoleOnce, AgreesWithStats) {
  Program program;
  const std::string pid = std::to_string(program.pid());
  const CommandResult once = cli(program.runtime_dir(), {"console", "-p", pid, "--once"});
  ASSERT_EQ(once.status, 0) << once.err;
  const CommandResult stats = cli(program.runtime_dir(), {"stats", "-p", pid});
  ASSERT_EQ(stats.status, 0) << stats.err;
  EXPECT_EQ(once.out.rfind("hotscope console: console_program (" + pid + ")", 0), 0u) << once.out;

  // The table's rows: name, calls, avg, p50, p95, p99 (a duration is two words).
  std::size_t compared = 0;
  const auto once_rows = function_rows(once.out);
  bool in_table = false;
  for (const std::string& line : lines_of(stats.out)) {
    const std::vector<std::string> words = words_of(line);
    if (!in_table) {
      in_table = !words.empty() && words[0] == "Function";
      continue;
    }
    if (words.size() < 12 || words[1] == "0") {
      break;
    }
    const auto row = std::find_if(once_rows.begin(), once_rows.end(),
                                  [&](const auto& r) { return r[0] == words[0]; });
    ASSERT_NE(row, once_rows.end()) << words[0] << " is missing from:\n" << once.out;
    const std::vector<std::string>& mine = *row;
    EXPECT_EQ(mine[kCallsWord], words[1]) << words[0];
    // P50, P95, P99: words 6-11 of the console's row, 4-9 of the table's.
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(mine[kCallsWord + 1 + i], words[4 + i]) << words[0] << " word " << i;
    }
    ++compared;
  }
  EXPECT_GE(compared, 2u) << stats.out;
  EXPECT_NE(once.out.find("console_test::many_quick_steps"), std::string::npos);
}

// A process sampled at 99 Hz: the CPU column (after Total) has a duration for the demo's busiest
// functions; without samples it is "-" for every row.
TEST(ConsoleOnce, ShowsCpuWithSamples) {
  for (const bool sampled : {true, false}) {
    Demo demo(sampled ? Env{{"HOTSCOPE_CPU_HZ", "99"}} : Env{});
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const CommandResult once =
        cli(demo.runtime_dir(), {"console", "-p", std::to_string(demo.pid()), "--once"});
    ASSERT_EQ(once.status, 0) << once.err;
    const auto rows = function_rows(once.out);
    ASSERT_FALSE(rows.empty()) << once.out;
    // Name, Calls/s, Time/s (2), %Wall, Calls, P50 to Total (6 durations of 2 words), CPU.
    constexpr std::size_t kCpuWord = 18;
    std::size_t dashes = 0, busy = 0; // busy: a CPU time of a microsecond or more
    for (const auto& row : rows) {
      ASSERT_GT(row.size(), kCpuWord) << once.out;
      dashes += row[kCpuWord] == "-" ? 1 : 0;
      busy += row[kCpuWord] != "-" && row[kCpuWord + 1] != "ns" ? 1 : 0;
    }
    EXPECT_EQ(dashes, sampled ? 0u : rows.size()) << once.out;
    EXPECT_EQ(busy > 0, sampled) << once.out;
  }
}

TEST(ConsoleOnce, PrintsTheChosenTabWhenNotATerminal) {
  Program program;
  const std::string pid = std::to_string(program.pid());
  // No --once: standard output is a file.
  const CommandResult threads =
      cli(program.runtime_dir(), {"console", "-p", pid, "--tab", "threads"});
  EXPECT_EQ(threads.status, 0) << threads.err;
  EXPECT_NE(threads.out.find("tab threads"), std::string::npos) << threads.out;
  EXPECT_NE(threads.out.find("stuck-worker"), std::string::npos) << threads.out;
  const CommandResult tasks = cli(program.runtime_dir(), {"console", "-p", pid, "--tab", "tasks"});
  EXPECT_NE(tasks.out.find("no task in this process"), std::string::npos) << tasks.out;
  const CommandResult memory =
      cli(program.runtime_dir(), {"console", "-p", pid, "--tab", "memory"});
  EXPECT_NE(memory.out.find("no heap profiler in this process"), std::string::npos) << memory.out;
}

// hotscope-demo's three queues, with who pushes and who pops.
TEST(ConsoleOnce, QueuesTabListsTheDemosQueues) {
  Demo demo;
  const CommandResult queues = cli(demo.runtime_dir(), {"console", "-p", std::to_string(demo.pid()),
                                                        "--tab", "queues", "--once"});
  ASSERT_EQ(queues.status, 0) << queues.err;
  const std::string parse = line_with(queues.out, "parse_queue");
  EXPECT_NE(parse.find("acceptor"), std::string::npos) << queues.out;
  EXPECT_NE(parse.find("parser"), std::string::npos) << queues.out;
  EXPECT_NE(line_with(queues.out, "work_queue").find("worker-1"), std::string::npos) << queues.out;
  EXPECT_NE(line_with(queues.out, "write_queue").find("writer"), std::string::npos) << queues.out;
}

// hotscope-demo's two Lockables on the locks tab (docs/console.md, "8 locks"), acquired many times
// (the demo serves requests before "ready"), in the table under its heading; the same rows as
// `hotscope locks` prints.
TEST(ConsoleOnce, LocksTabListsTheDemosLocks) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  // The demo's requests take both locks within its first seconds.
  CommandResult locks;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    locks = cli(demo.runtime_dir(), {"console", "-p", pid, "--tab", "locks", "--once"});
    ASSERT_EQ(locks.status, 0) << locks.err;
  } while ((locks.out.find(" word_index_mutex ") == std::string::npos ||
            locks.out.find(" cache_mutex ") == std::string::npos) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_NE(locks.out.find("tab locks"), std::string::npos) << locks.out;
  const std::size_t heading = locks.out.find("Holders now");
  ASSERT_NE(heading, std::string::npos) << locks.out;
  for (const char* name : {" cache_mutex ", " word_index_mutex "}) {
    EXPECT_NE(line_with(locks.out, name).find(" mutex "), std::string::npos) << locks.out;
    EXPECT_GT(locks.out.find(name), heading) << locks.out;
  }
  const CommandResult command = cli(demo.runtime_dir(), {"locks", "-p", pid});
  ASSERT_EQ(command.status, 0) << command.err;
  EXPECT_NE(line_with(command.out, " cache_mutex ").find(" mutex "), std::string::npos)
      << command.out;
}

TEST(ConsoleOnce, BadTargetsGetTheCliExitCodes) {
  Program program;
  const CommandResult none = cli(program.runtime_dir(), {"console", "-p", "999999999", "--once"});
  EXPECT_EQ(none.status, 3) << none.err;
  EXPECT_NE(none.err.find("no process with pid 999999999"), std::string::npos) << none.err;
  const CommandResult both = cli(program.runtime_dir(), {"console", "-p", "1", "-n", "x"});
  EXPECT_EQ(both.status, 2) << both.err;
  const CommandResult tab = cli(program.runtime_dir(), {"console", "--tab", "nonsense"});
  EXPECT_EQ(tab.status, 2) << tab.err;
}

} // namespace
