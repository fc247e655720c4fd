// Telling stats.json from heap.json, and checking the keys the commands read: each has the type
// and sign docs/formats-output.md gives it (a key may be missing: older files lack some), so
// that the readers after it take every figure as it is, and a malformed file is refused in one
// line naming the key.
#include "profiles.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <initializer_list>

namespace hotscope::cli::profiles {
namespace {

using Json = nlohmann::json;

enum class Type { String, Count, Number, Bool, Object, Array };

struct Key {
  const char* name;
  Type type;
  bool required = false;
};

const char* type_name(Type type) {
  switch (type) {
  case Type::String:
    return "a string";
  case Type::Count:
    return "a count (an integer from 0 to 2^64-1)";
  case Type::Number:
    return "a number >= 0";
  case Type::Bool:
    return "true or false";
  case Type::Object:
    return "an object";
  case Type::Array:
    return "an array";
  }
  return "";
}

// An integer >= 0: parsed from text it is unsigned, made in code (a test's) maybe signed.
bool is_count(const Json& value) {
  return value.is_number_unsigned() ||
         (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

bool has_type(const Json& value, Type type) {
  switch (type) {
  case Type::String:
    return value.is_string();
  case Type::Count:
    return is_count(value);
  case Type::Number:
    return is_count(value) || (value.is_number_float() && value.get<double>() >= 0);
  case Type::Bool:
    return value.is_boolean();
  case Type::Object:
    return value.is_object();
  case Type::Array:
    return value.is_array();
  }
  return false;
}

// The value as the message shows it: short, on one line.
std::string shown(const Json& value) {
  if (value.is_object() || value.is_array()) {
    return value.is_object() ? "an object" : "an array";
  }
  const std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

class Checker {
public:
  explicit Checker(const std::string& source) : source_(source) {}

  // `object` (at `where`) is an object whose `keys` have their types.
  void keys(const Json& object, const std::string& where, std::initializer_list<Key> keys) const {
    if (!object.is_object()) {
      fail(where, object, Type::Object);
    }
    for (const Key& key : keys) {
      const auto found = object.find(key.name);
      if (found == object.end()) {
        if (key.required) {
          throw Failure(kUsage, fmt::format("{}: {}\"{}\" is missing: the file is not {} as "
                                            "hotscope writes it",
                                            source_, prefix(where), key.name, kind_));
        }
        continue;
      }
      if (!has_type(*found, key.type)) {
        fail(where.empty() ? fmt::format("\"{}\"", key.name)
                           : fmt::format("{}.\"{}\"", where, key.name),
             *found, key.type);
      }
    }
  }

  // Calls `each(element, where)` for every element of the array `object[key]`, when there.
  template <typename Each>
  void elements(const Json& object, const std::string& where, const char* key, Each each) const {
    const auto found = object.find(key);
    if (found == object.end()) {
      return;
    }
    const std::string at =
        where.empty() ? fmt::format("\"{}\"", key) : fmt::format("{}.\"{}\"", where, key);
    for (std::size_t i = 0; i < found->size(); ++i) {
      each((*found)[i], fmt::format("{}[{}]", at, i));
    }
  }

  void set_kind(const char* kind) { kind_ = kind; }

  [[noreturn]] void fail(const std::string& where, const Json& value, Type type) const {
    throw Failure(kUsage, fmt::format("{}: {} is {}, not {}: the file is not {} as hotscope "
                                      "writes it",
                                      source_, where.empty() ? "the document" : where, shown(value),
                                      type_name(type), kind_));
  }

private:
  static std::string prefix(const std::string& where) { return where.empty() ? "" : where + "."; }

  const std::string& source_;
  const char* kind_ = "a profile";
};

void check_functions(const Checker& checker, const Json& owner, const std::string& where) {
  checker.elements(owner, where, "functions", [&](const Json& function, const std::string& at) {
    checker.keys(function, at,
                 {{"name", Type::String, true},
                  {"file", Type::String},
                  {"line", Type::Count},
                  {"calls", Type::Count},
                  {"mean_ns", Type::Number},
                  {"min_ns", Type::Number},
                  {"max_ns", Type::Number},
                  {"p50_ns", Type::Number},
                  {"p90_ns", Type::Number},
                  {"p95_ns", Type::Number},
                  {"p99_ns", Type::Number},
                  {"p999_ns", Type::Number},
                  {"self_ns", Type::Number},
                  {"total_ns", Type::Number},
                  {"alloc_bytes_self", Type::Count},
                  {"alloc_blocks_self", Type::Count},
                  {"alloc_bytes_total", Type::Count},
                  {"alloc_blocks_total", Type::Count}});
  });
}

void check_records(const Checker& checker, const Json& owner, const std::string& where) {
  const auto found = owner.find("records");
  if (found != owner.end()) {
    checker.keys(*found, where.empty() ? "\"records\"" : where + ".\"records\"",
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

void check_stats(const Json& document, const std::string& source) {
  Checker checker(source);
  checker.set_kind("a stats.json");
  checker.keys(document, "",
               {{"hotscope_version", Type::String, true},
                {"functions", Type::Array, true},
                {"pid", Type::Count},
                {"process_name", Type::String},
                {"duration_ns", Type::Number},
                {"clock", Type::Object},
                {"records", Type::Object},
                {"allocations", Type::Object},
                {"threads", Type::Array}});
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
  check_functions(checker, document, "");
  check_thread_list(checker, document);
}

} // namespace

void check_threads(const Json& answer, const std::string& source) {
  Checker checker(source);
  checker.set_kind("a threads answer");
  checker.keys(
      answer, "",
      {{"now_ns", Type::Number}, {"stuck_threshold_ns", Type::Number}, {"threads", Type::Array}});
  check_thread_list(checker, answer);
}

void check_heap(const Json& document, const std::string& source) {
  Checker checker(source);
  checker.set_kind("a DHAT heap profile");
  checker.keys(document, "",
               {{"pps", Type::Array, true},
                {"ftbl", Type::Array, true},
                {"pid", Type::Count},
                {"cmd", Type::String},
                {"mode", Type::String}});
  const Json& table = document.at("ftbl");
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (!table[i].is_string()) {
      checker.fail(fmt::format("\"ftbl\"[{}]", i), table[i], Type::String);
    }
  }
  checker.elements(document, "", "pps", [&](const Json& point, const std::string& at) {
    checker.keys(point, at,
                 {{"fs", Type::Array, true},
                  {"tb", Type::Count},
                  {"tbk", Type::Count},
                  {"gb", Type::Count},
                  {"gbk", Type::Count},
                  {"eb", Type::Count},
                  {"ebk", Type::Count}});
    const Json& frames = point.at("fs");
    if (frames.size() > kMaxStackFrames) {
      throw Failure(kUsage, fmt::format("{}: {} has {} frames, more than the {} a stack may have",
                                        source, at, frames.size(), kMaxStackFrames));
    }
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (!is_count(frames[i]) || frames[i].get<std::uint64_t>() >= table.size()) {
        throw Failure(kUsage, fmt::format("{}: {}.\"fs\"[{}] is {}, not an index into the frame "
                                          "table (\"ftbl\", {} frames)",
                                          source, at, i, shown(frames[i]), table.size()));
      }
    }
  });
}

Profile classify(nlohmann::json document, const std::string& source) {
  const auto has = [&](const char* key) {
    return document.is_object() && document.find(key) != document.end();
  };
  if (has("hotscope_version") && has("functions")) {
    check_stats(document, source);
    return Profile{Kind::Stats, source, std::move(document)};
  }
  if (has("dhatFileVersion") && has("pps") && has("ftbl")) {
    check_heap(document, source);
    return Profile{Kind::Heap, source, std::move(document)};
  }
  throw Failure(kUsage, fmt::format("{} is neither a hotscope stats.json nor a DHAT heap profile "
                                    "(heap.json): give files that hotscope wrote",
                                    source));
}

} // namespace hotscope::cli::profiles
