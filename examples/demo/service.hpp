// A simulated request-serving pipeline:
//
//   acceptor ──▶ parser ──▶ worker pool (N threads) ──▶ writer
//
// Stages are threads joined by bounded queues. Requests are JSON-like text of varied size and
// nesting; their handlers share an LRU cache (misses take a slow "backend" path) and a word index.
#ifndef DEMO_SERVICE_HPP
#define DEMO_SERVICE_HPP

#include "document.hpp"
#include "queue.hpp"

#include <hotscope/lockable.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace demo {

using Clock = std::chrono::steady_clock;

enum class Op { get, put, search, report };
inline constexpr std::array<const char*, 4> op_names = {"get", "put", "search", "report"};

struct RawRequest {
  std::uint64_t id = 0;
  std::string payload;
  Clock::time_point arrived;
};

struct Request {
  std::uint64_t id = 0;
  Op op = Op::get;
  std::string key;
  Node body;
  Clock::time_point arrived;
};

struct Response {
  std::uint64_t id = 0;
  Op op = Op::get;
  int status = 200;
  std::string body;
  Clock::time_point arrived;
};

// Least-recently-used map from key to a rendered value, shared by all workers.
class Cache {
public:
  explicit Cache(std::size_t capacity) : capacity_(capacity) {}
  std::optional<std::string> lookup(const std::string& key);
  void store(const std::string& key, std::string value);

private:
  using Entries = std::list<std::pair<std::string, std::string>>;
  const std::size_t capacity_;
  HOTSCOPE_LOCKABLE(std::mutex, cache_mutex);
  Entries entries_; // most recently used first
  std::unordered_map<std::string, Entries::iterator> index_;
};

// How often each word was stored by "put" requests; "search" ranks by it.
class WordIndex {
public:
  void add(const std::vector<std::string>& words);
  std::uint64_t count(const std::string& word);

private:
  HOTSCOPE_LOCKABLE(std::mutex, word_index_mutex);
  std::map<std::string, std::uint64_t> counts_;
};

struct Options {
  unsigned threads = 4;
  unsigned rate = 2000; // requests per second offered by the acceptor
};

struct Summary {
  std::uint64_t accepted = 0;
  std::uint64_t served = 0;
  std::uint64_t bad_requests = 0;
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;
  std::array<std::uint64_t, 4> by_op{};
  std::uint64_t bytes_written = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

class Service {
public:
  explicit Service(Options options);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  void start();
  // Stops accepting, lets every stage drain its queue, joins all threads.
  Summary stop();

private:
  void accept_loop();
  void parse_loop();
  void work_loop(unsigned index);
  void write_loop();

  Response handle(const Request& request, std::mt19937_64& rng);
  std::string handle_get(const Request& request, std::mt19937_64& rng);
  std::string handle_put(const Request& request);
  std::string handle_search(const Request& request);

  const Options options_;
  // Wakes the acceptor from its pacing sleep as soon as stop() is called.
  std::mutex stop_mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  BoundedQueue<RawRequest> parse_queue_{"parse_queue", 256};
  BoundedQueue<Request> work_queue_{"work_queue", 256};
  BoundedQueue<Response> write_queue_{"write_queue", 256};
  Cache cache_{4000};
  WordIndex words_;

  std::thread acceptor_;
  std::thread parser_;
  std::vector<std::thread> workers_;
  std::thread writer_;

  std::atomic<std::uint64_t> cache_hits_{0};
  std::atomic<std::uint64_t> cache_misses_{0};
  std::uint64_t accepted_ = 0; // owned by the acceptor thread until it is joined
  // Owned by the writer thread until it is joined.
  std::uint64_t bad_requests_ = 0;
  std::array<std::uint64_t, 4> by_op_{};
  std::uint64_t bytes_written_ = 0;
  std::vector<std::uint32_t> latencies_us_;
};

} // namespace demo

#endif // DEMO_SERVICE_HPP
