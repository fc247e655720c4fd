#include "agent/http_server.hpp"

#include "agent/http_parser.hpp"
#include "locks/locks.hpp"
#include "threads/threads.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <system_error>

namespace hotscope::agent {

using Clock = std::chrono::steady_clock;

struct Job {
  std::string key; // requests with the same key share the answer; "" for one not shared
  Request request;
  Listener listener = Listener::Unix;
  bool http10 = false;
  std::shared_ptr<Answer> answer;
};

struct Connection {
  enum class Phase { Reading, Answering, Lingering };
  Descriptor socket;
  Listener listener = Listener::Unix;
  bool forbidden = false; // a peer of another uid than ours and root's
  uid_t peer_uid = 0;
  Phase phase = Phase::Reading;
  std::string received;
  std::shared_ptr<Answer> answer;
  std::size_t position = 0;
  bool head_only = false;
  Clock::time_point deadline;
};

namespace {

// Connections each listener takes at most: an eighth of the process's file descriptors, between
// 32 and 512, so that clients never take the descriptors the program needs.
unsigned connection_limit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) {
    return 512;
  }
  return static_cast<unsigned>(std::clamp<rlim_t>(files.rlim_cur / 8, 32, 512));
}

// The status line and headers. A body of unknown length goes in chunks to an HTTP/1.1 client
// (a cut answer is then seen as cut) and to the end of the connection to an HTTP/1.0 one.
enum class Framing { Length, Chunked, ToTheEnd };
std::string head_of(const Response& response, Framing framing) {
  std::string head =
      "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) + "\r\n";
  head += "Content-Type: " + response.content_type + "\r\n";
  if (!response.allow.empty()) {
    head += "Allow: " + response.allow + "\r\n";
  }
  if (framing == Framing::Length) {
    head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  } else if (framing == Framing::Chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  return head + "Connection: close\r\n\r\n";
}

// What identical requests share: the listener, GET for HEAD, the version and the target.
std::string key_of(const Request& request, Listener listener, bool http10) {
  if ((request.method != "GET" && request.method != "HEAD") || request.has_body ||
      request.query_cut) {
    return "";
  }
  std::string key = listener == Listener::Unix ? "U " : "T ";
  key += http10 ? "1.0 " : "1.1 ";
  key += request.path;
  for (const auto& [name, value] : request.query) {
    key += '\n' + name + '=' + value;
  }
  return key;
}

} // namespace

Descriptor Descriptor::of(int fd) {
  struct stat status {};
  Descriptor descriptor;
  if (fd >= 0 && fstat(fd, &status) == 0) {
    descriptor = Descriptor{fd, status.st_dev, status.st_ino};
  }
  return descriptor;
}

bool Descriptor::ours() const {
  struct stat status {};
  return fd >= 0 && fstat(fd, &status) == 0 && status.st_dev == device && status.st_ino == inode;
}

void Descriptor::close_if_ours() {
  if (ours()) {
    close(fd);
  }
  fd = -1;
}

// The poll set's room is made here, on the thread that starts the agent: its own threads then
// allocate nothing until a client comes. A program that forks right after it starts (a daemon)
// must not find an allocator lock taken by one of them (glibc's malloc is fork-safe, some
// sanitizers' are not).
Server::Server(const Process& process, std::vector<std::string> files)
    : process_(process), files_(std::move(files)), connection_limit_(connection_limit()) {
  polled_.reserve(3 + 2 * std::size_t{connection_limit_});
}

std::shared_ptr<Server> Server::start(const Process& process, int unix_fd, int tcp_fd,
                                      std::vector<std::string> files, std::string& problem) {
  auto server = std::make_shared<Server>(process, std::move(files));
  server->listeners_[0] = Descriptor::of(unix_fd);
  server->listeners_[1] = Descriptor::of(tcp_fd);
  int pair[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    problem = std::string("cannot create the server's wake-up sockets: ") + std::strerror(errno);
    server->listeners_[0].close_if_ours();
    server->listeners_[1].close_if_ours();
    return nullptr;
  }
  server->wake_in_ = Descriptor::of(pair[0]);
  server->wake_out_ = Descriptor::of(pair[1]);
  const threads::SignalsBlocked blocked; // the threads start with every signal blocked
  try {
    server->io_thread_ = std::thread([server] {
      locks::own_thread();
      server->run_io();
    });
  } catch (const std::system_error& error) {
    problem = std::string("cannot start the HTTP server's threads: ") + error.what();
    if (server->io_thread_.joinable()) {
      server->stop(); // its I/O thread closes the sockets
    } else {
      server->let_go_in_child();
    }
    return nullptr;
  }
  return server;
}

Server::~Server() {
  // stop() joined or let go of every thread; the I/O thread closed the rest of what was ours.
  if (io_thread_.joinable()) {
    io_thread_.detach();
  }
  wake_out_.close_if_ours(); // the last thread that could wake the I/O thread is done
}

void Server::wake() {
  if (!wake_pending_.exchange(true) && wake_out_.ours()) {
    // send(), not write(): on a descriptor that is no longer a socket it fails and writes nothing.
    static_cast<void>(send(wake_out_.fd, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL));
  }
}

bool Server::stop() {
  const Clock::time_point started = Clock::now();
  stopping_ = true;
  {
    const std::lock_guard lock(jobs_mutex_);
    jobs_changed_.notify_all();
  }
  wake_pending_ = false;
  wake();
  if (io_thread_.joinable() && io_thread_.get_id() != std::this_thread::get_id()) {
    io_thread_.join();
  }
  const bool ended = wait_for_workers(started + kStopWait);
  for (std::thread& worker : workers_) {
    if (ended) {
      worker.join();
    } else {
      worker.detach(); // each holds the server until its answer is done
    }
  }
  workers_.clear();
  return ended;
}

bool Server::wait_for_workers(Clock::time_point deadline) {
  std::unique_lock lock(jobs_mutex_);
  return jobs_changed_.wait_until(lock, deadline, [&] { return workers_running_ == 0; });
}

void Server::let_go_in_child() {
  for (Descriptor* descriptor : {&listeners_[0], &listeners_[1], &wake_in_, &wake_out_}) {
    descriptor->close_if_ours();
  }
}

bool Server::check_own_descriptors() {
  for (const Descriptor& descriptor : {listeners_[0], listeners_[1], wake_in_, wake_out_}) {
    if (descriptor.fd >= 0 && !descriptor.ours()) {
      return false;
    }
  }
  return true;
}

void Server::run_io() {
  pthread_setname_np(pthread_self(), "hotscope-agent");
  const threads::OwnThread own;
  try {
    while (!stopping_ && poll_once(polled_)) {
    }
  } catch (...) { // out of memory: the agent stops rather than the program
    broken_ = true;
  }
  shut_down();
}

// What to wait for: the wake pair, the listeners with room for a connection, each connection's
// next step. Returns when to wake at the latest (a deadline, or a second: descriptors are
// checked at least that often).
Clock::time_point Server::poll_set(std::vector<pollfd>& polled, Clock::time_point now) {
  polled.clear();
  polled.push_back({wake_in_.fd, POLLIN, 0});
  Clock::time_point next = now + std::chrono::seconds(1);
  for (int i = 0; i < 2; ++i) {
    const auto held = std::count_if(connections_.begin(), connections_.end(),
                                    [&](const auto& c) { return c->listener == kinds_[i]; });
    const bool room = static_cast<unsigned>(held) < connection_limit_;
    const bool paused = now < accept_paused_until_[i];
    polled.push_back({listeners_[i].fd, static_cast<short>(room && !paused ? POLLIN : 0), 0});
    if (paused) {
      next = std::min(next, accept_paused_until_[i]);
    }
  }
  for (const auto& connection : connections_) {
    short events = 0;
    if (connection->phase != Connection::Phase::Answering) {
      events = POLLIN;
    } else if (!connection->answer->ready(connection->position).empty()) {
      events = POLLOUT;
    }
    polled.push_back({connection->socket.fd, events, 0});
    next = std::min(next, connection->deadline);
  }
  return next;
}

bool Server::poll_once(std::vector<pollfd>& polled) {
  if (!check_own_descriptors()) {
    broken_ = true;
    return false;
  }
  const Clock::time_point now = Clock::now();
  const auto wait =
      std::chrono::duration_cast<std::chrono::milliseconds>(poll_set(polled, now) - now).count();
  const int ready =
      poll(polled.data(), polled.size(), static_cast<int>(std::max<long>(wait, 0) + 1));
  if (ready < 0 && errno != EINTR) {
    broken_ = true;
    return false;
  }
  if (polled[0].revents != 0) {
    char drained[64];
    if (wake_in_.ours()) {
      while (recv(wake_in_.fd, drained, sizeof(drained), MSG_DONTWAIT) > 0) {
      }
    }
    // After the drain: cleared first, a wake() in between would send a byte the drain then
    // swallows, and leave the flag set with nothing to read, so the next wake() would send none
    // (an answer waited for the poll's one-second timeout). What a wake() before this line
    // announced is read below, after it.
    wake_pending_ = false;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    if (polled[1 + i].revents != 0) {
      accept_on(i);
    }
  }
  for (std::size_t i = 0; i < connections_.size(); ++i) {
    serve(*connections_[i], polled.size() > 3 + i ? polled[3 + i].revents : 0);
  }
  const auto dropped = std::remove_if(connections_.begin(), connections_.end(),
                                      [](const auto& c) { return c->socket.fd < 0; });
  connections_.erase(dropped, connections_.end());
  release_sent();
  return true;
}

// Frees each answer's pieces that every client of it was sent.
void Server::release_sent() {
  std::vector<std::pair<Answer*, std::size_t>> slowest;
  for (const auto& connection : connections_) {
    if (connection->answer == nullptr) {
      continue;
    }
    auto found = std::find_if(slowest.begin(), slowest.end(), [&](const auto& entry) {
      return entry.first == connection->answer.get();
    });
    if (found == slowest.end()) {
      slowest.emplace_back(connection->answer.get(), connection->position);
    } else {
      found->second = std::min(found->second, connection->position);
    }
  }
  for (const auto& [answer, position] : slowest) {
    answer->release_before(position);
  }
}

void Server::shut_down() {
  stopping_ = true;
  for (auto& connection : connections_) {
    detach(*connection);
    connection->socket.close_if_ours();
  }
  connections_.clear();
  {
    const std::lock_guard lock(jobs_mutex_);
    for (const auto& job : jobs_) {
      job->answer->abandon();
    }
    jobs_.clear();
    jobs_changed_.notify_all();
  }
  for (Descriptor* descriptor : {&listeners_[0], &listeners_[1], &wake_in_}) {
    descriptor->close_if_ours();
  }
  if (broken_) {
    for (const std::string& file : files_) {
      unlink(file.c_str()); // clients now find no agent, until start_agent() makes a new one
    }
  }
}

void Server::accept_on(std::size_t index) {
  const Descriptor& listener = listeners_[index];
  for (int accepted = 0; accepted < 64; ++accepted) {
    const auto held = std::count_if(connections_.begin(), connections_.end(),
                                    [&](const auto& c) { return c->listener == kinds_[index]; });
    if (static_cast<unsigned>(held) >= connection_limit_ || !listener.ours()) {
      return;
    }
    const int fd = accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The listener stays readable: try again later rather than spin.
        accept_paused_until_[index] = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    auto connection = std::make_unique<Connection>();
    connection->socket = Descriptor::of(fd);
    connection->listener = kinds_[index];
    connection->deadline = Clock::now() + kIdleTimeout;
    if (kinds_[index] == Listener::Unix) {
      ucred peer{};
      socklen_t length = sizeof(peer);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
        close(fd);
        continue;
      }
      connection->peer_uid = peer.uid;
      connection->forbidden = peer.uid != 0 && peer.uid != geteuid();
    }
    connections_.push_back(std::move(connection));
  }
}

void Server::detach(Connection& connection) {
  if (connection.answer == nullptr) {
    return;
  }
  const std::shared_ptr<Answer> answer = std::move(connection.answer); // kept until abandoned
  connection.answer.reset();
  const bool others = std::any_of(connections_.begin(), connections_.end(),
                                  [&](const auto& c) { return c->answer == answer; });
  if (!others) {
    answer->abandon(); // its writer stops at its next piece
  }
}

void Server::serve(Connection& connection, short events) {
  const Clock::time_point now = Clock::now();
  const auto drop = [&] {
    detach(connection);
    connection.socket.close_if_ours();
  };
  if ((events & POLLNVAL) != 0 || (events != 0 && !connection.socket.ours())) {
    detach(connection);
    connection.socket.fd = -1; // closed or replaced by the program: not ours to close
    return;
  }
  if (connection.phase == Connection::Phase::Answering) {
    if (connection.answer->failed() || (events & (POLLHUP | POLLERR)) != 0) {
      drop();
      return;
    }
    bool sent_any = false;
    for (std::string_view bytes = connection.answer->ready(connection.position); !bytes.empty();
         bytes = connection.answer->ready(connection.position)) {
      const std::size_t head = connection.answer->head_size();
      if (connection.head_only) {
        bytes = bytes.substr(0, head > connection.position ? head - connection.position : 0);
        if (bytes.empty()) {
          break;
        }
      }
      const ssize_t sent =
          send(connection.socket.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      }
      if (sent <= 0) {
        drop();
        return;
      }
      connection.position += static_cast<std::size_t>(sent);
      sent_any = true;
    }
    const std::size_t head = connection.answer->head_size();
    const bool done = connection.head_only ? head != 0 && connection.position >= head
                                           : connection.answer->complete(connection.position);
    if (done) {
      detach(connection);
      shutdown(connection.socket.fd, SHUT_WR); // the client reads to the end, then closes
      connection.phase = Connection::Phase::Lingering;
      connection.deadline = now + kLingerTime;
    } else if (sent_any || connection.answer->ready(connection.position).empty()) {
      // Waiting for the worker is not the client's idleness.
      connection.deadline = now + kIdleTimeout;
    }
  } else if ((events & (POLLIN | POLLHUP | POLLERR)) != 0) {
    char buffer[16384];
    const ssize_t got = recv(connection.socket.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    }
    if (got <= 0) {
      drop();
      return;
    }
    if (connection.phase == Connection::Phase::Reading) {
      connection.received.append(buffer, static_cast<std::size_t>(got));
      connection.deadline = now + kIdleTimeout;
      dispatch(connection);
    }
    return;
  }
  if (now >= connection.deadline) {
    drop();
  }
}

void Server::small_answer(Connection& connection, unsigned status, const std::string& problem) {
  const Response response =
      status == 403 ? forbidden(connection.peer_uid, geteuid()) : error_response(status, problem);
  auto answer = std::make_shared<Answer>(budget_, [this] { wake(); });
  answer->start(head_of(response, Framing::Length), false);
  answer->append(response.body);
  answer->finish();
  connection.answer = std::move(answer);
}

void Server::dispatch(Connection& connection) {
  ParsedRequest parsed = parse_request(connection.received);
  if (parsed.state == ParsedRequest::State::Incomplete) {
    return;
  }
  connection.received.clear();
  connection.received.shrink_to_fit();
  connection.phase = Connection::Phase::Answering;
  connection.position = 0;
  connection.head_only = parsed.request.method == "HEAD";
  if (parsed.state == ParsedRequest::State::Bad) {
    small_answer(connection, parsed.status, parsed.problem);
    return;
  }
  if (connection.forbidden) {
    small_answer(connection, 403, "");
    return;
  }
  if (budget_.full()) {
    small_answer(connection, 503,
                 "the agent's answers in flight use its whole memory budget (64 MiB); ask again "
                 "when they are sent");
    return;
  }
  if (!start_workers()) {
    small_answer(connection, 503, "the agent cannot start the threads that build its answers");
    return;
  }
  const std::string key = key_of(parsed.request, connection.listener, parsed.http10);
  if (!key.empty()) {
    for (auto shared = shareable_.begin(); shared != shareable_.end();) {
      const std::shared_ptr<Job> job = shared->lock();
      if (job == nullptr || !job->answer->joinable()) {
        shared = shareable_.erase(shared);
      } else if (job->key == key) {
        connection.answer = job->answer;
        return;
      } else {
        ++shared;
      }
    }
  }
  auto job = std::make_shared<Job>();
  job->key = key;
  job->request = std::move(parsed.request);
  job->listener = connection.listener;
  job->http10 = parsed.http10;
  job->answer = std::make_shared<Answer>(budget_, [this] { wake(); });
  connection.answer = job->answer;
  if (!key.empty()) {
    shareable_.push_back(job);
  }
  const std::lock_guard lock(jobs_mutex_);
  jobs_.push_back(std::move(job));
  jobs_changed_.notify_one();
}

// On the I/O thread, at the first request: a program that is never asked starts no worker
// (docs/agent.md, "The agent"). They start with the I/O thread's signals, all blocked, and the
// first answer waits until they marked themselves as the profiler's (a list of the program's
// threads leaves them out), for a second at most.
bool Server::start_workers() {
  if (workers_.size() == kWorkers) {
    return true;
  }
  try {
    while (workers_.size() < kWorkers) {
      workers_.emplace_back([self = shared_from_this()] {
        locks::own_thread();
        self->run_worker();
      });
    }
  } catch (const std::system_error&) {
    if (workers_.empty()) {
      return false;
    }
  }
  std::unique_lock lock(jobs_mutex_);
  jobs_changed_.wait_for(lock, std::chrono::seconds(1), [&] {
    return stopping_ || workers_running_ == static_cast<int>(workers_.size());
  });
  return true;
}

void Server::run_worker() {
  pthread_setname_np(pthread_self(), "hotscope-answer");
  const threads::OwnThread own;
  std::unique_lock lock(jobs_mutex_);
  ++workers_running_;
  jobs_changed_.notify_all(); // start_workers waits for it
  while (!stopping_) {
    if (jobs_.empty()) {
      jobs_changed_.wait(lock);
      continue;
    }
    const std::shared_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    work(*job);
    lock.lock();
  }
  --workers_running_;
  jobs_changed_.notify_all();
}

void Server::work(Job& job) {
  Answer& shared = *job.answer;
  if (shared.failed()) {
    return;
  }
  Response response;
  try {
    response = answer(process_, job.listener, job.request);
  } catch (...) {
    response = error_response(500, "internal error");
  }
  std::size_t held = response.held_bytes;
  if (held != 0 && !budget_.try_charge(held)) {
    response = error_response(503, "the agent's answers in flight would pass its memory budget "
                                   "(64 MiB); ask again when they are sent");
    held = 0;
  }
  const bool streamed = static_cast<bool>(response.write);
  const Framing framing = !streamed    ? Framing::Length
                          : job.http10 ? Framing::ToTheEnd
                                       : Framing::Chunked;
  try {
    shared.start(head_of(response, framing), framing == Framing::Chunked);
    if (streamed) {
      AnswerBuffer buffer(shared);
      std::ostream out(&buffer);
      out.exceptions(std::ios::badbit); // Abandoned leaves the writer at once
      response.write(out);
    } else {
      shared.append(response.body);
    }
    shared.finish();
  } catch (...) { // Abandoned, or a writer that failed: the clients get a cut answer
    shared.abandon();
  }
  response = Response{};
  budget_.release(held);
}

} // namespace hotscope::agent
