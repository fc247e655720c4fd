// The agent's files and listeners: <pid>.json, the listening sockets,
// handed to the HTTP server (http_server.hpp); start(), stop() and the forked child's side.
#include "agent/agent.hpp"

#include "agent/http_server.hpp"
#include "agent/protocol.hpp"
#include "agent/routes.hpp"
#include "agent/runtime_dir.hpp"
#include "atomic_file/atomic_file.hpp"
#include "heap_link/heap_link.hpp"
#include "text/text.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>

namespace hotscope::agent {
namespace {

// Clients that connect in a burst wait in the queue for their turn instead of being refused.
constexpr int kListenBacklog = 128;

struct Agent {
  pid_t owner = 0; // a forked child inherits this object but is not its owner
  std::string dir;
  Process process;
  std::shared_ptr<Server> server; // null when neither listener could be set up
  bool files_written = false;     // <pid>.sock and <pid>.json are ours to remove
};

Agent* running_agent = nullptr; // set by start(), cleared by stop()

// Servers that stopped while a worker was still building an answer (it holds its server until
// done). Never destroyed: exit waits for them (wait_for_answers).
std::mutex still_answering_mutex;
std::vector<std::shared_ptr<Server>>& still_answering = *new std::vector<std::shared_ptr<Server>>;

void stop_server(const std::shared_ptr<Server>& server) {
  if (server == nullptr || server->stop()) {
    return;
  }
  const std::lock_guard lock(still_answering_mutex);
  std::erase_if(still_answering, [](const std::shared_ptr<Server>& stopped) {
    return stopped->wait_for_workers(std::chrono::steady_clock::now());
  });
  still_answering.push_back(server);
}

// A forked child lets go of its parent's listening sockets: kept open there, they would keep the
// TCP port bound after the parent exits, and clients would connect to a socket nobody accepts
// on. The daemons themselves are left alone: their threads do not exist in the child, nor do
// the workers of the stopped servers, which it forgets without touching them.
void let_go_in_child() {
  new (&still_answering_mutex) std::mutex;
  new (&still_answering) std::vector<std::shared_ptr<Server>>;
  Agent* agent = running_agent;
  if (agent == nullptr || agent->owner == getpid() || agent->server == nullptr) {
    return;
  }
  agent->server->let_go_in_child();
}

// Stops an agent whose server broke (a descriptor of its was closed): start() makes a new one.
void dispose_broken() {
  Agent* agent = running_agent;
  if (agent == nullptr || agent->owner != getpid()) {
    return;
  }
  running_agent = nullptr;
  stop_server(agent->server);
  delete agent;
}

// A listening TCP socket on host:port (numeric, checked by config). Sets `bound` to the
// address actually bound ("127.0.0.1:41234" when port 0 let the kernel choose).
int listen_tcp(const std::string& host, std::uint16_t port, std::string& bound,
               std::string& problem) {
  const config::TcpAddress endpoint{host, port, host.find(':') != std::string::npos, false};
  std::string reason;
  const int fd = agent::listen_tcp(endpoint, kListenBacklog, bound, reason);
  if (fd < 0) {
    problem = text::cat("HOTSCOPE_AGENT_TCP: cannot listen on ",
                        endpoint.v6 ? "[" + host + "]" : host, ":", port, ": ", reason);
  }
  return fd;
}

} // namespace

std::vector<std::string> start(const config::Config& config) {
  dispose_broken();
  std::vector<std::string> problems;
  auto* agent = new Agent;
  agent->owner = getpid();
  agent->dir = config.runtime_dir;
  agent->process = process_of(agent->owner, agent->dir, config.trace_window_bytes);
  Process& process = agent->process;

  int tcp_fd = -1;
  if (!config.agent_tcp_host.empty()) {
    std::string problem;
    tcp_fd = listen_tcp(config.agent_tcp_host, config.agent_tcp_port, process.metrics_tcp, problem);
    if (tcp_fd < 0) {
      problems.push_back("hotscope: agent: " + problem + "; no TCP listener");
    }
  }
  std::string problem = prepare_dir(agent->dir);
  int unix_fd = -1;
  if (problem.empty()) {
    unix_fd = listen_unix(process.socket, kListenBacklog, problem);
  }
  const std::string info = info_path(agent->dir, process.pid);
  if (unix_fd >= 0 || tcp_fd >= 0) {
    std::string failed;
    agent->server =
        Server::start(process, unix_fd, tcp_fd,
                      {unix_fd >= 0 ? process.socket : "", unix_fd >= 0 ? info : ""}, failed);
    if (agent->server == nullptr) {
      problem = failed;
      if (unix_fd >= 0) {
        unlink(process.socket.c_str());
        unix_fd = -1;
      }
    }
  }
  if (unix_fd >= 0) {
    agent->files_written = true;
    if (const std::string reason =
            atomic_file::write(info, process_json(process, heap_link::mode_name()), 0600);
        !reason.empty()) {
      problem = text::cat("cannot write ", info, ": ", reason);
    }
  }
  if (!problem.empty()) {
    problems.push_back("hotscope: agent: " + problem + "; no agent socket");
  }
  running_agent = agent;
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, let_go_in_child); });
  return problems;
}

bool running() {
  const Agent* agent = running_agent;
  return agent != nullptr && agent->owner == getpid() &&
         (agent->server == nullptr || !agent->server->broken());
}

void stop() {
  Agent* agent = running_agent;
  if (agent == nullptr || agent->owner != getpid()) {
    return;
  }
  running_agent = nullptr;
  interrupt_waits(); // a profile being taken must not hold up the stop
  // Files first: a client that looks now finds no agent rather than a closing one.
  if (agent->files_written) {
    unlink(info_path(agent->dir, agent->process.pid).c_str());
    unlink(agent->process.socket.c_str());
  }
  stop_server(agent->server);
  delete agent;
}

bool wait_for_answers(std::chrono::milliseconds most) {
  const auto deadline = std::chrono::steady_clock::now() + most;
  const std::lock_guard lock(still_answering_mutex);
  std::erase_if(still_answering, [&](const std::shared_ptr<Server>& stopped) {
    return stopped->wait_for_workers(deadline);
  });
  return still_answering.empty();
}

} // namespace hotscope::agent
