#include "stats_reader.hpp"

#include "profiles/profiles.hpp"

#include <algorithm>
#include <string>
#include <variant>

namespace hotscope::cli::console {
namespace {

using Json = nlohmann::json;

// Where a function's figure goes in its row.
using Member = std::variant<std::monostate, std::string FunctionRow::*, int FunctionRow::*,
                            std::uint64_t FunctionRow::*, double FunctionRow::*>;

// The keys of a function's figures (docs/formats-output.md) that the console shows.
const std::pair<std::string_view, Member> kFields[] = {
    {"name", &FunctionRow::name},
    {"file", &FunctionRow::file},
    {"line", &FunctionRow::line},
    {"calls", &FunctionRow::calls},
    {"mean_ns", &FunctionRow::mean_ns},
    {"min_ns", &FunctionRow::min_ns},
    {"p50_ns", &FunctionRow::p50_ns},
    {"p90_ns", &FunctionRow::p90_ns},
    {"p95_ns", &FunctionRow::p95_ns},
    {"p99_ns", &FunctionRow::p99_ns},
    {"p999_ns", &FunctionRow::p999_ns},
    {"max_ns", &FunctionRow::max_ns},
    {"self_ns", &FunctionRow::self_ns},
    {"total_ns", &FunctionRow::total_ns},
    {"alloc_bytes_self", &FunctionRow::alloc_bytes_self},
    {"alloc_blocks_self", &FunctionRow::alloc_blocks_self},
    {"alloc_bytes_total", &FunctionRow::alloc_bytes_total},
    {"alloc_blocks_total", &FunctionRow::alloc_blocks_total},
};

Member member_of(std::string_view key) {
  const auto found = std::find_if(std::begin(kFields), std::end(kFields),
                                  [&](const auto& field) { return field.first == key; });
  return found == std::end(kFields) ? Member{} : found->second;
}

// A number as an unsigned count: negative or out-of-range floats read as 0.
template <typename Number> std::uint64_t count_of(Number value) {
  if constexpr (std::is_floating_point_v<Number>) {
    return value >= 0 && value < 1.8e19 ? static_cast<std::uint64_t>(value) : 0;
  } else {
    return static_cast<std::uint64_t>(value);
  }
}

// The SAX handler (nlohmann::json::sax_parse): the top-level "functions" into rows, in either
// layout: one array per key (GET /v1/stats?format=columns; as many rows as names, a shorter
// column reads as zeros) or one object per function (stats.json). The rest into a tree.
class Reader {
public:
  explicit Reader(StatsAnswer& answer) : answer_(answer) {}

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
        field_ = member_of(key);
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

  // The rows read: as many as names (columns) or objects (one object per function).
  void finish() { answer_.functions.resize(functions_are_columns_ ? names_ : rows_); }

private:
  // Inside "functions": the containers open, outermost first (true for an array).
  bool in_columns_array() const { return levels_.size() == 2 && !levels_[0] && levels_[1]; }
  bool in_functions_array() const { return levels_.size() == 1 && levels_[0]; }
  bool in_function_object() const { return levels_.size() == 2 && levels_[0] && !levels_[1]; }

  // Row `i`, its figures zeroed the first time this answer reaches it.
  FunctionRow& row(std::size_t i) {
    std::vector<FunctionRow>& rows = answer_.functions;
    for (; touched_ <= i; ++touched_) {
      if (touched_ == rows.size()) {
        rows.emplace_back();
        continue;
      }
      // Zeroed, but its strings keep their memory.
      FunctionRow& reused = rows[touched_];
      FunctionRow zero;
      for (std::string FunctionRow::*text :
           {&FunctionRow::key, &FunctionRow::name, &FunctionRow::file}) {
        zero.*text = std::move(reused.*text);
        (zero.*text).clear();
      }
      reused = std::move(zero);
    }
    return rows[i];
  }

  // The row a value at the current place is a figure of (advancing through a column), or
  // nullptr when the value is not a function's figure. A value that is an element of the
  // functions' array is a row of its own.
  FunctionRow* figure_row() {
    if (in_columns_array()) {
      const std::size_t i = cell_++;
      if (std::holds_alternative<std::string FunctionRow::*>(field_) &&
          std::get<std::string FunctionRow::*>(field_) == &FunctionRow::name) {
        names_ = std::max(names_, cell_);
      }
      return std::holds_alternative<std::monostate>(field_) ? nullptr : &row(i);
    }
    if (in_functions_array()) {
      current_ = rows_++;
      row(current_);
      return nullptr;
    }
    if (in_function_object()) {
      return &row(current_);
    }
    return nullptr;
  }

  template <typename Value> bool value(Value&& value) {
    using Type = std::decay_t<Value>;
    if (!in_functions_) {
      tree_value(std::forward<Value>(value));
      return true;
    }
    if (levels_.empty()) { // "functions" is not a container: no functions
      in_functions_ = false;
      return true;
    }
    FunctionRow* row = figure_row();
    if (row == nullptr) {
      return true;
    }
    if constexpr (std::is_same_v<Type, Json::string_t>) {
      if (const auto* text = std::get_if<std::string FunctionRow::*>(&field_)) {
        (row->**text).assign(value); // into the reused row's memory
      }
    } else if constexpr (std::is_arithmetic_v<Type> && !std::is_same_v<Type, bool>) {
      if (const auto* count = std::get_if<std::uint64_t FunctionRow::*>(&field_)) {
        row->** count = count_of(value);
      } else if (const auto* line = std::get_if<int FunctionRow::*>(&field_)) {
        row->** line = static_cast<int>(count_of(value));
      } else if (const auto* mean = std::get_if<double FunctionRow::*>(&field_)) {
        row->** mean = static_cast<double>(value);
      }
    }
    return true;
  }

  bool start(bool array) {
    if (++depth_ > profiles::kMaxJsonDepth) {
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
      answer_.rest = Json(std::forward<Value>(value));
      return answer_.rest;
    }
    Json& parent = *tree_.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<Value>(value));
      return parent.back();
    }
    *slot_ = Json(std::forward<Value>(value));
    return *slot_;
  }

  StatsAnswer& answer_;
  std::size_t depth_ = 0; // containers open
  // The rest of the answer.
  std::vector<Json*> tree_; // the containers open, outermost first
  Json* slot_ = nullptr;    // the member of the innermost object whose key came last
  // The functions.
  bool in_functions_ = false;
  std::vector<bool> levels_;
  bool functions_are_columns_ = false;
  Member field_;            // the figure the last key named
  std::size_t cell_ = 0;    // the next row of the current column
  std::size_t names_ = 0;   // names read (columns)
  std::size_t rows_ = 0;    // objects read (one per function)
  std::size_t current_ = 0; // the function whose object is open
  std::size_t touched_ = 0; // rows zeroed so far
};

} // namespace

void read_stats(std::string_view text, StatsAnswer& answer) {
  answer.rest = nullptr;
  Reader reader(answer);
  Json::sax_parse(text, &reader);
  reader.finish();
}

} // namespace hotscope::cli::console
