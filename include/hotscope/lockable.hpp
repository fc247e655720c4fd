// hotscope::Lockable: a mutex whose waits, holds and order hotscope records (docs/locks.md).
//
//   HOTSCOPE_LOCKABLE(std::mutex, cache_mutex);         a member or a global, named "cache_mutex"
//   hotscope::Lockable<std::shared_mutex> index{"index"}; named at run time (interned once)
//
// It is a mutex like the one it wraps: std::lock_guard, std::unique_lock, std::scoped_lock,
// std::shared_lock (std::shared_mutex, std::shared_timed_mutex) and std::condition_variable_any
// take it. Each acquisition writes one record, each release one, a contended acquisition one more
// before it waits; a failed try-lock one. Locks of one name are one lock in the statistics.
//
// Compiled out (HOTSCOPE_ENABLED not 1), HOTSCOPE_LOCKABLE declares the plain type and
// hotscope::Lockable<M> is M with a constructor that ignores the name.
#ifndef HOTSCOPE_LOCKABLE_HPP
#define HOTSCOPE_LOCKABLE_HPP

#include <hotscope/hotscope.hpp>

#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <type_traits>
#include <utility>

namespace hotscope {
namespace detail {

// The hotscope_lock_kind of a mutex type, by what it can do.
template <typename M, typename = void> struct has_shared : std::false_type {};
template <typename M>
struct has_shared<M, std::void_t<decltype(std::declval<M&>().lock_shared())>> : std::true_type {};
template <typename M, typename = void> struct has_timed : std::false_type {};
template <typename M>
struct has_timed<
    M, std::void_t<decltype(std::declval<M&>().try_lock_for(std::chrono::milliseconds(1)))>>
    : std::true_type {};
template <typename M>
inline constexpr bool is_recursive_v =
    std::is_same_v<M, std::recursive_mutex> || std::is_same_v<M, std::recursive_timed_mutex>;

template <typename M> constexpr std::uint32_t lock_location_flags() {
  std::uint32_t kind = HOTSCOPE_LOCK_MUTEX;
  if (has_shared<M>::value) {
    kind = has_timed<M>::value ? HOTSCOPE_LOCK_SHARED_TIMED : HOTSCOPE_LOCK_SHARED;
  } else if (is_recursive_v<M>) {
    kind = has_timed<M>::value ? HOTSCOPE_LOCK_RECURSIVE_TIMED : HOTSCOPE_LOCK_RECURSIVE;
  } else if (has_timed<M>::value) {
    kind = HOTSCOPE_LOCK_TIMED;
  }
  return kind << HOTSCOPE_LOCATION_LOCK_KIND_SHIFT;
}

} // namespace detail
} // namespace hotscope

#if HOTSCOPE_ENABLED

namespace hotscope {
namespace detail {

// The location naming a lock given a name at run time: interned like a hotscope::Queue's name.
const hotscope_source_location* lock_location(std::string_view name, std::uint32_t flags) noexcept;

} // namespace detail

template <typename Mutex> class Lockable {
public:
  explicit Lockable(const hotscope_source_location* location) noexcept : location_(location) {}
  explicit Lockable(std::string_view name) noexcept
      : location_(detail::lock_location(name, detail::lock_location_flags<Mutex>())) {}
  Lockable(const Lockable&) = delete;
  Lockable& operator=(const Lockable&) = delete;

  // A try-lock first: an acquisition that does not wait costs one record.
  void lock() {
    if (!mutex_.try_lock()) {
      record(HOTSCOPE_RECORD_LOCK_WAIT);
      mutex_.lock();
    }
    record(HOTSCOPE_RECORD_LOCK_ACQUIRE);
  }
  bool try_lock() {
    const bool taken = mutex_.try_lock();
    record(taken ? HOTSCOPE_RECORD_LOCK_ACQUIRE : HOTSCOPE_RECORD_LOCK_TRY_FAIL);
    return taken;
  }
  // Recorded before the release, so that it comes before the next holder's acquisition.
  void unlock() {
    record(HOTSCOPE_RECORD_LOCK_RELEASE);
    mutex_.unlock();
  }

  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return timed([&](Mutex& m) { return m.try_lock(); },
                 [&](Mutex& m) { return m.try_lock_for(timeout); }, HOTSCOPE_RECORD_LOCK_ACQUIRE);
  }
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return timed([&](Mutex& m) { return m.try_lock(); },
                 [&](Mutex& m) { return m.try_lock_until(deadline); },
                 HOTSCOPE_RECORD_LOCK_ACQUIRE);
  }

  template <typename M = Mutex, typename = decltype(std::declval<M&>().lock_shared())>
  void lock_shared() {
    if (!mutex_.try_lock_shared()) {
      record(HOTSCOPE_RECORD_LOCK_WAIT);
      mutex_.lock_shared();
    }
    record(HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED);
  }
  template <typename M = Mutex, typename = decltype(std::declval<M&>().try_lock_shared())>
  bool try_lock_shared() {
    const bool taken = mutex_.try_lock_shared();
    record(taken ? HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED : HOTSCOPE_RECORD_LOCK_TRY_FAIL);
    return taken;
  }
  template <typename M = Mutex, typename = decltype(std::declval<M&>().unlock_shared())>
  void unlock_shared() {
    record(HOTSCOPE_RECORD_LOCK_RELEASE);
    mutex_.unlock_shared();
  }
  template <typename Rep, typename Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return timed([&](Mutex& m) { return m.try_lock_shared(); },
                 [&](Mutex& m) { return m.try_lock_shared_for(timeout); },
                 HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED);
  }
  template <typename Clock, typename Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return timed([&](Mutex& m) { return m.try_lock_shared(); },
                 [&](Mutex& m) { return m.try_lock_shared_until(deadline); },
                 HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED);
  }

  // The wrapped mutex, for code that needs the type itself; what is done through it is not seen.
  Mutex& native() noexcept { return mutex_; }

private:
  void record(std::uint32_t kind) const noexcept {
    detail::write_single(reinterpret_cast<std::uintptr_t>(location_),
                         reinterpret_cast<std::uintptr_t>(this), kind);
  }
  // A timed acquisition: a wait only when the try fails; a wait that times out gives up.
  template <typename Try, typename Wait> bool timed(Try try_now, Wait wait, std::uint32_t taken) {
    if (try_now(mutex_)) {
      record(taken);
      return true;
    }
    record(HOTSCOPE_RECORD_LOCK_WAIT);
    const bool acquired = wait(mutex_);
    record(acquired ? taken : std::uint32_t{HOTSCOPE_RECORD_LOCK_TRY_FAIL});
    return acquired;
  }

  Mutex mutex_;
  const hotscope_source_location* location_;
};

} // namespace hotscope

// A lock named by a literal: its location is static, like a scope's. Usable for a member (in its
// default member initializer) and for a global or a local.
#define HOTSCOPE_LOCKABLE(type, name)                                                              \
  ::hotscope::Lockable<type> name {                                                                \
    []() noexcept -> const hotscope_source_location* {                                             \
      static constexpr hotscope_source_location location{                                          \
          #name, __FILE__, __LINE__, ::hotscope::detail::lock_location_flags<type>()};             \
      return &location;                                                                            \
    }()                                                                                            \
  }

#else // !HOTSCOPE_ENABLED

namespace hotscope {
template <typename Mutex> class Lockable : public Mutex {
public:
  Lockable() = default;
  [[gnu::always_inline]] explicit Lockable(std::string_view) noexcept {}
  Mutex& native() noexcept { return *this; }
};
} // namespace hotscope

#define HOTSCOPE_LOCKABLE(type, name) type name

#endif // HOTSCOPE_ENABLED

#endif // HOTSCOPE_LOCKABLE_HPP
