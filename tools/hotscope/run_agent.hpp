// The live agent of a program `hotscope run --heap` runs in the sampled mode, until a client asks
// for it (docs/agent.md, "hotscope run"): the launcher writes the program's <pid>.json and
// listens on its <pid>.sock, and at the first connection loads libhotscope-run.so into the
// program (the attach path), whose agent takes the socket's path over. The connections the
// launcher accepted meanwhile are relayed to it. A program nobody asks about pays nothing for
// its agent: no library, no thread, no socket, no file.
#pragma once

#include "config/config.hpp"

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hotscope::cli {

// Whether `hotscope run` with these settings leaves the runtime for the first client to load:
// the heap alone in the sampled mode, with the agent on and only on its Unix socket, where the
// launcher may trace its child (Yama's ptrace_scope).
bool runtime_waits_for_a_client(bool heap_only, const config::Config& config);

class AgentAtFirstClient {
public:
  // Registers `program` (started, its new image loaded) in `config.runtime_dir`: null with
  // `problem` when that cannot be done, and without one when the program's own agent (a program
  // linked with hotscope) listens there already.
  static std::unique_ptr<AgentAtFirstClient> start(pid_t program, const config::Config& config,
                                                   std::string& problem);
  // Removes <pid>.json and <pid>.sock while they are still the launcher's.
  ~AgentAtFirstClient();
  AgentAtFirstClient(const AgentAtFirstClient&) = delete;
  AgentAtFirstClient& operator=(const AgentAtFirstClient&) = delete;

  // Appends the descriptors to wait for.
  void add_descriptors(std::vector<pollfd>& fds) const;
  // After poll(): `ready` are the entries add_descriptors appended, in order. Accepts clients,
  // loads the runtime at the first, moves the relayed bytes.
  void serve(std::span<const pollfd> ready);

private:
  struct Relay {
    int client = -1;
    int agent = -1;
    std::string to_agent;
    std::string to_client;
    bool client_done = false; // it sent everything (end of file)
    bool agent_done = false;
  };

  AgentAtFirstClient(pid_t program, std::string dir, std::string socket, std::string info,
                     int listener);
  void accept_clients();
  void load_runtime();
  void take(int client);
  static bool move_bytes(Relay& relay, const pollfd& client, const pollfd& agent);
  void stop_listening();

  pid_t program_;
  std::string dir_;
  std::string socket_;
  std::string info_;
  int listener_ = -1;
  ino_t listener_inode_ = 0;
  enum class State { Waiting, Loaded, Failed } state_ = State::Waiting;
  std::string failure_; // why the runtime could not be loaded (Failed)
  std::vector<Relay> relays_;
};

} // namespace hotscope::cli
