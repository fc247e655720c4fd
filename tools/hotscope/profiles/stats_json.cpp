// The one reader of stats.json (docs/formats-output.md, "stats.json"): a file's parsed document
// checked key by key (checker.hpp) and read into Stats, and the agent's answer to GET /v1/stats
// read in one pass of nlohmann's SAX parser, its functions straight into rows (a refresh of 10,000
// functions builds and frees no JSON tree of their figures), the rest into a small tree that is
// then checked and read as a file's is. One table of a function's keys serves the checks and
// both ways in.
#include "checker.hpp"

#include <algorithm>
#include <variant>

namespace hotscope::cli::profiles {
namespace {

using Json = nlohmann::json;

// Where a function's figure goes in its row.
using Member = std::variant<std::string FunctionStats::*, int FunctionStats::*,
                            std::uint64_t FunctionStats::*, double FunctionStats::*>;

struct FunctionField {
  const char* key;
  Member member;
  Type type;
};

// A function's keys, in stats.json's order: FunctionStats::given has bit i for the i-th.
const FunctionField kFunctionFields[] = {
    {"name", &FunctionStats::name, Type::String},
    {"file", &FunctionStats::file, Type::String},
    {"line", &FunctionStats::line, Type::Count},
    {"module", &FunctionStats::module, Type::String},
    {"build_id", &FunctionStats::build_id, Type::String},
    {"calls", &FunctionStats::calls, Type::Count},
    {"total_ns", &FunctionStats::total_ns, Type::Number},
    {"self_ns", &FunctionStats::self_ns, Type::Number},
    {"min_ns", &FunctionStats::min_ns, Type::Number},
    {"max_ns", &FunctionStats::max_ns, Type::Number},
    {"mean_ns", &FunctionStats::mean_ns, Type::Number},
    {"p50_ns", &FunctionStats::p50_ns, Type::Number},
    {"p90_ns", &FunctionStats::p90_ns, Type::Number},
    {"p95_ns", &FunctionStats::p95_ns, Type::Number},
    {"p99_ns", &FunctionStats::p99_ns, Type::Number},
    {"p999_ns", &FunctionStats::p999_ns, Type::Number},
    {"alloc_bytes_self", &FunctionStats::alloc_bytes_self, Type::Count},
    {"alloc_blocks_self", &FunctionStats::alloc_blocks_self, Type::Count},
    {"alloc_bytes_total", &FunctionStats::alloc_bytes_total, Type::Count},
    {"alloc_blocks_total", &FunctionStats::alloc_blocks_total, Type::Count},
    {"cpu_self_ns", &FunctionStats::cpu_self_ns, Type::Number},
    {"cpu_total_ns", &FunctionStats::cpu_total_ns, Type::Number},
};
constexpr std::size_t kFieldCount = std::size(kFunctionFields);
constexpr std::size_t kNoField = kFieldCount;
constexpr std::size_t kNameField = 0;

std::size_t field_of(std::string_view key) {
  const auto found = std::find_if(std::begin(kFunctionFields), std::end(kFunctionFields),
                                  [&](const FunctionField& field) { return field.key == key; });
  return static_cast<std::size_t>(found - std::begin(kFunctionFields));
}

// The checks of a function's keys: the table's, its name required.
const std::vector<Key>& function_keys() {
  static const std::vector<Key> keys = [] {
    std::vector<Key> all;
    for (const FunctionField& field : kFunctionFields) {
      all.push_back(Key{field.key, field.type, field.key == std::string_view("name")});
    }
    return all;
  }();
  return keys;
}

// A number as an unsigned count: negative or out-of-range floats read as 0.
template <typename Number> std::uint64_t count_of(Number value) {
  if constexpr (std::is_floating_point_v<Number>) {
    return value >= 0 && value < 1.8e19 ? static_cast<std::uint64_t>(value) : 0;
  } else {
    return static_cast<std::uint64_t>(value);
  }
}

// `value` into figure `field` of `row` when the figure takes its type (a string, a number);
// else the figure stays as it is.
template <typename Value> void set_figure(FunctionStats& row, std::size_t field, Value&& value) {
  using Type = std::decay_t<Value>;
  const Member& member = kFunctionFields[field].member;
  bool set = false;
  if constexpr (std::is_same_v<Type, std::string>) {
    if (const auto* text = std::get_if<std::string FunctionStats::*>(&member)) {
      (row.**text).assign(value); // into a reused row's memory
      set = true;
    }
  } else if constexpr (std::is_arithmetic_v<Type> && !std::is_same_v<Type, bool>) {
    set = true;
    if (const auto* count = std::get_if<std::uint64_t FunctionStats::*>(&member)) {
      row.** count = count_of(value);
    } else if (const auto* line = std::get_if<int FunctionStats::*>(&member)) {
      row.** line = static_cast<int>(count_of(value));
    } else if (const auto* mean = std::get_if<double FunctionStats::*>(&member)) {
      row.** mean = static_cast<double>(value);
    } else {
      set = false;
    }
  }
  if (set) {
    row.given |= 1U << field;
  }
}

// The same from a parsed value.
void set_figure(FunctionStats& row, std::size_t field, const Json& value) {
  if (value.is_string()) {
    set_figure(row, field, value.get_ref<const std::string&>());
  } else if (value.is_number_unsigned()) {
    set_figure(row, field, value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    set_figure(row, field, value.get<std::int64_t>());
  } else if (value.is_number_float()) {
    set_figure(row, field, value.get<double>());
  }
}

std::vector<FunctionStats> functions_of(const Json& owner) {
  std::vector<FunctionStats> rows;
  const auto functions = owner.find("functions");
  if (functions == owner.end() || !functions->is_array()) {
    return rows;
  }
  for (const Json& function : *functions) {
    FunctionStats& row = rows.emplace_back();
    for (const auto& [key, value] : function.items()) {
      if (const std::size_t field = field_of(key); field != kNoField) {
        set_figure(row, field, value);
      }
    }
  }
  return rows;
}

std::optional<std::uint64_t> optional_count(const Json& object, const char* key) {
  return object.contains(key) ? std::optional(count_at(object, key)) : std::nullopt;
}

double number_at(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<double>() : 0;
}

Records records_of(const Json& owner) {
  const Json& records = object_at(owner, "records");
  return Records{count_at(records, "written"), count_at(records, "kept"),
                 count_at(records, "dropped")};
}

ThreadStats thread_of(const Json& thread) {
  ThreadStats row;
  row.index = integer_at(thread, "index");
  row.os_tid = integer_at(thread, "os_tid");
  row.name = text_at(thread, "name");
  row.exited = thread.value("exited", false);
  if (thread.contains("state")) {
    row.state = text_at(thread, "state");
  }
  row.cpu_user_ns = optional_count(thread, "cpu_user_ns");
  row.cpu_system_ns = optional_count(thread, "cpu_system_ns");
  row.voluntary_switches = optional_count(thread, "voluntary_switches");
  row.involuntary_switches = optional_count(thread, "involuntary_switches");
  row.cpu_samples = optional_count(thread, "cpu_samples");
  row.records = records_of(thread);
  if (const auto found = thread.find("batches"); found != thread.end() && found->is_object()) {
    row.batches = Batches{count_at(*found, "accepted"), count_at(*found, "rejected"),
                          count_at(*found, "records_rejected"), count_at(*found, "nesting_repairs"),
                          text_at(*found, "last_rejection")};
  }
  row.functions = functions_of(thread);
  for (const Json& scope : thread.value("open_scopes", Json::array())) {
    row.open_scopes.push_back(OpenScope{text_at(scope, "name"), text_at(scope, "file"),
                                        static_cast<int>(count_at(scope, "line")),
                                        count_at(scope, "opened_ns"), count_at(scope, "open_ns")});
  }
  row.stuck = thread.value("stuck", false);
  row.os_only = thread.value("os_only", false);
  return row;
}

QueueStats queue_of(const Json& queue) {
  QueueStats row;
  row.name = text_at(queue, "name");
  for (auto [key, figure] : {std::pair{"pushed", &QueueStats::pushed},
                             {"popped", &QueueStats::popped},
                             {"depth", &QueueStats::depth},
                             {"max_depth", &QueueStats::max_depth},
                             {"capacity", &QueueStats::capacity},
                             {"pending", &QueueStats::pending},
                             {"waits", &QueueStats::waits},
                             {"wait_total_ns", &QueueStats::wait_total_ns},
                             {"wait_p50_ns", &QueueStats::wait_p50_ns},
                             {"wait_p95_ns", &QueueStats::wait_p95_ns},
                             {"wait_p99_ns", &QueueStats::wait_p99_ns},
                             {"wait_max_ns", &QueueStats::wait_max_ns},
                             {"oldest_pending_ns", &QueueStats::oldest_pending_ns}}) {
    row.*figure = count_at(queue, key);
  }
  row.push_threads = names_at(queue, "push_threads");
  row.pop_threads = names_at(queue, "pop_threads");
  return row;
}

TaskStats task_of(const Json& task) {
  TaskStats row;
  row.name = text_at(task, "name");
  row.kind = text_at(task, "kind");
  row.created = count_at(task, "created");
  row.resumes = count_at(task, "resumes");
  row.alive = count_at(task, "alive");
  row.destroyed_unfinished = count_at(task, "destroyed_unfinished");
  row.running_p50_ns = count_at(object_at(task, "running"), "p50_ns");
  row.running_p99_ns = count_at(object_at(task, "running"), "p99_ns");
  row.waiting_p50_ns = count_at(object_at(task, "waiting"), "p50_ns");
  row.waiting_p99_ns = count_at(object_at(task, "waiting"), "p99_ns");
  row.lifetime_p99_ns = count_at(object_at(task, "lifetime"), "p99_ns");
  return row;
}

std::vector<ThreadStats> threads_of(const Json& owner) {
  std::vector<ThreadStats> threads;
  for (const Json& thread : owner.value("threads", Json::array())) {
    threads.push_back(thread_of(thread));
  }
  return threads;
}

// Everything of a checked document but its functions into `stats`, whose functions stay.
void read_rest(const Json& document, Stats& stats) {
  std::vector<FunctionStats> functions = std::move(stats.functions);
  stats = Stats{};
  stats.functions = std::move(functions);
  stats.hotscope_version = text_at(document, "hotscope_version");
  if (document.contains("process_name")) {
    stats.process_name = text_at(document, "process_name");
  }
  stats.pid = integer_at(document, "pid");
  stats.duration_ns = number_at(document, "duration_ns");
  const Json& clock = object_at(document, "clock");
  stats.clock = Clock{text_at(clock, "source"), text_at(clock, "frequency_origin"),
                      number_at(clock, "ticks_per_second")};
  stats.records = records_of(document);
  const Json& allocations = object_at(document, "allocations");
  stats.allocated_bytes = count_at(allocations, "bytes");
  stats.allocated_blocks = count_at(allocations, "blocks");
  stats.threads = threads_of(document);
  stats.unmodified_program = document.value("unmodified_program", false);
  stats.queues = list_of(document, "queues", queue_of);
  stats.tasks = list_of(document, "tasks", task_of);
  if (const auto cpu = document.find("cpu"); cpu != document.end() && cpu->is_object()) {
    stats.cpu = CpuSampling{count_at(*cpu, "hz"),         count_at(*cpu, "period_ns"),
                            count_at(*cpu, "samples"),    count_at(*cpu, "lost"),
                            count_at(*cpu, "incomplete"), count_at(*cpu, "unstored"),
                            text_at(*cpu, "problem")};
    stats.cpu->signals = optional_count(*cpu, "signals").value_or(stats.cpu->samples);
  }
  stats.locks = locks_of(document);
}

void check_functions(const Checker& checker, const Json& owner, const std::string& where) {
  const std::vector<Key>& keys = function_keys();
  checker.elements(owner, where, "functions", [&](const Json& function, const std::string& at) {
    checker.keys(function, at, keys.data(), keys.data() + keys.size());
  });
}

void check_records(const Checker& checker, const Json& owner, const std::string& where) {
  const auto found = owner.find("records");
  if (found != owner.end()) {
    checker.keys(*found, Checker::member(where, "records"),
                 {{"written", Type::Count}, {"kept", Type::Count}, {"dropped", Type::Count}});
  }
}

// The threads of a stats.json or of GET /v1/threads (which adds their open scopes).
void check_thread_list(const Checker& checker, const Json& owner) {
  checker.elements(owner, "", "threads", [&](const Json& thread, const std::string& at) {
    checker.keys(thread, at,
                 {{"index", Type::Count},
                  {"os_tid", Type::Count},
                  {"name", Type::String},
                  {"state", Type::String},
                  {"exited", Type::Bool},
                  {"cpu_user_ns", Type::Number},
                  {"cpu_system_ns", Type::Number},
                  {"voluntary_switches", Type::Count},
                  {"involuntary_switches", Type::Count},
                  {"cpu_samples", Type::Count},
                  {"records", Type::Object},
                  {"functions", Type::Array},
                  {"open_scopes", Type::Array},
                  {"stuck", Type::Bool}});
    check_records(checker, thread, at);
    check_functions(checker, thread, at);
    checker.elements(thread, at, "open_scopes", [&](const Json& scope, const std::string& where) {
      checker.keys(scope, where,
                   {{"name", Type::String},
                    {"file", Type::String},
                    {"line", Type::Count},
                    {"opened_ns", Type::Number},
                    {"open_ns", Type::Number}});
    });
  });
}

// GET /v1/threads, and the rest of a GET /v1/stats answer (whose threads the console shows).
void check_threads(const Json& answer, const std::string& source) {
  const Checker checker(source, "a threads answer");
  checker.keys(
      answer, "",
      {{"now_ns", Type::Number}, {"stuck_threshold_ns", Type::Number}, {"threads", Type::Array}});
  check_thread_list(checker, answer);
}

void check_stats(const Json& document, const std::string& source) {
  const Checker checker(source, "a stats.json");
  checker.keys(document, "",
               {{"hotscope_version", Type::String, true},
                {"functions", Type::Array, true},
                {"pid", Type::Count},
                {"process_name", Type::String},
                {"duration_ns", Type::Number},
                {"clock", Type::Object},
                {"records", Type::Object},
                {"allocations", Type::Object},
                {"threads", Type::Array},
                {"cpu", Type::Object}});
  if (const auto clock = document.find("clock"); clock != document.end()) {
    checker.keys(*clock, "\"clock\"",
                 {{"source", Type::String},
                  {"frequency_origin", Type::String},
                  {"ticks_per_second", Type::Number}});
  }
  check_records(checker, document, "");
  if (const auto allocations = document.find("allocations"); allocations != document.end()) {
    checker.keys(*allocations, "\"allocations\"",
                 {{"bytes", Type::Count}, {"blocks", Type::Count}});
  }
  if (const auto cpu = document.find("cpu"); cpu != document.end()) {
    checker.keys(*cpu, "\"cpu\"",
                 {{"hz", Type::Count},
                  {"period_ns", Type::Count},
                  {"samples", Type::Count},
                  {"signals", Type::Count},
                  {"lost", Type::Count},
                  {"incomplete", Type::Count},
                  {"unstored", Type::Count},
                  {"problem", Type::String}});
  }
  check_functions(checker, document, "");
  check_thread_list(checker, document);
  check_locks(checker, document);
}

// The SAX handler (nlohmann::json::sax_parse) of a GET /v1/stats answer: the top-level
// "functions" into rows, in either layout: one array per key (?format=columns; as many rows as
// names, a shorter column reads as zeros) or one object per function. The rest into a tree.
class AnswerReader {
public:
  explicit AnswerReader(std::vector<FunctionStats>& rows) : rows_(rows) {}

  bool null() { return value(nullptr); }
  bool boolean(bool flag) { return value(flag); }
  bool number_integer(Json::number_integer_t number) { return value(number); }
  bool number_unsigned(Json::number_unsigned_t number) { return value(number); }
  bool number_float(Json::number_float_t number, const Json::string_t&) { return value(number); }
  bool binary(Json::binary_t& bytes) { return value(std::move(bytes)); }
  bool string(Json::string_t& text) { return value(std::move(text)); }

  bool start_object(std::size_t) { return start(false); }
  bool start_array(std::size_t) { return start(true); }
  bool end_object() { return end(); }
  bool end_array() { return end(); }
  bool key(Json::string_t& key) {
    if (in_functions_) {
      if (levels_.size() == 1 || in_function_object()) { // a column's or a function's key
        field_ = field_of(key);
        cell_ = 0;
      }
      return true;
    }
    if (tree_.size() == 1 && tree_.front()->is_object() && key == "functions") {
      in_functions_ = true;
      return true;
    }
    slot_ = &(*tree_.back())[key];
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    throw error;
  }

  // The rest of the answer, once the rows are read: as many as names (columns) or objects (one
  // object per function).
  Json finish() {
    rows_.resize(functions_are_columns_ ? names_ : objects_);
    return std::move(rest_);
  }

private:
  // Inside "functions": the containers open, outermost first (true for an array).
  bool in_columns_array() const { return levels_.size() == 2 && !levels_[0] && levels_[1]; }
  bool in_functions_array() const { return levels_.size() == 1 && levels_[0]; }
  bool in_function_object() const { return levels_.size() == 2 && levels_[0] && !levels_[1]; }

  // Row `i`, its figures zeroed the first time this answer reaches it.
  FunctionStats& row(std::size_t i) {
    for (; touched_ <= i; ++touched_) {
      if (touched_ == rows_.size()) {
        rows_.emplace_back();
        continue;
      }
      // Zeroed, but its strings keep their memory.
      FunctionStats& reused = rows_[touched_];
      FunctionStats zero;
      for (std::string FunctionStats::*text : {&FunctionStats::name, &FunctionStats::file,
                                               &FunctionStats::module, &FunctionStats::build_id}) {
        zero.*text = std::move(reused.*text);
        (zero.*text).clear();
      }
      reused = std::move(zero);
    }
    return rows_[i];
  }

  // The row a value at the current place is a figure of (advancing through a column), or
  // nullptr when the value is not a function's figure. A value that is an element of the
  // functions' array is a row of its own.
  FunctionStats* figure_row() {
    if (in_columns_array()) {
      const std::size_t i = cell_++;
      if (field_ == kNameField) {
        names_ = std::max(names_, cell_);
      }
      return field_ == kNoField ? nullptr : &row(i);
    }
    if (in_functions_array()) {
      current_ = objects_++;
      row(current_);
      return nullptr;
    }
    return in_function_object() ? &row(current_) : nullptr;
  }

  template <typename Value> bool value(Value&& value) {
    if (!in_functions_) {
      tree_value(std::forward<Value>(value));
      return true;
    }
    if (levels_.empty()) { // "functions" is not a container: no functions
      in_functions_ = false;
      return true;
    }
    // A key the table does not have still takes its place in a column.
    if (FunctionStats* row = figure_row(); row != nullptr && field_ != kNoField) {
      set_figure(*row, field_, std::forward<Value>(value));
    }
    return true;
  }

  bool start(bool array) {
    if (++depth_ > kMaxJsonDepth) {
      throw Json::other_error::create(599, "the answer nests arrays and objects more than 64 deep",
                                      nullptr);
    }
    if (in_functions_) {
      if (levels_.empty()) {
        functions_are_columns_ = !array;
      } else {
        figure_row(); // a container where a figure goes: it takes its place, and is skipped
      }
      levels_.push_back(array);
      return true;
    }
    tree_.push_back(&tree_value(array ? Json::array() : Json::object()));
    return true;
  }

  bool end() {
    --depth_;
    if (in_functions_) {
      levels_.pop_back();
      in_functions_ = !levels_.empty();
      return true;
    }
    tree_.pop_back();
    return true;
  }

  // Puts `value` where the tree is at; returns it there.
  template <typename Value> Json& tree_value(Value&& value) {
    if (tree_.empty()) {
      rest_ = Json(std::forward<Value>(value));
      return rest_;
    }
    Json& parent = *tree_.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<Value>(value));
      return parent.back();
    }
    *slot_ = Json(std::forward<Value>(value));
    return *slot_;
  }

  std::vector<FunctionStats>& rows_;
  std::size_t depth_ = 0; // containers open
  // The rest of the answer.
  Json rest_;
  std::vector<Json*> tree_; // the containers open, outermost first
  Json* slot_ = nullptr;    // the member of the innermost object whose key came last
  // The functions.
  bool in_functions_ = false;
  std::vector<bool> levels_;
  bool functions_are_columns_ = false;
  std::size_t field_ = kNoField; // the figure the last key named
  std::size_t cell_ = 0;         // the next row of the current column
  std::size_t names_ = 0;        // names read (columns)
  std::size_t objects_ = 0;      // objects read (one per function)
  std::size_t current_ = 0;      // the function whose object is open
  std::size_t touched_ = 0;      // rows zeroed so far
};

} // namespace

std::uint64_t count_at(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number()) {
    return 0;
  }
  if (found->is_number_float()) {
    return count_of(found->get<double>());
  }
  // A negative integer is no count.
  return found->is_number_unsigned() || found->get<std::int64_t>() >= 0
             ? found->get<std::uint64_t>()
             : 0;
}

std::int64_t integer_at(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number()) {
    return 0;
  }
  if (found->is_number_float()) {
    // A fraction past what an integer holds is no id (converting it would be undefined).
    const double value = found->get<double>();
    return value > -9.2e18 && value < 9.2e18 ? static_cast<std::int64_t>(value) : 0;
  }
  return found->get<std::int64_t>();
}

std::string text_at(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

const Json& object_at(const Json& object, const char* key) {
  static const Json empty = Json::object();
  const auto found = object.find(key);
  return found != object.end() && found->is_object() ? *found : empty;
}

std::vector<std::string> names_at(const Json& object, const char* key) {
  std::vector<std::string> names;
  for (const Json& name : object.value(key, Json::array())) {
    names.push_back(name.is_string() ? name.get<std::string>() : "?");
  }
  return names;
}

bool FunctionStats::has(std::string_view key) const {
  const std::size_t field = field_of(key);
  return field != kNoField && (given & (1U << field)) != 0;
}

Stats read_stats(const Json& document, const std::string& source) {
  check_stats(document, source);
  Stats stats;
  read_rest(document, stats);
  stats.functions = functions_of(document);
  return stats;
}

void read_stats(std::string_view text, const std::string& source, Stats& stats) {
  AnswerReader reader(stats.functions);
  Json::sax_parse(text, &reader);
  const Json rest = reader.finish();
  check_threads(rest, source);
  check_locks(Checker(source, "a stats answer"), rest);
  read_rest(rest, stats);
}

ThreadsAnswer read_threads(const Json& answer, const std::string& source) {
  check_threads(answer, source);
  check_deadlocks(Checker(source, "a threads answer"), answer);
  return ThreadsAnswer{count_at(answer, "now_ns"), count_at(answer, "stuck_threshold_ns"),
                       threads_of(answer), deadlocks_of(answer)};
}

} // namespace hotscope::cli::profiles
