#include "session.hpp"

#include "../agent_commands.hpp"
#include "export/formats.hpp"
#include "input.hpp"
#include "text.hpp"

#include <curses.h>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

namespace hotscope::cli::console {
namespace {

using Clock = std::chrono::steady_clock;

FetchOptions fetch_options(const Options& options) {
  return FetchOptions{options.stuck_ms, options.flame_seconds};
}

std::string window(const Model& model) {
  const profiles::Stats& stats = model.stats();
  return fmt::format("window {}, {} records dropped", duration(stats.duration_ns),
                     stats.records.dropped);
}

// The usual report files, as the agent serves them, into a new directory in the current one.
std::string save_snapshot(const Source& source) {
  const AgentProcess& process = source.process();
  const std::string dir = fmt::format("hotscope-{}-{}-{:%Y%m%d-%H%M%S}", process.name(),
                                      process.pid, fmt::localtime(std::time(nullptr)));
  std::error_code error;
  if (!std::filesystem::create_directory(dir, error)) {
    throw Failure(kCannotWriteOutput,
                  fmt::format("cannot create {}: {}", dir,
                              error ? error.message() : std::string("it exists already")));
  }
  std::string skipped;
  for (const exporters::FormatInfo& format : exporters::kFormats) {
    if (!format.snapshot) {
      continue;
    }
    const std::string file = format.file;
    const std::string path = exporters::agent_target(format);
    const Reply reply = send(process, "GET", path);
    if (reply.status == 501) { // off in this process (no trace, no heap profiler)
      skipped += fmt::format(" {}", file);
      continue;
    }
    check_status(process, "GET", path, reply);
    write_output(dir + "/" + file, reply.body);
  }
  return fmt::format("saved the reports in {}/{}", dir,
                     skipped.empty() ? "" : fmt::format(" (not enabled:{})", skipped));
}

std::string title(const Source& source, const Model& model, const UiState& ui,
                  const Options& options) {
  if (!source.gone().empty()) {
    return fmt::format(" {}; showing its last data", source.gone());
  }
  std::string text = fmt::format(" hotscope console: {}  {}  refresh {} s", source.label(),
                                 window(model), options.interval_seconds);
  if (ui.paused) {
    text += "  PAUSED (p resumes)";
  }
  return text;
}

std::string status(const Source& source, const UiState& ui) {
  switch (ui.prompt) {
  case Prompt::Filter:
    return fmt::format(" filter: {}_   (Enter keeps it, Esc clears it)", ui.view.filter);
  case Prompt::ConfirmReset:
    return fmt::format(" reset the measuring window of {}? y to confirm, any other key cancels",
                       source.label());
  case Prompt::None:
    break;
  }
  if (!ui.message.empty()) {
    return " " + ui.message;
  }
  const ViewState& view = ui.view;
  if (view.tab == Tab::Functions && view.detail && view.focus != DetailFocus::Functions) {
    return view.focus == DetailFocus::KeptCalls
               ? " ? help  Up Down choose  Enter its tree  Backspace back  Esc close  q quit"
               : " ? help  Up Down PgUp PgDn scroll  Backspace back  Esc close  q quit";
  }
  return fmt::format(" ? help  {} tabs  / filter  < > sort  Enter detail  p pause  r reset  s "
                     "snapshot  q quit",
                     tab_keys());
}

// The help's lines on the last refresh: how long it took, and each step's share.
std::vector<std::string> refresh_times(Clock::duration total, const FetchTimes& fetch,
                                       Clock::duration built, Clock::duration drawn) {
  const auto ms = [](Clock::duration duration) {
    return std::chrono::duration<double, std::milli>(duration).count();
  };
  return {fmt::format("   (the last refresh took {:.0f} ms: asked, parsed and drawn)", ms(total)),
          fmt::format("    {:.1f} ms asking the agent, {:.1f} parsing, {:.1f} updating the model, "
                      "{:.1f} building the page, {:.1f} drawing",
                      ms(fetch.asked), ms(fetch.parsed), ms(fetch.updated), ms(built), ms(drawn))};
}

} // namespace

int print_once(Source& source, const Options& options) {
  Model model;
  ViewState view;
  view.tab = tab_by_name(options.tab).value_or(Tab::Functions);
  if (!source.fetch(model, view, fetch_options(options))) {
    throw Failure(kNoAgent, source.gone());
  }
  Page page = build_page(model, view, Glyphs{}, 0);
  format_rows(page, 0, page.rows.size());
  std::string text =
      fmt::format("hotscope console: {}, {}, tab {}\n", source.label(), window(model), options.tab);
  for (const std::vector<Line>* lines : {&page.fixed, &page.rows, &page.detail}) {
    for (const Line& line : *lines) {
      text += line.text + "\n";
    }
  }
  write_output("", text);
  return kOk;
}

namespace {

// One refresh: when the watched process is gone, a process of the same name (-n) first; then the
// answers the tab needs. Returns when the asking started, nullopt when there was nobody to ask.
// An error is shown on the status line, and the console keeps trying.
std::optional<Clock::time_point> refresh(Source& source, Model& model, UiState& ui,
                                         const Options& options) {
  std::optional<Clock::time_point> started;
  try {
    if (source.gone().empty() || source.reconnect()) {
      if (source.gone().empty() && model.has_stats() && model.stats().pid != source.process().pid) {
        model.clear();
        ui.message = fmt::format("now watching {}", source.label());
      }
      started = Clock::now();
      source.fetch(model, ui.view, fetch_options(options));
    }
  } catch (const Failure& failure) {
    ui.message = failure.what();
  }
  return started;
}

// Carries out what a key asked for; false when the console is to end. `next` is when the next
// refresh is due.
bool act(Action action, Source& source, Model& model, UiState& ui, Clock::time_point& next) {
  switch (action) {
  case Action::Quit:
    return false;
  case Action::Refresh:
    next = Clock::now();
    break;
  case Action::Reset:
    try {
      request(source.process(), "POST", "/v1/reset");
      model.clear();
      ui.message = "a new measuring window starts now";
    } catch (const Failure& failure) {
      ui.message = failure.what();
    }
    next = Clock::now();
    break;
  case Action::Snapshot:
    try {
      ui.message = save_snapshot(source);
    } catch (const Failure& failure) {
      ui.message = failure.what();
    }
    break;
  case Action::None:
    break;
  }
  return true;
}

} // namespace

int run_live(Screen& screen, Source& source, const Options& options) {
  Model model;
  UiState ui;
  ui.view.tab = tab_by_name(options.tab).value_or(Tab::Functions);
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.interval_seconds));
  // The first answer before drawing: an agent error ends the console with its exit code.
  Clock::time_point refresh_started = Clock::now();
  bool refreshing = true; // until the frame after a fetch is drawn
  std::vector<std::string> refresh_took;
  source.fetch(model, ui.view, fetch_options(options));
  Clock::time_point next = Clock::now() + interval;
  std::vector<std::string> help;
  for (;;) {
    if (!ui.paused && Clock::now() >= next) {
      next = Clock::now() + interval;
      if (const std::optional<Clock::time_point> started = refresh(source, model, ui, options)) {
        refresh_started = *started;
        refreshing = true;
      }
    }
    const Clock::time_point build_started = Clock::now();
    Page page =
        build_page(model, ui.view, screen.glyphs(), static_cast<std::size_t>(screen.width()));
    const auto [first, count] = screen.shown_rows(page);
    format_rows(page, first, count);
    // The help also says how long the last refresh took (asked, parsed, drawn), by step.
    if (ui.help) {
      help = help_lines();
      help.insert(help.begin() + 1, refresh_took.begin(), refresh_took.end());
    }
    const Clock::time_point draw_started = Clock::now();
    screen.draw(Frame{title(source, model, ui, options), ui.view.tab, &page,
                      ui.help ? &help : nullptr, status(source, ui), !source.gone().empty()});
    if (refreshing) { // shown from the next frame on
      const Clock::time_point now = Clock::now();
      refresh_took = refresh_times(now - refresh_started, source.times(),
                                   draw_started - build_started, now - draw_started);
      refreshing = false;
    }
    // A refresh that took longer than the interval leaves no time to wait: poll the keys, then
    // refresh again (a negative timeout would wait for a key forever).
    const auto wait = ui.paused ? interval : std::max(next - Clock::now(), Clock::duration::zero());
    const int key = screen.read_key(
        static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    if (key == ERR || key == KEY_RESIZE) {
      continue;
    }
    if (ui.prompt == Prompt::None) {
      ui.message.clear();
    }
    if (!act(handle_key(key, ui, page), source, model, ui, next)) {
      return kOk;
    }
  }
}

} // namespace hotscope::cli::console
