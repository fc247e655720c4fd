// The agent's HTTP side: the runtime directory and its files, the listening sockets, and
// libmicrohttpd daemons that run on threads of their own and hand each request to route().
#include "agent/agent.hpp"

#include "agent/protocol.hpp"
#include "agent/routes.hpp"
#include "atomic_file/atomic_file.hpp"
#include "threads/threads.hpp"

#include <fmt/format.h>
#include <microhttpd.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
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
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string_view>

namespace hotscope::agent {
namespace {

// A connection is dropped after 10 s without progress. Not shorter for one still waiting for its
// request: libmicrohttpd checks its timeouts before it reads a request that arrived while its
// thread was building a slow snapshot for another client, and would drop it unanswered. Each
// connection serves one request (every answer says "Connection: close"), so none waits idle
// after its answer; idle clients are borne by the connection limit (connection_limit()).
constexpr unsigned kConnectionTimeoutSeconds = 10;
// Two threads: one slow snapshot does not hold up every other client.
constexpr unsigned kUnixThreads = 2;
// Clients that connect in a burst wait in the queue for their turn instead of being refused.
constexpr int kListenBacklog = 128;

struct Listening {
  Listener listener;
  const Process* process;
};

struct Agent {
  pid_t owner = 0; // a forked child inherits this object but is not its owner
  std::string dir;
  Process process;
  Listening unix_context{Listener::Unix, &process};
  Listening tcp_context{Listener::Tcp, &process};
  MHD_Daemon* unix_daemon = nullptr;
  MHD_Daemon* tcp_daemon = nullptr;
  int unix_fd = -1; // the daemons' listening sockets
  int tcp_fd = -1;
};

Agent* running_agent = nullptr; // set by start(), cleared by stop()

// A forked child lets go of its parent's listening sockets: kept open there, they would keep the
// TCP port bound after the parent exits, and clients would connect to a socket nobody accepts
// on. The daemons themselves are left alone: their threads do not exist in the child.
void close_listeners_in_child() {
  Agent* agent = running_agent;
  if (agent == nullptr || agent->owner == getpid()) {
    return;
  }
  for (int* fd : {&agent->unix_fd, &agent->tcp_fd}) {
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
  }
}

std::string errno_text() {
  return std::strerror(errno);
}

// Creates the runtime directory, or checks that an existing one is ours and makes it private.
// It must hold nothing of another user's: while it was open to others (before it was made
// private, or a directory someone else could write), a link planted under one of our names
// would make us write through it.
std::string prepare_dir(const std::string& dir) {
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fmt::format("cannot create the runtime directory {}: {}", dir, errno_text());
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR || errno == ELOOP) {
      return fmt::format("the runtime directory {} is not a directory", dir);
    }
    return fmt::format("cannot use the runtime directory {}: {}", dir, errno_text());
  }
  DIR* entries = fdopendir(fd);
  if (entries == nullptr) {
    close(fd);
    return fmt::format("cannot use the runtime directory {}: {}", dir, errno_text());
  }
  std::string problem;
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    problem = fmt::format("cannot use the runtime directory {}: {}", dir, errno_text());
  } else if (status.st_uid != geteuid()) { // it could watch or replace our socket
    problem = fmt::format("the runtime directory {} belongs to uid {}, not to uid {}", dir,
                          status.st_uid, geteuid());
  } else if ((status.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) {
    problem = fmt::format("cannot make the runtime directory {} private (mode 0700): {}", dir,
                          errno_text());
  }
  // Read after it became private: nobody else can add an entry once this loop has started.
  while (problem.empty()) {
    const dirent* entry = readdir(entries);
    if (entry == nullptr) {
      break;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    struct stat owner {};
    if (fstatat(fd, entry->d_name, &owner, AT_SYMLINK_NOFOLLOW) == 0 && owner.st_uid != geteuid()) {
      problem = fmt::format("the runtime directory {} holds {}, which belongs to uid {}, not to "
                            "uid {}: remove it, or set HOTSCOPE_RUNTIME_DIR to a directory only "
                            "this user can write",
                            dir, entry->d_name, owner.st_uid, geteuid());
    }
  }
  closedir(entries);
  return problem;
}

// A listening Unix socket at `path`, mode 0600. Returns the fd, or -1 and sets `problem`.
int listen_unix(const std::string& path, std::string& problem) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    problem = fmt::format("the socket path {} is longer than {} bytes; set HOTSCOPE_RUNTIME_DIR to "
                          "a shorter directory",
                          path, sizeof(address.sun_path) - 1);
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    problem = fmt::format("cannot create a Unix socket: {}", errno_text());
    return -1;
  }
  // A socket left by a process that had this pid before and died without cleaning up.
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, kListenBacklog) != 0) {
    problem = fmt::format("cannot listen on {}: {}", path, errno_text());
    close(fd);
    unlink(path.c_str());
    return -1;
  }
  return fd;
}

// A listening TCP socket on host:port (numeric, checked by config). Sets `bound` to the
// address actually bound ("127.0.0.1:41234" when port 0 let the kernel choose).
int listen_tcp(const std::string& host, std::uint16_t port, std::string& bound,
               std::string& problem) {
  const config::TcpAddress endpoint{host, port, host.find(':') != std::string::npos, false};
  std::string reason;
  const int fd = agent::listen_tcp(endpoint, kListenBacklog, bound, reason);
  if (fd < 0) {
    problem = fmt::format("HOTSCOPE_AGENT_TCP: cannot listen on {}:{}: {}",
                          endpoint.v6 ? "[" + host + "]" : host, port, reason);
  }
  return fd;
}

MHD_Result collect_argument(void* request, MHD_ValueKind, const char* key, const char* value) {
  static_cast<Request*>(request)->query.emplace_back(key, value == nullptr ? "" : value);
  return MHD_YES;
}

MHD_Result send(MHD_Connection* connection, Response response) {
  auto* body = new std::string(std::move(response.body));
  MHD_Response* reply = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), [](void* text) { delete static_cast<std::string*>(text); }, body);
  if (reply == nullptr) {
    delete body;
    return MHD_NO;
  }
  MHD_add_response_header(reply, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
  if (!response.allow.empty()) {
    MHD_add_response_header(reply, MHD_HTTP_HEADER_ALLOW, response.allow.c_str());
  }
  MHD_add_response_header(reply, MHD_HTTP_HEADER_CONNECTION, "close");
  const MHD_Result queued = MHD_queue_response(connection, response.status, reply);
  MHD_destroy_response(reply);
  return queued;
}

// Where a request is between the calls of on_request (its *request_state points at one of these).
struct Progress {
  bool headers_in;
  bool has_body;
  bool query_cut; // more parameters than kMaxParameters: not parsed (see on_uri)
};
constexpr Progress kProgress[] = {{false, false, false}, {false, false, true}, {true, false, false},
                                  {true, false, true},   {true, true, false},  {true, true, true}};

void* progress(bool headers_in, bool has_body, bool query_cut) {
  for (const Progress& state : kProgress) {
    if (state.headers_in == headers_in && state.has_body == has_body &&
        state.query_cut == query_cut) {
      return const_cast<Progress*>(&state);
    }
  }
  return nullptr;
}

// libmicrohttpd (0.9.75) keeps each query parameter in the connection's memory pool and, when
// the pool runs out (some 500 parameters), neither answers nor closes the connection until its
// timeout. It calls this with the request's URI before it splits the query: a query with more
// parameters than any endpoint takes is cut off here (the URI lies in the connection's own
// buffer) and answered 414 at once.
void* on_uri(void*, const char* uri, MHD_Connection*) {
  char* query = uri == nullptr ? nullptr : const_cast<char*>(std::strchr(uri, '?'));
  std::size_t parameters = 0;
  for (const char* at = query; at != nullptr && *at != '\0'; ++at) {
    parameters += *at == '?' || *at == '&' ? 1 : 0;
  }
  const bool cut = parameters > kMaxParameters;
  if (cut) {
    query[1] = '\0';
  }
  return progress(false, false, cut);
}

// libmicrohttpd decodes %XX in the path and in each query key and value. A decoded NUL would
// cut the text short ("/v1/info%00.json" would read "/v1/info"): text in which a %XX stands for
// a control character is left as it came, so it matches no endpoint, parameter or value.
std::size_t unescape(void*, MHD_Connection*, char* text) {
  for (const char* at = text; *at != '\0'; ++at) {
    unsigned value = 0;
    if (at[0] == '%' && at[1] != '\0' && at[2] != '\0' &&
        std::from_chars(at + 1, at + 3, value, 16).ptr == at + 3 &&
        (value < 0x20 || value == 0x7F)) {
      return std::strlen(text);
    }
  }
  return MHD_http_unescape(text);
}

// libmicrohttpd calls this first when the headers are in, then with each piece of the body,
// then once more with none left: the answer goes out on that last call. No endpoint takes a
// body; one is read and discarded (the connection timeout bounds a slow one), then refused.
MHD_Result on_request(void* context, MHD_Connection* connection, const char* url,
                      const char* method, const char*, const char*, std::size_t* upload_size,
                      void** request_state) {
  if (*request_state == nullptr) { // on_uri runs first for every request; in case it did not
    *request_state = progress(false, false, false);
  }
  const Progress& state = *static_cast<const Progress*>(*request_state);
  if (!state.headers_in) {
    *request_state = progress(true, false, state.query_cut);
    return MHD_YES;
  }
  if (*upload_size != 0) {
    *upload_size = 0;
    *request_state = progress(true, true, state.query_cut);
    return MHD_YES;
  }
  const bool has_body = state.has_body;
  const Listening& listening = *static_cast<const Listening*>(context);
  if (listening.listener == Listener::Unix) {
    // Only the process's own user and root may look inside it.
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (info == nullptr ||
        getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
      return MHD_NO;
    }
    if (peer.uid != 0 && peer.uid != geteuid()) {
      return send(connection, forbidden(peer.uid, geteuid()));
    }
  }
  Request request{method, url, {}, has_body, state.query_cut};
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, collect_argument, &request);
  try {
    Response response = route(*listening.process, listening.listener, request);
    // A slow snapshot is not the client's idleness: the idle timer restarts for the sending
    // (libmicrohttpd restarts it when the timeout is set anew after being 0).
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, kConnectionTimeoutSeconds);
    return send(connection, std::move(response));
  } catch (...) {
    return send(connection,
                Response{500, "application/json", "{\"error\": \"internal error\"}\n", ""});
  }
}

// Connections each listener takes at most: an eighth of the process's file descriptors, between
// 32 and 512, so that clients never take the descriptors the program needs. Idle ones cost a
// descriptor and a few KiB each, no thread (epoll).
unsigned connection_limit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) {
    return 512;
  }
  return static_cast<unsigned>(std::clamp<rlim_t>(files.rlim_cur / 8, 32, 512));
}

// epoll, not poll: libmicrohttpd's poll loop keeps a heap array referenced only from its
// threads' stacks, which LeakSanitizer reports as leaked in a forked child (no such threads).
// No per-address limit: on loopback every local client is 127.0.0.1, so such a limit would let
// one client lock the others out as surely as the overall one.
MHD_Daemon* serve(int fd, unsigned threads, Listening* context) {
  const hotscope::threads::SignalsBlocked blocked; // libmicrohttpd's threads start here
  return MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD, 0, nullptr, nullptr, &on_request, context,
                          MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, threads,
                          MHD_OPTION_CONNECTION_TIMEOUT, kConnectionTimeoutSeconds,
                          MHD_OPTION_CONNECTION_LIMIT, connection_limit(),
                          MHD_OPTION_URI_LOG_CALLBACK, &on_uri, nullptr,
                          MHD_OPTION_UNESCAPE_CALLBACK, &unescape, nullptr, MHD_OPTION_END);
}

std::string read_link(const char* path) {
  std::error_code error;
  return std::filesystem::read_symlink(path, error).string();
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

} // namespace

std::vector<std::string> start(const config::Config& config) {
  std::vector<std::string> problems;
  auto* agent = new Agent;
  agent->owner = getpid();
  agent->dir = config.runtime_dir;
  Process& process = agent->process;
  process.pid = agent->owner;
  process.name = read_first_line("/proc/self/comm");
  process.executable = read_link("/proc/self/exe");
  process.start_unix_ns =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  process.start_ticks = process_start_ticks(process.pid);
  process.socket = socket_path(agent->dir, process.pid);
  process.trace_window_bytes = config.trace_window_bytes;

  if (!config.agent_tcp_host.empty()) {
    std::string problem;
    const int fd =
        listen_tcp(config.agent_tcp_host, config.agent_tcp_port, process.metrics_tcp, problem);
    if (fd >= 0) {
      agent->tcp_daemon = serve(fd, 1, &agent->tcp_context);
      if (agent->tcp_daemon == nullptr) {
        close(fd);
        process.metrics_tcp.clear();
        problem = "HOTSCOPE_AGENT_TCP: cannot start the HTTP server";
      } else {
        agent->tcp_fd = fd;
      }
    }
    if (!problem.empty()) {
      problems.push_back("hotscope: agent: " + problem + "; no TCP listener");
    }
  }

  std::string problem = prepare_dir(agent->dir);
  int fd = -1;
  if (problem.empty()) {
    fd = listen_unix(process.socket, problem);
  }
  if (fd >= 0) {
    agent->unix_daemon = serve(fd, kUnixThreads, &agent->unix_context);
    if (agent->unix_daemon == nullptr) {
      close(fd);
      problem = "cannot start the HTTP server";
    } else {
      agent->unix_fd = fd;
      const std::string path = info_path(agent->dir, process.pid);
      if (const std::string reason = atomic_file::write(path, process_json(process), 0600);
          !reason.empty()) {
        problem = fmt::format("cannot write {}: {}", path, reason);
      }
    }
  }
  if (!problem.empty()) {
    problems.push_back("hotscope: agent: " + problem + "; no agent socket");
    if (agent->unix_daemon != nullptr) {
      MHD_stop_daemon(agent->unix_daemon);
      agent->unix_daemon = nullptr;
      agent->unix_fd = -1;
      unlink(process.socket.c_str());
    }
  }
  running_agent = agent;
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, close_listeners_in_child); });
  return problems;
}

bool running() {
  return running_agent != nullptr && running_agent->owner == getpid();
}

void stop() {
  Agent* agent = running_agent;
  if (agent == nullptr || agent->owner != getpid()) {
    return;
  }
  running_agent = nullptr;
  interrupt_waits(); // a profile being taken must not hold up the daemons' stop
  if (agent->unix_daemon != nullptr) {
    // Files first: a client that looks now finds no agent rather than a closing one.
    unlink(info_path(agent->dir, agent->process.pid).c_str());
    unlink(agent->process.socket.c_str());
    MHD_stop_daemon(agent->unix_daemon);
  }
  if (agent->tcp_daemon != nullptr) {
    MHD_stop_daemon(agent->tcp_daemon);
  }
  delete agent;
}

} // namespace hotscope::agent
