// hotscope in Boost.Asio's custom handler tracking (docs/tasks.md#asio): every asynchronous
// operation becomes a task named after its object and operation ("deadline_timer.async_wait",
// "socket.async_receive"): created when it starts, one running slice while its completion handler
// runs, completed when the handler returns (or destroyed unfinished when the handler is destroyed
// without running). Its waiting time is the operation's latency, its running time the handler's.
//
// Build the program with BOOST_ASIO_CUSTOM_HANDLER_TRACKING="hotscope/asio_handler_tracking.hpp"
// (the CMake target hotscope::asio adds it) and nothing else changes. Compiled out
// (HOTSCOPE_ENABLED not 1), every hook is what Asio defines without handler tracking: nothing.
#ifndef HOTSCOPE_ASIO_HANDLER_TRACKING_HPP
#define HOTSCOPE_ASIO_HANDLER_TRACKING_HPP

#include <hotscope/hotscope.hpp>

#if HOTSCOPE_ENABLED

namespace hotscope::asio_tracking {

// Asio derives each operation (the object holding a handler) from this.
class TrackedHandler {
protected:
  TrackedHandler() noexcept = default;
  ~TrackedHandler() = default;

private:
  friend void creation(TrackedHandler& handler, const hotscope_source_location* site) noexcept;
  friend class Completion;
  const hotscope_source_location* site_ = nullptr; // nullptr: never created through the hook
  std::uint64_t id_ = 0;
};

inline void creation(TrackedHandler& handler, const hotscope_source_location* site) noexcept {
  handler.site_ = site;
  handler.id_ = detail::new_task_id();
  detail::task_event(site, handler.id_, HOTSCOPE_RECORD_TASK_CREATE, detail::now());
}

// Made on the thread that completes the operation, before the handler is moved out of it.
class Completion {
public:
  explicit Completion(const TrackedHandler& handler) noexcept
      : site_(handler.site_), id_(handler.id_) {}
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  // A handler that threw still closes its slice; one never invoked was destroyed unfinished.
  ~Completion() {
    if (site_ == nullptr) {
      return;
    }
    if (!invoked_) {
      detail::task_event(site_, id_, HOTSCOPE_RECORD_TASK_DESTROY, detail::now());
    } else {
      invocation_end();
    }
  }

  template <typename... Arguments> void invocation_begin(const Arguments&...) noexcept {
    if (site_ != nullptr && !invoked_) {
      invoked_ = true;
      slice_ = detail::task_resume(site_, id_);
    }
  }
  void invocation_end() noexcept {
    if (site_ != nullptr && invoked_ && !ended_) {
      ended_ = true;
      detail::task_close(slice_, site_, id_, HOTSCOPE_RECORD_TASK_COMPLETE);
    }
  }

private:
  const hotscope_source_location* site_;
  std::uint64_t id_;
  detail::Ring* slice_ = nullptr;
  bool invoked_ = false;
  bool ended_ = false;
};

inline void location(const char*, int, const char*) noexcept {}

} // namespace hotscope::asio_tracking

#define BOOST_ASIO_INHERIT_TRACKED_HANDLER : public ::hotscope::asio_tracking::TrackedHandler
#define BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER , public ::hotscope::asio_tracking::TrackedHandler
#define BOOST_ASIO_HANDLER_TRACKING_INIT static_cast<void>(0)
#define BOOST_ASIO_HANDLER_LOCATION(args) ::hotscope::asio_tracking::location args
// Asio names every operation with two string literals: one static name per place it starts one.
#define HOTSCOPE_ASIO_CREATION(context, handler, object_type, object, native_handle, op_name)      \
  do {                                                                                             \
    static constexpr hotscope_source_location hotscope_asio_site{                                  \
        object_type "." op_name, __FILE__, __LINE__, HOTSCOPE_LOCATION_ASIO_OPERATION};            \
    ::hotscope::asio_tracking::creation(handler, &hotscope_asio_site);                             \
  } while (0)
#define BOOST_ASIO_HANDLER_CREATION(args) HOTSCOPE_ASIO_CREATION args
#define BOOST_ASIO_HANDLER_COMPLETION(args)                                                        \
  ::hotscope::asio_tracking::Completion tracked_completion args
#define BOOST_ASIO_HANDLER_INVOCATION_BEGIN(args) tracked_completion.invocation_begin args
#define BOOST_ASIO_HANDLER_INVOCATION_END tracked_completion.invocation_end()

#else // !HOTSCOPE_ENABLED: what Asio defines without handler tracking.

#define BOOST_ASIO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_HANDLER_TRACKING_INIT static_cast<void>(0)
#define BOOST_ASIO_HANDLER_LOCATION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_CREATION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_COMPLETION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_INVOCATION_BEGIN(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_INVOCATION_END static_cast<void>(0)

#endif // HOTSCOPE_ENABLED

// Synchronous operations and the reactor's events are not measured.
#define BOOST_ASIO_HANDLER_OPERATION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_REACTOR_REGISTRATION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_REACTOR_DEREGISTRATION(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_REACTOR_READ_EVENT 1
#define BOOST_ASIO_HANDLER_REACTOR_WRITE_EVENT 2
#define BOOST_ASIO_HANDLER_REACTOR_ERROR_EVENT 4
#define BOOST_ASIO_HANDLER_REACTOR_EVENTS(args) static_cast<void>(0)
#define BOOST_ASIO_HANDLER_REACTOR_OPERATION(args) static_cast<void>(0)

#endif // HOTSCOPE_ASIO_HANDLER_TRACKING_HPP
