#include "agent_client.hpp"

#include "agent/protocol.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

namespace hotscope::cli {
namespace {

namespace fs = std::filesystem;

constexpr long kRequestTimeoutSeconds = 60;

bool process_exists(std::int64_t pid) {
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// The pid a "<pid>.json" or "<pid>.sock" file belongs to, or 0.
std::int64_t pid_of(const fs::path& file) {
  const std::string stem = file.stem().string();
  std::int64_t pid = 0;
  const auto [end, error] = std::from_chars(stem.data(), stem.data() + stem.size(), pid);
  return error == std::errc() && end == stem.data() + stem.size() ? pid : 0;
}

// The agent of the process with this pid still runs: the pid is alive and is the same process
// (a reused pid has another start time).
bool alive(std::int64_t pid, const nlohmann::json& info) {
  return process_exists(pid) &&
         agent::process_start_ticks(pid) == info.value("start_ticks", std::uint64_t{0});
}

// A socket left behind: connecting is refused (nobody listens), and it is older than the moment
// between an agent's bind() and listen(), so no agent is just starting on it.
bool nobody_listens(const std::string& path) {
  struct stat status {};
  if (lstat(path.c_str(), &status) != 0 || !S_ISSOCK(status.st_mode) ||
      std::time(nullptr) - status.st_mtime < 2) {
    return false;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  const bool refused =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 &&
      errno == ECONNREFUSED;
  close(fd);
  return refused;
}

void remove_files(const std::string& dir, std::int64_t pid) {
  std::error_code error;
  fs::remove(agent::info_path(dir, pid), error);
  fs::remove(agent::socket_path(dir, pid), error);
}

std::string comm_of(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The value of `name` in the process's environment as it started, "" if unset or unreadable.
std::string environment_value(std::int64_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return "";
}

// Whether the heap profiler's preload library is mapped in the process (which then has no agent:
// HOTSCOPE_AGENT=0, or the library preloaded without libhotscope-run.so).
bool runs_under_preload(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(in, line);) {
    if (line.find("/libhotscope-preload.so") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Where the process writes its profile at exit: HOTSCOPE_OUT, relative to its working directory.
std::string profile_dir(std::int64_t pid) {
  const std::string out = environment_value(pid, "HOTSCOPE_OUT");
  if (!out.empty() && out.front() == '/') {
    return out;
  }
  std::error_code error;
  const fs::path cwd = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", error);
  if (error) {
    return out.empty() ? "its working directory" : out + " (in its working directory)";
  }
  return (cwd / (out.empty() ? "." : out)).lexically_normal().string();
}

// What to do about a process without an agent: how to get a profile from it now, or where it
// will be written.
std::string no_agent(std::int64_t pid, const std::string& dir) {
  if (runs_under_preload(pid)) {
    return fmt::format("process {} ({}) runs the heap profiler's preload library without a live "
                       "agent (HOTSCOPE_AGENT=0, or no libhotscope-run.so): its heap profile is "
                       "written to {}/heap.json when it exits; `kill -TERM {}` makes it write the "
                       "profile now and end",
                       pid, comm_of(pid), profile_dir(pid), pid);
  }
  return fmt::format("process {} ({}) runs no hotscope agent in {}: the agent starts with "
                     "programs linked with hotscope unless HOTSCOPE_AGENT=0; if the program set "
                     "HOTSCOPE_RUNTIME_DIR, run this command with the same value; a program not "
                     "built with hotscope gets a heap profile when started with `hotscope run "
                     "--heap -- PROGRAM`",
                     pid, comm_of(pid), dir);
}

void check_api_version(const AgentProcess& process) {
  const int version = process.info.value("api_version", 0);
  if (version != agent::kApiVersion) {
    throw Failure(kOtherApiVersion,
                  fmt::format("process {} speaks agent API v{}, this hotscope speaks v{}: use the "
                              "hotscope command of its version ({})",
                              process.pid, version, agent::kApiVersion,
                              process.info.value("hotscope_version", "unknown")));
  }
}

std::size_t append(char* data, std::size_t size, std::size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

// The "error" text of an agent's JSON error body, else the body itself.
std::string error_text(const std::string& body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object() && json.contains("error") && json["error"].is_string()) {
    return json["error"];
  }
  return body.substr(0, body.find('\n'));
}

} // namespace

std::string runtime_dir() {
  return config::runtime_dir(std::getenv("HOTSCOPE_RUNTIME_DIR"), std::getenv("XDG_RUNTIME_DIR"),
                             getuid());
}

std::vector<AgentProcess> live_agents(const std::string& dir, std::vector<std::string>* removed) {
  std::set<std::int64_t> pids;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const fs::path& file = entry.path();
    if (file.extension() == ".json" || file.extension() == ".sock") {
      if (const std::int64_t pid = pid_of(file); pid > 0) {
        pids.insert(pid);
      }
    }
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    throw Failure(error == std::errc::permission_denied ? kPermissionDenied : kFailed,
                  fmt::format("cannot read the runtime directory {}: {}", dir, error.message()));
  }
  std::vector<AgentProcess> list;
  for (const std::int64_t pid : pids) {
    std::ifstream in(agent::info_path(dir, pid));
    const nlohmann::json info = nlohmann::json::parse(in, nullptr, false);
    std::string why;
    if (!process_exists(pid)) {
      why = fmt::format("removed the files of process {}, which has ended", pid);
    } else if (info.is_object() && !alive(pid, info)) {
      why = fmt::format("removed the files of an earlier process {}: that pid now belongs to "
                        "another process (its start time differs)",
                        pid);
    } else if (!info.is_object() && nobody_listens(agent::socket_path(dir, pid))) {
      why = fmt::format("removed the socket {}, on which nobody listens (no {} beside it)",
                        agent::socket_path(dir, pid),
                        fs::path(agent::info_path(dir, pid)).filename().string());
    } else if (info.is_object()) {
      list.push_back(AgentProcess{pid, info, agent::socket_path(dir, pid)});
    }
    // Else a live process whose agent has bound its socket and not yet written its file.
    if (!why.empty()) {
      remove_files(dir, pid);
      if (removed != nullptr) {
        removed->push_back(std::move(why));
      }
    }
  }
  return list;
}

AgentProcess find_by_pid(const std::string& dir, std::int64_t pid) {
  if (pid <= 0 || !process_exists(pid)) {
    throw Failure(kNoProcess, fmt::format("no process with pid {}", pid));
  }
  const std::string path = agent::info_path(dir, pid);
  std::ifstream in(path);
  if (!in && errno == EACCES) {
    throw Failure(kPermissionDenied, fmt::format("cannot read {}: permission denied", path));
  }
  const nlohmann::json info = nlohmann::json::parse(in, nullptr, false);
  if (!info.is_object() || !alive(pid, info)) {
    if (info.is_object()) {
      remove_files(dir, pid); // left by an earlier process with this pid
    }
    throw Failure(kNoAgent, no_agent(pid, dir));
  }
  AgentProcess process{pid, info, agent::socket_path(dir, pid)};
  check_api_version(process);
  return process;
}

AgentProcess find_by_name(const std::string& dir, const std::string& name) {
  std::vector<AgentProcess> matches;
  for (AgentProcess& process : live_agents(dir)) {
    const std::string executable = process.info.value("executable", "");
    if (process.name() == name || fs::path(executable).filename() == name) {
      matches.push_back(std::move(process));
    }
  }
  if (matches.size() > 1) {
    std::string list;
    for (const AgentProcess& process : matches) {
      list += fmt::format(" {}", process.pid);
    }
    throw Failure(kUsage, fmt::format("{} processes named {} run an agent (pids{}); choose one "
                                      "with -p PID",
                                      matches.size(), name, list));
  }
  if (matches.empty()) {
    // Is there such a process at all, without an agent?
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
      const std::int64_t pid = pid_of(entry.path());
      if (pid > 0 && comm_of(pid) == name) {
        throw Failure(kNoAgent, no_agent(pid, dir));
      }
    }
    throw Failure(kNoProcess, fmt::format("no process named {}", name));
  }
  check_api_version(matches.front());
  return matches.front();
}

std::string query_value(const std::string& value) {
  const std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  char* escaped =
      curl ? curl_easy_escape(curl.get(), value.data(), static_cast<int>(value.size())) : nullptr;
  if (escaped == nullptr) {
    throw Failure(kFailed, "cannot initialize libcurl");
  }
  std::string text = escaped;
  curl_free(escaped);
  return text;
}

Reply send(const AgentProcess& process, const std::string& method, const std::string& path,
           long wait_seconds) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  const std::unique_ptr<CURL, void (*)(CURL*)> curl(initialized ? curl_easy_init() : nullptr,
                                                    curl_easy_cleanup);
  if (!curl) {
    throw Failure(kFailed, "cannot initialize libcurl");
  }
  const std::string& socket = process.socket;
  const std::string url = "http://localhost" + path;
  Reply reply;
  curl_easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, socket.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, 0L);
  }
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, kRequestTimeoutSeconds + wait_seconds);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &reply.body);
  const CURLcode result = curl_easy_perform(curl.get());
  if (result == CURLE_COULDNT_CONNECT) {
    long os_errno = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_OS_ERRNO, &os_errno);
    if (os_errno == EACCES || os_errno == EPERM) {
      throw Failure(kPermissionDenied,
                    fmt::format("permission denied on {}: process {} belongs to another user",
                                socket, process.pid));
    }
    throw Failure(kNoAgent,
                  fmt::format("process {} does not answer on {} ({}): its agent has "
                              "stopped",
                              process.pid, socket, std::strerror(static_cast<int>(os_errno))));
  }
  if (result != CURLE_OK) {
    throw Failure(kFailed, fmt::format("no answer from the agent of process {}: {}", process.pid,
                                       curl_easy_strerror(result)));
  }
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Reply request(const AgentProcess& process, const std::string& method, const std::string& path,
              long wait_seconds) {
  Reply reply = send(process, method, path, wait_seconds);
  check_status(process, method, path, reply);
  return reply;
}

void check_status(const AgentProcess& process, const std::string& method, const std::string& path,
                  const Reply& reply) {
  if (reply.status / 100 == 2) {
    return;
  }
  const std::string message = error_text(reply.body);
  switch (reply.status) {
  case 403:
    throw Failure(kPermissionDenied, fmt::format("process {}: {}", process.pid, message));
  case 501:
    throw Failure(kNotEnabled, fmt::format("process {}: {}", process.pid, message));
  case 404: {
    const nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
    if (body.is_object() && body.value("api_version", agent::kApiVersion) != agent::kApiVersion) {
      check_api_version(AgentProcess{process.pid, body, process.socket});
    }
    [[fallthrough]];
  }
  default:
    throw Failure(kFailed,
                  fmt::format("process {} answered {} {}: {}", process.pid, method, path, message));
  }
}

} // namespace hotscope::cli
