// A command inside a real terminal: a tmux server of its own (-L), one detached session of a
// fixed size, keys sent with send-keys and the screen read with capture-pane. Waits poll the
// screen until what is expected appears (generous deadlines: the machine may be loaded).
#pragma once

#include "agent/demo_process.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace hotscope::testing {

class Tmux {
public:
  // Runs `command` (a shell command line) in a `width` x `height` terminal; when it ends, its
  // exit status goes to a file that exit_status() reads.
  Tmux(int width, int height, const std::string& command)
      : server_("hs-console-" + std::to_string(getpid()) + "-" + std::to_string(next_id()++)),
        status_file_(fs::temp_directory_path() / (server_ + ".status")) {
    const CommandResult started =
        run({TMUX, "-L", server_, "-f", "/dev/null", "new-session", "-d", "-x",
             std::to_string(width), "-y", std::to_string(height),
             command + "; echo $? >" + status_file_.string() + "; sleep 600"});
    EXPECT_EQ(started.status, 0) << started.err;
  }
  ~Tmux() {
    run({TMUX, "-L", server_, "kill-server"});
    std::error_code error;
    fs::remove(status_file_, error);
  }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  // The screen's text; with `escapes`, with the SGR sequences of its colours and attributes.
  std::string screen(bool escapes = false) const {
    std::vector<std::string> words{TMUX, "-L", server_, "capture-pane", "-p"};
    if (escapes) {
      words.push_back("-e");
    }
    return run(words).out;
  }
  // tmux key names: "q", "Enter", "Down", "BTab"...
  void keys(const std::vector<std::string>& names) const {
    std::vector<std::string> words{TMUX, "-L", server_, "send-keys"};
    words.insert(words.end(), names.begin(), names.end());
    EXPECT_EQ(run(words).status, 0);
  }
  void resize(int width, int height) const {
    EXPECT_EQ(run({TMUX, "-L", server_, "resize-window", "-x", std::to_string(width), "-y",
                   std::to_string(height)})
                  .status,
              0);
  }

  // Polls the screen until `done` holds; the last screen (a failure names what was awaited).
  std::string wait_until(const std::function<bool(const std::string&)>& done,
                         const std::string& what, bool escapes = false) const {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    std::string text;
    while (std::chrono::steady_clock::now() < deadline) {
      text = screen(escapes);
      if (done(text)) {
        return text;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the screen never showed " << what << "; it shows:\n" << text;
    return text;
  }
  std::string wait_for(const std::string& text) const {
    return wait_until(
        [&](const std::string& screen) { return screen.find(text) != std::string::npos; },
        "\"" + text + "\"");
  }

  // The command's exit status once it has ended, or -1 if it did not within the deadline.
  int exit_status() const {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = slurp(status_file_);
      if (!text.empty() && text.back() == '\n') {
        return std::stoi(text);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }

private:
  static constexpr std::chrono::seconds kDeadline{60};
  static int& next_id() {
    static int id = 0;
    return id;
  }

  std::string server_;
  fs::path status_file_;
};

} // namespace hotscope::testing
