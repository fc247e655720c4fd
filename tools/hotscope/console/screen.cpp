#include "screen.hpp"

#include "text.hpp"

#include <curses.h>
#include <fmt/format.h>
#include <langinfo.h>

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstring>

namespace hotscope::cli::console {
namespace {

enum Pair : short { kTitlePair = 1, kHeadingPair, kAlertPair, kDimPair, kTabPair };

} // namespace

Screen::Screen() {
  std::setlocale(LC_ALL, "");
  glyphs_.unicode = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  initscr();
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
  const char* no_color = std::getenv("NO_COLOR");
  colours_ = has_colors() && (no_color == nullptr || *no_color == '\0');
  if (colours_) {
    start_color();
    use_default_colors();
    init_pair(kTitlePair, COLOR_BLACK, COLOR_CYAN);
    init_pair(kHeadingPair, COLOR_CYAN, -1);
    init_pair(kAlertPair, COLOR_WHITE, COLOR_RED);
    init_pair(kDimPair, COLOR_BLUE, -1);
    init_pair(kTabPair, COLOR_BLACK, COLOR_YELLOW);
  }
}

Screen::~Screen() {
  endwin();
}

int Screen::width() const {
  return COLS;
}

int Screen::read_key(int timeout_ms) {
  timeout(timeout_ms < 0 ? -1 : timeout_ms);
  return getch();
}

void Screen::line(int row, const std::string& text, int attributes) {
  // The bottom-right cell is left alone: writing it would scroll the screen.
  const int room = row == LINES - 1 ? COLS - 1 : COLS;
  attrset(attributes);
  mvaddstr(row, 0, clip(text, static_cast<std::size_t>(room), glyphs_).c_str());
  if (attributes != A_NORMAL) {
    const int filled =
        static_cast<int>(columns(clip(text, static_cast<std::size_t>(room), glyphs_)));
    for (int x = filled; x < room; ++x) {
      addch(' ');
    }
  }
  attrset(A_NORMAL);
}

int Screen::first_row_line(const Page& page) const {
  const int last = LINES - 1; // the status line
  return std::min(2 + static_cast<int>(page.fixed.size()), std::max(2, last - 1));
}

int Screen::detail_lines(const Page& page) const {
  const int last = LINES - 1;
  return std::min(static_cast<int>(page.detail.size()), (last - first_row_line(page)) / 2);
}

std::pair<std::size_t, std::size_t> Screen::shown_rows(const Page& page) {
  const int last = LINES - 1;
  const int room = std::max(1, last - first_row_line(page) - detail_lines(page));
  const int count = static_cast<int>(page.rows.size());
  if (page.selected >= 0) {
    top_ = std::clamp(top_, page.selected - room + 1, page.selected);
  }
  top_ = std::clamp(top_, 0, std::max(0, count - room));
  return {static_cast<std::size_t>(top_),
          static_cast<std::size_t>(std::max(0, std::min(room, count - top_)))};
}

void Screen::draw(const Frame& frame) {
  erase();
  if (COLS < kMinimumWidth || LINES < kMinimumHeight) {
    mvaddstr(0, 0,
             clip(fmt::format("terminal too small ({}x{}): the console needs {}x{}", COLS, LINES,
                              kMinimumWidth, kMinimumHeight),
                  static_cast<std::size_t>(COLS), glyphs_)
                 .c_str());
    refresh();
    return;
  }
  const auto style = [&](Style s) -> int {
    switch (s) {
    case Style::Heading:
      return colours_ ? COLOR_PAIR(kHeadingPair) | A_BOLD : A_BOLD;
    case Style::Alert:
      return colours_ ? COLOR_PAIR(kAlertPair) | A_BOLD : A_BOLD | A_UNDERLINE;
    case Style::Dim:
      return colours_ ? COLOR_PAIR(kDimPair) : A_DIM;
    case Style::Normal:
      break;
    }
    return A_NORMAL;
  };
  line(0, frame.title,
       frame.alert ? style(Style::Alert) : (colours_ ? COLOR_PAIR(kTitlePair) : A_REVERSE));
  move(1, 0);
  for (int tab = 0; frame.tab_bar && tab < kTabCount; ++tab) {
    const bool active = static_cast<int>(frame.tab) == tab;
    attrset(active ? (colours_ ? COLOR_PAIR(kTabPair) | A_BOLD : A_REVERSE) : A_NORMAL);
    addstr(fmt::format(" {} {} ", tab + 1, tab_name(static_cast<Tab>(tab))).c_str());
    attrset(A_NORMAL);
    addch(' ');
  }
  int row = 2;
  const int last = LINES - 1; // the status line
  if (frame.help != nullptr) {
    for (const std::string& text : *frame.help) {
      if (row < last) {
        line(row++, text, A_NORMAL);
      }
    }
  } else if (frame.page != nullptr) {
    const Page& page = *frame.page;
    for (const Line& fixed : page.fixed) {
      if (row < last - 1) {
        line(row++, fixed.text, style(fixed.style));
      }
    }
    const int detail_rows = detail_lines(page);
    const auto [first, count] = shown_rows(page);
    for (std::size_t i = first; i < first + count && row < last - detail_rows; ++i) {
      const Line& text = page.rows[i];
      line(row++, text.text,
           style(text.style) | (static_cast<int>(i) == page.selected ? A_REVERSE : A_NORMAL));
    }
    row = last - detail_rows;
    for (int i = 0; i < detail_rows; ++i) {
      const Line& text = page.detail[static_cast<std::size_t>(i)];
      line(row++, text.text, style(text.style));
    }
  }
  line(last, frame.status, colours_ ? COLOR_PAIR(kTitlePair) : A_REVERSE);
  refresh();
}

} // namespace hotscope::cli::console
