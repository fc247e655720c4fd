// Where the console's data comes from: the agent of one process, through the CLI's agent client.
// Notices when the process exits, finds a new process of the same name (-n), and fetches what
// the visible tab needs into the model.
#pragma once

#include "../agent_client.hpp"
#include "model.hpp"
#include "view.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace hotscope::cli::console {

struct FetchOptions {
  std::uint64_t stuck_ms = 1000; // --stuck: a thread inside one scope longer is stuck
  double flame_seconds = 5;      // the flame covers the last N seconds of the trace (or of
                                 // CPU samples), asked for every N seconds
};

// How long the last fetch() spent on each step (the help shows them).
struct FetchTimes {
  std::chrono::steady_clock::duration asked{};   // waiting for the agent's answers
  std::chrono::steady_clock::duration parsed{};  // parsing their JSON (the stats into rows)
  std::chrono::steady_clock::duration updated{}; // rates, histories and rows in the model
};

// Runs `read`, which reads the agent's answer to GET `path`: JSON that cannot be read (cut
// short, a number out of range) becomes a Failure naming the request, which the live console
// shows on its status line and survives, not an exception that would end it.
template <typename Read> void read_answer(const std::string& path, Read read) {
  try {
    read();
  } catch (const nlohmann::json::exception& error) {
    throw Failure(kFailed, "cannot read the agent's answer to GET " + path + ": " + error.what());
  }
}

class Source {
public:
  // `follow_name`: with -n, the name to reconnect to when the process ends ("" with -p).
  Source(AgentProcess process, std::string follow_name);

  const AgentProcess& process() const { return process_; }
  // "NAME (PID)".
  std::string label() const;
  // "" while the process runs, else "NAME (PID) exited at HH:MM:SS".
  const std::string& gone() const { return gone_; }

  // Asks the agent for what `state`'s tab shows and puts it into `model`. False when the
  // process has gone (gone() says when); a Failure for an agent error.
  bool fetch(Model& model, const ViewState& state, const FetchOptions& options);
  const FetchTimes& times() const { return times_; }
  // With a name to follow and the process gone: true when a process of that name runs again
  // (the source then talks to it).
  bool reconnect();

private:
  std::optional<Reply> get(const std::string& path);
  nlohmann::json parse(const std::string& path, const std::string& body);
  void fetch_heap(Model& model);
  bool fetch_cpu_flame(Model& model, const FetchOptions& options);
  // The selected function's kept calls, while its detail pane is open.
  void fetch_kept_calls(Model& model, const ViewState& state);

  AgentProcess process_;
  std::string follow_name_;
  std::string gone_;
  std::chrono::steady_clock::time_point last_trace_; // when the flame was last asked for
  std::chrono::steady_clock::time_point last_cpu_;   // when the CPU flame was last asked for
  // Asks for /v1/stats?format=columns, unless the agent is from before it (it answered 400).
  bool stats_columns_ = true;
  FetchTimes times_;
  profiles::Stats stats_answer_; // read into again at each fetch: its rows' memory is reused
};

} // namespace hotscope::cli::console
