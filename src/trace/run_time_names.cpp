// Queue and lock names given at run time (hotscope::Queue, hotscope::Lockable): each distinct name
// (and flags: a lock's kind) is copied once into static storage, with a location of its own that
// the records point to like a literal macro's. Queues and locks share the bound.
// Nothing is ever freed, so a record still in a ring or in the trace window can always be named;
// and nothing is allocated, so the heap profile does not see the profiler's names.
#include <hotscope/hotscope.hpp>
#include <hotscope/lockable.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <pthread.h>

#define HOTSCOPE_TEXT_INNER(x) #x
#define HOTSCOPE_TEXT(x) HOTSCOPE_TEXT_INNER(x)

namespace {

constexpr std::size_t kMaxNames = HOTSCOPE_QUEUE_NAMES_MAX;

struct Name {
  hotscope_source_location location;
  char text[HOTSCOPE_INLINE_TEXT_MAX + 1];
};

// Past the bound every new name is one of these, so its records are still counted; the first
// such name is reported on stderr.
constexpr hotscope_source_location kQueueOverflow{
    "(queues past the first " HOTSCOPE_TEXT(HOTSCOPE_QUEUE_NAMES_MAX) " names)", "", 0, 0};
constexpr hotscope_source_location kLockOverflow{
    "(locks past the first " HOTSCOPE_TEXT(HOTSCOPE_QUEUE_NAMES_MAX) " names)", "", 0, 0};

std::mutex names_mutex;
Name names[kMaxNames];
std::size_t name_count = 0; // entries of `names` in use, under names_mutex

// A forked child's only thread holds no names_mutex, whoever held it at the fork; an entry being
// written then is past name_count, so it is simply not there.
[[maybe_unused]] const bool reset_in_child =
    (pthread_atfork(nullptr, nullptr, [] { new (&names_mutex) std::mutex; }), true);

const hotscope_source_location* intern(std::string_view name, std::uint32_t flags,
                                       const hotscope_source_location& overflow) noexcept {
  // Kept as a C string: cut at a NUL, like any name.
  name = name.substr(0, std::min<std::size_t>(name.find('\0'), HOTSCOPE_INLINE_TEXT_MAX));
  const std::lock_guard lock(names_mutex);
  for (std::size_t i = 0; i < name_count; ++i) {
    if (names[i].location.name == name && names[i].location.flags == flags) {
      return &names[i].location;
    }
  }
  if (name_count == kMaxNames) {
    static bool reported = false;
    if (!reported) {
      reported = true;
      std::fprintf(stderr, "hotscope: \"%.*s\" and later new names are counted as %s\n",
                   static_cast<int>(name.size()), name.data(), overflow.name);
    }
    return &overflow;
  }
  Name& entry = names[name_count];
  std::memcpy(entry.text, name.data(), name.size());
  entry.text[name.size()] = '\0';
  entry.location = {entry.text, "", 0, flags};
  ++name_count;
  return &entry.location;
}

} // namespace

const hotscope_source_location* hotscope::detail::queue_location(std::string_view name) noexcept {
  return intern(name, 0, kQueueOverflow);
}

const hotscope_source_location* hotscope::detail::lock_location(std::string_view name,
                                                                std::uint32_t flags) noexcept {
  return intern(name, flags, kLockOverflow);
}
