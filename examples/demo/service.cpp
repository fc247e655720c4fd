#include "service.hpp"

#include <hotscope/hotscope.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

namespace demo {

std::optional<std::string> Cache::lookup(const std::string& key) {
  HOTSCOPE_FUNCTION();
  std::unique_lock lock(cache_mutex, std::defer_lock);
  {
    HOTSCOPE_SCOPE("cache_lock_lookup");
    lock.lock();
  }
  const auto found = index_.find(key);
  if (found == index_.end()) {
    return std::nullopt;
  }
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->second;
}

void Cache::store(const std::string& key, std::string value) {
  HOTSCOPE_FUNCTION();
  std::unique_lock lock(cache_mutex, std::defer_lock);
  {
    HOTSCOPE_SCOPE("cache_lock_store");
    lock.lock();
  }
  if (const auto found = index_.find(key); found != index_.end()) {
    found->second->second = std::move(value);
    entries_.splice(entries_.begin(), entries_, found->second);
    return;
  }
  entries_.emplace_front(key, std::move(value));
  index_.emplace(key, entries_.begin());
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  HOTSCOPE_COUNTER("cache_entries", entries_.size());
}

void WordIndex::add(const std::vector<std::string>& words) {
  HOTSCOPE_FUNCTION();
  const std::lock_guard lock(word_index_mutex);
  for (const std::string& word : words) {
    ++counts_[word];
  }
}

std::uint64_t WordIndex::count(const std::string& word) {
  const std::lock_guard lock(word_index_mutex);
  const auto found = counts_.find(word);
  return found == counts_.end() ? 0 : found->second;
}

namespace {

// Every word of every string in the tree, in document order.
void collect_words(const Node& node, std::vector<std::string>& out) {
  HOTSCOPE_FUNCTION();
  if (node.kind == Node::Kind::string) {
    std::istringstream words(node.text);
    for (std::string word; words >> word;) {
      word.erase(std::remove(word.begin(), word.end(), '.'), word.end());
      out.push_back(std::move(word));
    }
  }
  for (const Node& child : node.items) {
    collect_words(child, out);
  }
}

// Tallies node kinds per depth; the report handler renders the tally.
void summarize(const Node& node, int depth, std::map<std::string, std::uint64_t>& tally) {
  HOTSCOPE_FUNCTION();
  static constexpr const char* kind_names[] = {"null", "number", "string", "array", "object"};
  ++tally["depth" + std::to_string(depth) + "." + kind_names[static_cast<int>(node.kind)]];
  if (node.kind == Node::Kind::number) {
    tally["sum"] += static_cast<std::uint64_t>(node.number);
  }
  for (const Node& child : node.items) {
    summarize(child, depth + 1, tally);
  }
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::uint64_t fnv1a(const char* data, std::size_t size) {
  std::uint64_t hash = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) {
    hash = (hash ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  }
  return hash;
}

// The slow path of a cache miss: a simulated database query, sometimes stuck on slow I/O.
std::string load_from_backend(const std::string& key, std::mt19937_64& rng) {
  HOTSCOPE_FUNCTION();
  std::vector<std::string> rows;
  {
    HOTSCOPE_SCOPE("backend_query");
    const std::size_t count = 20 + rng() % 180;
    rows.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      rows.push_back(key + ":row" + std::to_string(i) + ":" + std::to_string(rng() % 1000000));
    }
    std::sort(rows.begin(), rows.end());
  }
  if (rng() % 100 < 3) {
    HOTSCOPE_SCOPE("backend_slow_io");
    const auto stall = std::chrono::microseconds(2000 + rng() % 8000);
    HOTSCOPE_MESSAGE("slow backend read for " + key + ", " + std::to_string(stall.count()) + " us");
    std::this_thread::sleep_for(stall);
  }
  HOTSCOPE_SCOPE("backend_encode");
  std::string value;
  for (const std::string& row : rows) {
    value += row;
    value.push_back('\n');
  }
  return value + "checksum=" + std::to_string(fnv1a(value.data(), value.size()));
}

std::string render_response(const Response& response) {
  HOTSCOPE_FUNCTION();
  std::string out = "HTTP/1.1 " + std::to_string(response.status) +
                    (response.status == 200 ? " OK" : " Bad Request") + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n\r\n";
  out += response.body;
  return out;
}

RawRequest generate_request(std::uint64_t id, std::mt19937_64& rng) {
  HOTSCOPE_FUNCTION();
  std::uniform_real_distribution<double> unit(0, 1);
  const unsigned pick = static_cast<unsigned>(rng() % 100);
  const Op op = pick < 60 ? Op::get : pick < 75 ? Op::put : pick < 90 ? Op::search : Op::report;
  // Cubing skews keys toward small numbers, so some keys are hot and stay cached.
  const auto key_number = static_cast<unsigned>(std::pow(unit(rng), 3.0) * 20000);

  Node request;
  request.kind = Node::Kind::object;
  request.keys = {"id", "op", "key", "body"};
  request.items.resize(4);
  request.items[0].kind = Node::Kind::number;
  request.items[0].number = static_cast<double>(id);
  request.items[1].kind = Node::Kind::string;
  request.items[1].text = op_names[static_cast<int>(op)];
  request.items[2].kind = Node::Kind::string;
  request.items[2].text = "user:" + std::to_string(key_number);
  request.items[3] = random_tree(rng, static_cast<int>(rng() % 5));

  RawRequest raw{id, {}, Clock::now()};
  serialize(request, raw.payload);
  if (rng() % 200 == 0) {
    raw.payload.resize(raw.payload.size() / 2); // a client that hung up mid-request
  }
  return raw;
}

Request to_request(const RawRequest& raw) {
  Request request{raw.id, Op::get, {}, parse_document(raw.payload), raw.arrived};
  const Node* op = request.body.find("op");
  const Node* key = request.body.find("key");
  if (op == nullptr || key == nullptr) {
    throw ParseError("missing op or key");
  }
  const auto name = std::find_if(op_names.begin(), op_names.end(),
                                 [&](const char* candidate) { return op->text == candidate; });
  if (name == op_names.end()) {
    throw ParseError("unknown op " + op->text);
  }
  request.op = static_cast<Op>(name - op_names.begin());
  request.key = key->text;
  return request;
}

} // namespace

Service::Service(Options options) : options_(options) {}

void Service::start() {
  acceptor_ = std::thread(&Service::accept_loop, this);
  parser_ = std::thread(&Service::parse_loop, this);
  for (unsigned i = 0; i < options_.threads; ++i) {
    workers_.emplace_back(&Service::work_loop, this, i);
  }
  writer_ = std::thread(&Service::write_loop, this);
}

Summary Service::stop() {
  HOTSCOPE_FUNCTION();
  {
    const std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  // Each stage closes its output queue when its input is drained, so joining in pipeline
  // order shuts everything down without dropping accepted requests.
  acceptor_.join();
  parser_.join();
  for (std::thread& worker : workers_) {
    worker.join();
  }
  write_queue_.close();
  writer_.join();

  Summary summary;
  summary.accepted = accepted_;
  summary.served = latencies_us_.size();
  summary.bad_requests = bad_requests_;
  summary.cache_hits = cache_hits_.load();
  summary.cache_misses = cache_misses_.load();
  summary.by_op = by_op_;
  summary.bytes_written = bytes_written_;
  if (!latencies_us_.empty()) {
    std::sort(latencies_us_.begin(), latencies_us_.end());
    const auto at = [&](double quantile) {
      return latencies_us_[static_cast<std::size_t>(quantile * (latencies_us_.size() - 1))] / 1e3;
    };
    summary.p50_ms = at(0.50);
    summary.p99_ms = at(0.99);
    summary.max_ms = latencies_us_.back() / 1e3;
  }
  return summary;
}

void Service::accept_loop() {
  HOTSCOPE_THREAD_NAME("acceptor");
  std::mt19937_64 rng(1);
  const auto interval = std::chrono::nanoseconds(1'000'000'000 / options_.rate);
  auto next = Clock::now();
  for (std::uint64_t id = 1;; ++id) {
    RawRequest raw = generate_request(id, rng);
    {
      HOTSCOPE_SCOPE("enqueue_parse");
      const std::size_t depth = parse_queue_.push(std::move(raw));
      HOTSCOPE_COUNTER("parse_queue_depth", depth);
    }
    ++accepted_;
    // Pace to the offered rate, but do not burst to catch up after a long stall.
    next = std::max(next + interval, Clock::now() - std::chrono::milliseconds(50));
    std::unique_lock lock(stop_mutex_);
    if (stop_requested_.wait_until(lock, next, [&] { return stopping_; })) {
      break;
    }
  }
  parse_queue_.close();
}

void Service::parse_loop() {
  HOTSCOPE_THREAD_NAME("parser");
  while (std::optional<RawRequest> raw = parse_queue_.pop()) {
    HOTSCOPE_SCOPE("parse_request");
    try {
      Request request = to_request(*raw);
      HOTSCOPE_SCOPE("enqueue_work");
      const std::size_t depth = work_queue_.push(std::move(request));
      HOTSCOPE_COUNTER("work_queue_depth", depth);
    } catch (const ParseError& error) {
      HOTSCOPE_MESSAGE("bad request " + std::to_string(raw->id) + ": " + error.what());
      write_queue_.push(Response{raw->id, Op::get, 400, error.what(), raw->arrived});
    }
  }
  work_queue_.close();
}

void Service::work_loop(unsigned index) {
  const std::string name = "worker-" + std::to_string(index + 1);
  HOTSCOPE_THREAD_NAME(name);
  std::mt19937_64 rng(100 + index);
  while (std::optional<Request> request = work_queue_.pop()) {
    Response response = handle(*request, rng);
    HOTSCOPE_SCOPE("enqueue_write");
    const std::size_t depth = write_queue_.push(std::move(response));
    HOTSCOPE_COUNTER("write_queue_depth", depth);
  }
}

Response Service::handle(const Request& request, std::mt19937_64& rng) {
  HOTSCOPE_FUNCTION();
  Response response{request.id, request.op, 200, {}, request.arrived};
  switch (request.op) {
  case Op::get:
    response.body = handle_get(request, rng);
    break;
  case Op::put:
    response.body = handle_put(request);
    break;
  case Op::search:
    response.body = handle_search(request);
    break;
  case Op::report: {
    HOTSCOPE_SCOPE("handle_report");
    std::map<std::string, std::uint64_t> tally;
    summarize(request.body, 0, tally);
    for (const auto& [label, count] : tally) {
      response.body += label + "=" + std::to_string(count) + "\n";
    }
    break;
  }
  }
  return response;
}

std::string Service::handle_get(const Request& request, std::mt19937_64& rng) {
  HOTSCOPE_FUNCTION();
  if (std::optional<std::string> cached = cache_.lookup(request.key)) {
    cache_hits_.fetch_add(1, std::memory_order_relaxed);
    return std::move(*cached);
  }
  cache_misses_.fetch_add(1, std::memory_order_relaxed);
  HOTSCOPE_MESSAGE("cache miss");
  std::string value = load_from_backend(request.key, rng);
  cache_.store(request.key, value);
  return value;
}

std::string Service::handle_put(const Request& request) {
  HOTSCOPE_FUNCTION();
  std::string value;
  serialize(request.body, value);
  std::vector<std::string> words;
  collect_words(request.body, words);
  words_.add(words);
  cache_.store(request.key, std::move(value));
  return "stored " + std::to_string(words.size()) + " words";
}

std::string Service::handle_search(const Request& request) {
  HOTSCOPE_FUNCTION();
  std::vector<std::string> query;
  collect_words(request.body, query);
  std::sort(query.begin(), query.end());
  query.erase(std::unique(query.begin(), query.end()), query.end());

  // Rank every query word by popularity, penalized by how far it is from the other words.
  std::vector<std::pair<double, std::string>> ranked;
  {
    HOTSCOPE_SCOPE("rank_words");
    for (const std::string& word : query) {
      std::size_t distance = 0;
      for (const std::string& other : query) {
        distance += edit_distance(word, other);
      }
      const double score = static_cast<double>(words_.count(word) + 1) / (1.0 + distance);
      ranked.emplace_back(score, word);
    }
  }
  const std::size_t top = std::min<std::size_t>(ranked.size(), 5);
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(top), ranked.end(),
                    std::greater<>());
  std::string body;
  for (std::size_t i = 0; i < top; ++i) {
    body += ranked[i].second + " " + std::to_string(ranked[i].first) + "\n";
  }
  return body;
}

void Service::write_loop() {
  HOTSCOPE_THREAD_NAME("writer");
  while (std::optional<Response> response = write_queue_.pop()) {
    HOTSCOPE_SCOPE("write_response");
    const std::string text = render_response(*response);
    // The frame is what would go to the socket: length prefix, response, checksum trailer.
    const auto length = static_cast<std::uint32_t>(text.size());
    std::vector<char> frame(sizeof length + text.size() + sizeof(std::uint64_t));
    std::memcpy(frame.data(), &length, sizeof length);
    std::memcpy(frame.data() + sizeof length, text.data(), text.size());
    const std::uint64_t checksum = fnv1a(frame.data(), sizeof length + text.size());
    std::memcpy(frame.data() + sizeof length + text.size(), &checksum, sizeof checksum);
    bytes_written_ += frame.size();

    const auto latency =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - response->arrived);
    latencies_us_.push_back(static_cast<std::uint32_t>(latency.count()));
    if (response->status == 200) {
      ++by_op_[static_cast<int>(response->op)];
    } else {
      ++bad_requests_;
    }
    if (latency > std::chrono::milliseconds(20)) {
      HOTSCOPE_MESSAGE("slow request " + std::to_string(response->id) + " (" +
                       op_names[static_cast<int>(response->op)] + ") took " +
                       std::to_string(latency.count()) + " us");
    }
    HOTSCOPE_COUNTER("served_total", latencies_us_.size());
  }
}

} // namespace demo
