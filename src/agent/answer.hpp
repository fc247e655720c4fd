// One answer of the agent's HTTP server (docs/agent.md, "Limits"): written once by a worker,
// sent to every client that asked for it at the same time, in pieces charged to the agent's
// memory budget and freed once every one of those clients has been sent them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <streambuf>
#include <string>
#include <string_view>

namespace hotscope::agent {

// The memory for answers in flight: pieces not yet sent to every client, and the snapshots they
// are written from. A request that finds it used up gets 503 at once.
inline constexpr std::size_t kBudgetBytes = std::size_t{64} << 20;
// A writer waits while its answer holds this much that some client has not been sent yet.
inline constexpr std::size_t kAheadBytes = std::size_t{1} << 20;
inline constexpr std::size_t kPieceBytes = std::size_t{64} << 10;

class Budget {
public:
  // Charges `bytes` if they fit under kBudgetBytes.
  bool try_charge(std::size_t bytes);
  void charge(std::size_t bytes) { used_ += bytes; }
  void release(std::size_t bytes) { used_ -= bytes; }
  bool full() const { return used_.load() >= kBudgetBytes; }
  std::size_t used() const { return used_.load(); }

private:
  std::atomic<std::size_t> used_{0};
};

// Thrown at the writer when nobody wants its answer any more (every client left, or the agent
// stops): it ends there.
struct Abandoned {};

class Answer {
public:
  // `wake` tells the server's I/O thread that there is more to send.
  Answer(Budget& budget, std::function<void()> wake);
  ~Answer();
  Answer(const Answer&) = delete;
  Answer& operator=(const Answer&) = delete;

  // The writer's side. `head` is the status line and headers; with `chunked`, the body goes out
  // in HTTP/1.1 chunks (its length is not known before it is written).
  void start(std::string head, bool chunked);
  void append(std::string_view bytes); // waits while kAheadBytes are unsent; throws Abandoned
  void finish();

  // The server's side (its I/O thread). Positions count bytes from the start of the head.
  std::string_view ready(std::size_t position) const; // the next bytes to send, or none yet
  std::size_t head_size() const;                      // 0 until started
  bool complete(std::size_t position) const;          // finished, and all of it is sent
  bool failed() const;                                // abandoned: the clients get no more
  bool joinable() const; // nothing was freed yet: a new client can still be sent all of it
  void release_before(std::size_t position); // every client got that far
  void abandon();

private:
  void push(std::string piece); // waits for room; throws Abandoned

  Budget& budget_;
  std::function<void()> wake_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::deque<std::string> pieces_; // pieces_.front() starts at `released_`
  std::size_t released_ = 0;
  std::size_t end_ = 0;
  std::size_t head_size_ = 0;
  bool chunked_ = false;
  bool finished_ = false;
  bool abandoned_ = false;
  std::string pending_; // the writer's bytes not pushed yet
};

// An ostream's buffer that appends to an answer (which gathers the bytes into pieces).
class AnswerBuffer : public std::streambuf {
public:
  explicit AnswerBuffer(Answer& answer) : answer_(answer) {}

protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* bytes, std::streamsize count) override;

private:
  Answer& answer_;
};

} // namespace hotscope::agent
