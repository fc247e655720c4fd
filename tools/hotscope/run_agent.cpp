#include "run_agent.hpp"

#include "agent/process_file.hpp"
#include "agent/protocol.hpp"
#include "agent/runtime_dir.hpp"
#include "atomic_file/atomic_file.hpp"
#include "attach/attach_command.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace hotscope::cli {
namespace {

// Clients that connect together before the runtime is loaded wait in the queue.
constexpr int kBacklog = 16;
// The bytes a relay holds in each direction before it stops reading that side.
constexpr std::size_t kRelayBuffer = 64 * 1024;
// How long the launcher waits for the loaded runtime's agent to take the socket's path over.
constexpr std::chrono::seconds kTakeOverPatience{2};

// 0 to 3, or -1 without Yama.
int yama_ptrace_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  return in >> scope ? scope : -1;
}

ino_t inode_of(const std::string& path) {
  struct stat status {};
  return lstat(path.c_str(), &status) == 0 ? status.st_ino : 0;
}

// The client's request read (it must not find its connection reset before it reads the answer),
// then `problem` as the agent answers an error.
void answer_error(int client, const std::string& problem) {
  const int flags = fcntl(client, F_GETFL);
  fcntl(client, F_SETFL, flags & ~O_NONBLOCK);
  timeval patience{1, 0};
  setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
  std::string request;
  char bytes[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 64 * 1024) {
    const ssize_t got = read(client, bytes, sizeof bytes);
    if (got <= 0) {
      break;
    }
    request.append(bytes, static_cast<std::size_t>(got));
  }
  const std::string body = nlohmann::json{{"error", problem}}.dump() + "\n";
  const std::string answer = fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                         "application/json\r\nContent-Length: {}\r\nConnection: "
                                         "close\r\n\r\n{}",
                                         body.size(), body);
  for (std::size_t sent = 0; sent < answer.size();) {
    const ssize_t wrote = write(client, answer.data() + sent, answer.size() - sent);
    if (wrote <= 0) {
      break;
    }
    sent += static_cast<std::size_t>(wrote);
  }
  close(client);
}

// A connection to the agent's socket at `path`, non-blocking once made; -1 if none.
int connect_to(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1); // checked by listen_unix
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// Reads what `from` has into `into`; false at its end or on an error.
bool read_into(int from, std::string& into) {
  char bytes[16 * 1024];
  const ssize_t got = read(from, bytes, sizeof bytes);
  if (got > 0) {
    into.append(bytes, static_cast<std::size_t>(got));
    return true;
  }
  return got < 0 && (errno == EAGAIN || errno == EINTR);
}

// Writes what it can of `from` to `to`; false on an error (the peer went away).
bool write_from(int to, std::string& from) {
  const ssize_t wrote = send(to, from.data(), from.size(), MSG_NOSIGNAL);
  if (wrote >= 0) {
    from.erase(0, static_cast<std::size_t>(wrote));
    return true;
  }
  return errno == EAGAIN || errno == EINTR;
}

// One side of a relay as poll() waits for it: readable while it has not ended and the other
// side's buffer has room, writable while bytes wait for it. Not waited for at all (fd -1) when
// neither: an ended socket would report its hang-up at every poll.
pollfd side(int fd, bool done, const std::string& to_read_into, const std::string& to_write) {
  const auto events =
      static_cast<short>((!done && to_read_into.size() < kRelayBuffer ? POLLIN : 0) |
                         (to_write.empty() ? 0 : POLLOUT));
  return {events != 0 ? fd : -1, events, 0};
}

} // namespace

bool runtime_waits_for_a_client(bool heap_only, const config::Config& config) {
  const config::ParsedHeap heap = config::parse_heap(std::getenv);
  const int scope = yama_ptrace_scope();
  return heap_only && heap.options.mode == config::HeapMode::Sampled && config.agent &&
         config.agent_tcp_host.empty() && config.runtime_at_first_client &&
         (scope <= 1 || (scope == 2 && geteuid() == 0));
}

std::unique_ptr<AgentAtFirstClient>
AgentAtFirstClient::start(pid_t program, const config::Config& config, std::string& problem) {
  problem = agent::prepare_dir(config.runtime_dir);
  if (!problem.empty()) {
    return nullptr;
  }
  const agent::Process process =
      agent::process_of(program, config.runtime_dir, config.trace_window_bytes);
  if (const int own = connect_to(process.socket); own >= 0) {
    close(own); // a program linked with hotscope: its own agent serves it already
    return nullptr;
  }
  const int listener = agent::listen_unix(process.socket, kBacklog, problem);
  if (listener < 0) {
    return nullptr;
  }
  const std::string info = agent::info_path(config.runtime_dir, program);
  std::unique_ptr<AgentAtFirstClient> registered(
      new AgentAtFirstClient(program, config.runtime_dir, process.socket, info, listener));
  if (const std::string reason =
          atomic_file::write(info, agent::process_json(process, "sampled"), 0600);
      !reason.empty()) {
    problem = fmt::format("cannot write {}: {}", info, reason);
    return nullptr; // the destructor removes the socket
  }
  return registered;
}

AgentAtFirstClient::AgentAtFirstClient(pid_t program, std::string dir, std::string socket,
                                       std::string info, int listener)
    : program_(program), dir_(std::move(dir)), socket_(std::move(socket)), info_(std::move(info)),
      listener_(listener), listener_inode_(inode_of(socket_)) {}

AgentAtFirstClient::~AgentAtFirstClient() {
  for (const Relay& relay : relays_) {
    close(relay.client);
    close(relay.agent);
  }
  if (state_ != State::Loaded) {
    if (listener_inode_ != 0 && inode_of(socket_) == listener_inode_) {
      unlink(socket_.c_str());
    }
    unlink(info_.c_str());
  }
  if (listener_ >= 0) {
    close(listener_);
  }
}

void AgentAtFirstClient::add_descriptors(std::vector<pollfd>& fds) const {
  for (const Relay& relay : relays_) {
    fds.push_back(side(relay.client, relay.client_done, relay.to_agent, relay.to_client));
    fds.push_back(side(relay.agent, relay.agent_done, relay.to_client, relay.to_agent));
  }
  if (listener_ >= 0) {
    fds.push_back({listener_, POLLIN, 0});
  }
}

void AgentAtFirstClient::serve(std::span<const pollfd> ready) {
  std::size_t next = 0;
  std::erase_if(relays_, [&](Relay& relay) {
    const pollfd& client = ready[next++];
    const pollfd& agent = ready[next++];
    if (move_bytes(relay, client, agent)) {
      return false;
    }
    close(relay.client);
    close(relay.agent);
    return true;
  });
  if (listener_ >= 0 && (ready[next].revents & POLLIN) != 0) {
    accept_clients();
  }
}

bool AgentAtFirstClient::move_bytes(Relay& relay, const pollfd& client, const pollfd& agent) {
  constexpr short kReadable = POLLIN | POLLHUP | POLLERR;
  bool healthy = true;
  if (!relay.client_done && (client.revents & kReadable) != 0) {
    relay.client_done = !read_into(relay.client, relay.to_agent);
  }
  if (!relay.agent_done && (agent.revents & kReadable) != 0) {
    relay.agent_done = !read_into(relay.agent, relay.to_client);
  }
  if ((agent.revents & POLLOUT) != 0) {
    healthy = write_from(relay.agent, relay.to_agent) && healthy;
  }
  if ((client.revents & POLLOUT) != 0) {
    healthy = write_from(relay.client, relay.to_client) && healthy;
  }
  // Each side's end passed on once its bytes are.
  if (relay.client_done && relay.to_agent.empty()) {
    shutdown(relay.agent, SHUT_WR);
  }
  if (relay.agent_done && relay.to_client.empty()) {
    shutdown(relay.client, SHUT_WR);
  }
  const bool finished =
      relay.client_done && relay.agent_done && relay.to_agent.empty() && relay.to_client.empty();
  return healthy && !finished;
}

void AgentAtFirstClient::accept_clients() {
  for (;;) {
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      break; // EAGAIN: no one else waits
    }
    take(client);
  }
  if (state_ == State::Loaded) {
    stop_listening();
  }
}

void AgentAtFirstClient::take(int client) {
  if (state_ == State::Waiting) {
    load_runtime();
  }
  if (state_ == State::Failed) {
    answer_error(client, failure_);
    return;
  }
  const int agent = connect_to(socket_);
  if (agent < 0) {
    answer_error(client, fmt::format("the live agent of process {} does not answer on {}: {}",
                                     program_, socket_, std::strerror(errno)));
    return;
  }
  relays_.push_back(Relay{client, agent, {}, {}, false, false});
}

void AgentAtFirstClient::load_runtime() {
  const auto started = std::chrono::steady_clock::now();
  std::string problem = attach::load_runtime(program_, dir_);
  if (problem.empty()) {
    // Its agent binds a socket of its own at the same path when the library loads.
    while (inode_of(socket_) == listener_inode_ &&
           std::chrono::steady_clock::now() - started < kTakeOverPatience) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (inode_of(socket_) == listener_inode_) {
      problem = fmt::format("hotscope run: libhotscope-run.so was loaded into process {}, but its "
                            "agent did not take {} over within {} s",
                            program_, socket_, kTakeOverPatience.count());
    }
  }
  if (problem.empty()) {
    state_ = State::Loaded;
    return;
  }
  state_ = State::Failed;
  failure_ = problem + "; HOTSCOPE_RUNTIME_AT=start loads the agent with the program";
  std::fprintf(stderr, "%s\n", failure_.c_str());
}

void AgentAtFirstClient::stop_listening() {
  close(listener_);
  listener_ = -1;
}

} // namespace hotscope::cli
