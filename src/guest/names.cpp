#include "guest/guest.hpp"
#include "text/text.hpp"

#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace hotscope::guest {

struct NameStore::Impl {
  struct Location {
    hotscope_source_location location{};
    std::string name;
    std::string file;
  };

  // The content a name is interned by: kind, texts (NUL-separated), line and flags.
  static std::string key(const Name& name) {
    std::string key(1, name.is_location ? 'L' : 'T');
    key += name.name;
    if (name.is_location) {
      key += '\0';
      key += name.file;
      key += '\0';
      key += text::cat(name.line, ":", name.flags);
    }
    return key;
  }
  // What one entry costs: its key, its copy and the containers' share, roughly.
  static std::size_t cost(const std::string& key) { return 2 * key.size() + 128; }

  std::uint64_t insert(const Name& name, std::string key) {
    std::uint64_t ref = 0;
    if (name.is_location) {
      Location& entry = locations.emplace_back();
      entry.name = name.name;
      entry.file = name.file;
      entry.location = {entry.name.c_str(), entry.file.c_str(), name.line, name.flags};
      ref = reinterpret_cast<std::uint64_t>(&entry.location);
    } else {
      ref = reinterpret_cast<std::uint64_t>(texts.emplace_back(name.name).c_str());
    }
    bytes += cost(key);
    refs.emplace(std::move(key), ref);
    return ref;
  }

  Limits limits;
  mutable std::mutex mutex;
  // Deques never move their elements: the addresses handed out stay valid.
  std::deque<Location> locations;
  std::deque<std::string> texts;
  std::unordered_map<std::string, std::uint64_t> refs;
  std::size_t bytes = 0;
};

NameStore::NameStore(Limits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
}

NameStore::~NameStore() = default;

NameStore& NameStore::process() {
  static NameStore* store = new NameStore(Limits{}); // never destroyed: the trace refers to it
  return *store;
}

std::optional<std::string> NameStore::intern(std::span<const Name> names,
                                             std::span<std::uint64_t> refs,
                                             std::size_t& guest_entries) {
  Impl& impl = *impl_;
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const Name& name : names) {
    keys.push_back(Impl::key(name));
  }
  std::lock_guard lock(impl.mutex);
  // All or none: first what the new entries would cost.
  std::unordered_set<std::string_view> fresh;
  std::size_t fresh_bytes = 0;
  for (const std::string& key : keys) {
    if (!impl.refs.contains(key) && fresh.insert(key).second) {
      fresh_bytes += Impl::cost(key);
    }
  }
  const std::size_t fresh_entries = fresh.size(); // `fresh` views keys, moved from below
  if (guest_entries + fresh_entries > impl.limits.new_entries_per_guest) {
    return text::cat(
        "the batch needs ", fresh_entries,
        " new distinct locations and texts, and this guest already has ", guest_entries,
        " (the host keeps at most ", impl.limits.new_entries_per_guest,
        " per guest); use fewer distinct static names, or inline messages for text that varies");
  }
  if (impl.refs.size() + fresh_entries > impl.limits.entries ||
      impl.bytes + fresh_bytes > impl.limits.bytes) {
    return text::cat("the host's store of guest names is full (", impl.refs.size(), " entries, ",
                     impl.bytes, " bytes; limits ", impl.limits.entries, " and ", impl.limits.bytes,
                     "); the batch needs ", fresh_entries,
                     " new ones: guests must use fewer distinct static names");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto found = impl.refs.find(keys[i]);
    refs[i] = found != impl.refs.end() ? found->second : impl.insert(names[i], std::move(keys[i]));
  }
  guest_entries += fresh_entries;
  return std::nullopt;
}

std::size_t NameStore::size() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->refs.size();
}

} // namespace hotscope::guest
