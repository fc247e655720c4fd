// The terminal, through ncursesw: sets it up and restores it, reads keys, and draws a frame (the
// title, the tab bar, the visible page, the status line). Below 80x24 it draws one line saying
// the terminal is too small instead.
#pragma once

#include "view.hpp"

#include <string>
#include <utility>
#include <vector>

namespace hotscope::cli::console {

inline constexpr int kMinimumWidth = 80;
inline constexpr int kMinimumHeight = 24;

struct Frame {
  std::string title; // the process, the window, the state (paused, exited)
  Tab tab = Tab::Functions;
  const Page* page = nullptr;
  const std::vector<std::string>* help = nullptr; // shown instead of the page when set
  std::string status; // the bottom line: a prompt, a message, or the key hints
  bool alert = false; // the title says something went wrong (the process exited)
  bool tab_bar = true;
};

class Screen {
public:
  Screen();
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  int width() const;
  const Glyphs& glyphs() const { return glyphs_; }
  // The next key, or ERR after `timeout_ms` without one (a negative timeout waits for a key).
  int read_key(int timeout_ms);
  // The rows of `page` that draw() shows, as (first, count): it scrolls to keep the selection
  // in view. The same until the page, the terminal's size or the selection changes.
  std::pair<std::size_t, std::size_t> shown_rows(const Page& page);
  void draw(const Frame& frame);

private:
  void line(int row, const std::string& text, int attributes);
  // The lines under the fixed ones and the detail pane's share of them.
  int first_row_line(const Page& page) const;
  int detail_lines(const Page& page) const;

  Glyphs glyphs_;
  bool colours_ = false;
  int top_ = 0; // the first page row shown: scrolls to keep the selection in view
};

} // namespace hotscope::cli::console
