// Telling stats.json from heap.json, and checking the keys the commands read: each has the type
// and sign docs/formats-output.md gives it (a key may be missing: older files lack some), so
// that the readers after it take every figure as it is, and a malformed file is refused in one
// line naming the key.
#include "checker.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

namespace hotscope::cli::profiles {
namespace {

using Json = nlohmann::json;

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

} // namespace

bool is_count(const Json& value) {
  return value.is_number_unsigned() ||
         (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

std::string shown(const Json& value) {
  if (value.is_object() || value.is_array()) {
    return value.is_object() ? "an object" : "an array";
  }
  const std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

std::string Checker::member(const std::string& where, const char* key) {
  return where.empty() ? fmt::format("\"{}\"", key) : fmt::format("{}.\"{}\"", where, key);
}

void Checker::keys(const Json& object, const std::string& where, const Key* begin,
                   const Key* end) const {
  if (!object.is_object()) {
    fail(where, object, Type::Object);
  }
  for (const Key* key = begin; key != end; ++key) {
    const auto found = object.find(key->name);
    if (found == object.end()) {
      if (key->required) {
        throw Failure(kUsage,
                      fmt::format("{}: {}\"{}\" is missing: the file is not {} as "
                                  "hotscope writes it",
                                  source_, where.empty() ? "" : where + ".", key->name, kind_));
      }
      continue;
    }
    if (!has_type(*found, key->type)) {
      fail(member(where, key->name), *found, key->type);
    }
  }
}

void Checker::fail(const std::string& where, const Json& value, Type type) const {
  throw Failure(kUsage, fmt::format("{}: {} is {}, not {}: the file is not {} as hotscope "
                                    "writes it",
                                    source_, where.empty() ? "the document" : where, shown(value),
                                    type_name(type), kind_));
}

void check_heap(const Json& document, const std::string& source) {
  const Checker checker(source, "a DHAT heap profile");
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
  Profile profile;
  profile.source = source;
  if (has("hotscope_version") && has("functions")) {
    profile.kind = Kind::Stats;
    profile.stats = read_stats(document, source);
    return profile;
  }
  if (has("dhatFileVersion") && has("pps") && has("ftbl")) {
    check_heap(document, source);
    profile.kind = Kind::Heap;
    profile.document = std::move(document);
    return profile;
  }
  throw Failure(kUsage, fmt::format("{} is neither a hotscope stats.json nor a DHAT heap profile "
                                    "(heap.json): give files that hotscope wrote",
                                    source));
}

} // namespace hotscope::cli::profiles
