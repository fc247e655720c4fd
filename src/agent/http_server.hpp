// The agent's HTTP/1.1 server (docs/agent.md, "Limits"): one I/O thread polls the listening
// sockets and the connections, non-blocking; two workers build the answers with route's
// answer(). Every descriptor it uses is checked to still be its own (device and inode) before
// each use, so a program that closes them and opens its own files on those numbers loses the
// agent, never a file.
#pragma once

#include "agent/answer.hpp"
#include "agent/routes.hpp"

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotscope::agent {

// A descriptor as it was when the server took it. ours() is false once it was closed or now
// names another file, which the server then never reads, writes nor closes.
struct Descriptor {
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;

  static Descriptor of(int fd);
  bool ours() const;
  void close_if_ours(); // and forgets it either way
};

// A connection is dropped after this long without progress (reading its request, or being
// sent its answer); one already answered after kLingerTime.
inline constexpr std::chrono::seconds kIdleTimeout{10};
inline constexpr std::chrono::seconds kLingerTime{2};
// stop() waits this long for workers still writing an answer, then leaves them to end alone.
inline constexpr std::chrono::milliseconds kStopWait{150};

struct Job;
struct Connection;

class Server : public std::enable_shared_from_this<Server> {
public:
  // Serves on the listening sockets given (-1: none), which it now owns. `files` are removed if
  // the server breaks (its socket's path and <pid>.json). Empty `problem` when it runs.
  static std::shared_ptr<Server> start(const Process& process, int unix_fd, int tcp_fd,
                                       std::vector<std::string> files, std::string& problem);
  ~Server();

  // Stops serving within kStopWait or so, whatever the clients do; answers being written are
  // abandoned. False when a worker was still building an answer then: it ends alone, and holds
  // the server until it has (wait_for_workers).
  bool stop();
  // After stop(): waits until every worker has ended, until `deadline`; true when they have.
  bool wait_for_workers(std::chrono::steady_clock::time_point deadline);
  // True once a descriptor of the server was closed or replaced: it stopped serving.
  bool broken() const { return broken_.load(); }
  // In a forked child: closes the listening sockets and the wake pair if still ours.
  void let_go_in_child();
  static constexpr int kWorkers = 2;

  // For Answer: tells the I/O thread there is something to do.
  void wake();

  Server(const Process& process, std::vector<std::string> files);

private:
  void run_io();
  bool poll_once(std::vector<pollfd>& polled); // false: broken
  std::chrono::steady_clock::time_point poll_set(std::vector<pollfd>& polled,
                                                 std::chrono::steady_clock::time_point now);
  void release_sent();
  bool start_workers(); // false: none could be started

  void run_worker();
  bool check_own_descriptors();
  void accept_on(std::size_t listener_index);
  void serve(Connection& connection, short events);
  void dispatch(Connection& connection);
  void small_answer(Connection& connection, unsigned status, const std::string& problem);
  void detach(Connection& connection);
  void work(Job& job);
  void shut_down();

  Process process_;
  std::vector<std::string> files_;
  Descriptor listeners_[2];
  Listener kinds_[2] = {Listener::Unix, Listener::Tcp};
  unsigned connection_limit_ = 0;
  std::chrono::steady_clock::time_point accept_paused_until_[2];
  // The I/O thread's poll set, a member rather than on that thread's stack: a forked child has
  // no such thread, and leak checkers would count what only its stack pointed to as lost.
  std::vector<pollfd> polled_;
  Descriptor wake_in_;  // the I/O thread polls it
  Descriptor wake_out_; // wake() writes a byte to it
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> broken_{false};
  Budget budget_;
  std::vector<std::unique_ptr<Connection>> connections_; // the I/O thread's only

  std::mutex jobs_mutex_;
  std::condition_variable jobs_changed_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::vector<std::weak_ptr<Job>> shareable_; // jobs a new identical request may join
  int workers_running_ = 0;                   // under jobs_mutex_

  std::thread io_thread_;
  std::vector<std::thread> workers_;
};

} // namespace hotscope::agent
