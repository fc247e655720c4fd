// The key-by-key checks of the JSON files and answers profiles/ reads (classify.cpp, heap.json;
// stats_json.cpp, stats.json and GET /v1/threads; locks_json.cpp, their locks and GET /v1/locks):
// each key has the type and sign docs/formats-output.md gives it, and a malformed one is refused
// in one line naming it; then the lenient getters read the checked values. Private to profiles/.
#pragma once

#include "profiles.hpp"

#include <cstddef>
#include <initializer_list>
#include <string>

namespace hotscope::cli::profiles {

enum class Type { String, Count, Number, Bool, Object, Array };

struct Key {
  const char* name;
  Type type;
  bool required = false;
};

// An integer >= 0: parsed from text it is unsigned, made in code (a test's) maybe signed.
bool is_count(const nlohmann::json& value);
// The value as a message shows it: short, on one line.
std::string shown(const nlohmann::json& value);

class Checker {
public:
  Checker(const std::string& source, const char* kind) : source_(source), kind_(kind) {}

  // `object` (at `where`) is an object whose `keys` have their types.
  void keys(const nlohmann::json& object, const std::string& where,
            std::initializer_list<Key> keys) const {
    this->keys(object, where, keys.begin(), keys.end());
  }
  void keys(const nlohmann::json& object, const std::string& where, const Key* begin,
            const Key* end) const;

  // Calls `each(element, where)` for every element of the array `object[key]`, when there.
  template <typename Each>
  void elements(const nlohmann::json& object, const std::string& where, const char* key,
                Each each) const {
    const auto found = object.find(key);
    if (found == object.end()) {
      return;
    }
    const std::string at = member(where, key);
    for (std::size_t i = 0; i < found->size(); ++i) {
      each((*found)[i], at + "[" + std::to_string(i) + "]");
    }
  }

  [[noreturn]] void fail(const std::string& where, const nlohmann::json& value, Type type) const;

  // `"key"` at the top, `where."key"` below.
  static std::string member(const std::string& where, const char* key);

private:
  const std::string& source_;
  const char* kind_;
};

// The objects of the array `owner[key]` read by `read`; none when there is no such key.
template <typename Read>
auto list_of(const nlohmann::json& owner, const char* key, Read read)
    -> std::optional<std::vector<decltype(read(owner))>> {
  const auto found = owner.find(key);
  if (found == owner.end()) {
    return std::nullopt;
  }
  std::vector<decltype(read(owner))> rows;
  if (found->is_array()) {
    for (const nlohmann::json& entry : *found) {
      if (entry.is_object()) {
        rows.push_back(read(entry));
      }
    }
  }
  return rows;
}

// The locks' keys of a stats.json or of GET /v1/locks, and a threads answer's "deadlocks"
// (locks_json.cpp): checked, then read.
void check_locks(const Checker& checker, const nlohmann::json& owner);
LockReport locks_of(const nlohmann::json& owner);
void check_deadlocks(const Checker& checker, const nlohmann::json& owner);
std::vector<Deadlock> deadlocks_of(const nlohmann::json& owner);

} // namespace hotscope::cli::profiles
