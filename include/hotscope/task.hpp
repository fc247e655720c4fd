// hotscope tasks: C++20 coroutines measured as tasks (docs/tasks.md). Needs C++20.
//
//   struct promise_type : hotscope::TaskPromise { ... };   // the coroutine type's promise
//
//   Task<int> fetch(Connection& c) {
//     HOTSCOPE_TASK("fetch");          // first statement: this coroutine is a task named "fetch"
//     auto reply = co_await c.read();  // each co_await records a suspension and a resumption
//     co_return reply.size();
//   }
//
// Per task name hotscope then reports tasks created, completed, destroyed unfinished and alive,
// resumes, the time running (slices between a resumption and the next suspension, on whichever
// thread) and waiting, and each task's lifetime; every running slice is a slice on its thread in
// the trace, and a task's slices are linked by flow arrows.
//
// TaskPromise adds an await_transform that wraps every awaitable. A promise with an
// await_transform of its own returns hotscope::task_await(*this, its_awaiter) from it instead.
// Only co_await suspensions are seen: a generator's co_yield is not (wrap yield_value's result
// with task_await to see it). Compiled out (HOTSCOPE_ENABLED not 1), TaskPromise is an empty
// struct, task_await returns its argument and HOTSCOPE_TASK is nothing.
#ifndef HOTSCOPE_TASK_HPP
#define HOTSCOPE_TASK_HPP

#include <hotscope/hotscope.hpp>

#include <coroutine>
#include <type_traits>
#include <utility>

#if HOTSCOPE_ENABLED

namespace hotscope {
namespace detail {

// What a task's records need, kept in its promise (the coroutine frame).
struct TaskState {
  const hotscope_source_location* location = nullptr; // set by HOTSCOPE_TASK; until then no task
  std::uint64_t id = 0;
  std::uint64_t created_ticks = 0;
  Ring* slice = nullptr; // the ring the running slice opened in (nullptr: dropped)
  bool running = false;

  void resume() noexcept {
    if (location != nullptr && !running) {
      slice = task_resume(location, id);
      running = true;
    }
  }
  void suspend(std::uint32_t kind) noexcept {
    if (location != nullptr && running) {
      running = false;
      task_close(slice, location, id, kind);
    }
  }
};

struct TaskName {
  const hotscope_source_location* location;
  // Awaited only when the promise lacks TaskPromise's await_transform.
  bool await_ready() const noexcept { return false; }
  template <typename Promise> void await_suspend(std::coroutine_handle<Promise>) const noexcept {
    static_assert(
        sizeof(Promise) == 0,
        "HOTSCOPE_TASK needs the coroutine's promise to derive from hotscope::TaskPromise");
  }
  void await_resume() const noexcept {}
};

inline TaskName task_name(const hotscope_source_location* location) noexcept {
  return TaskName{location};
}

// Lives in the coroutine body from HOTSCOPE_TASK on: its end is the task's end, either returning
// (or throwing) while running, or the frame destroyed while suspended.
class TaskBody {
public:
  explicit TaskBody(TaskState& task) noexcept : task_(&task) {}
  TaskBody(TaskBody&& other) noexcept : task_(std::exchange(other.task_, nullptr)) {}
  TaskBody& operator=(TaskBody&&) = delete;
  ~TaskBody() {
    if (task_ == nullptr) {
      return;
    }
    if (task_->running) {
      task_->suspend(HOTSCOPE_RECORD_TASK_COMPLETE);
    } else {
      task_event(task_->location, task_->id, HOTSCOPE_RECORD_TASK_DESTROY, now());
    }
    task_->location = nullptr;
  }

private:
  TaskState* task_;
};

// HOTSCOPE_TASK's co_await: names the task and starts it (created when the promise was).
struct TaskStart {
  TaskState& task;
  const hotscope_source_location* location;
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  TaskBody await_resume() const noexcept {
    task.location = location;
    task.id = new_task_id();
    task_event(location, task.id, HOTSCOPE_RECORD_TASK_CREATE, task.created_ticks);
    task.resume();
    return TaskBody(task);
  }
};

// The awaiter of `awaitable` (its operator co_await's result), or the awaitable itself.
template <typename Awaitable> decltype(auto) awaiter_of(Awaitable&& awaitable) {
  if constexpr (requires { static_cast<Awaitable&&>(awaitable).operator co_await(); }) {
    return static_cast<Awaitable&&>(awaitable).operator co_await();
  } else if constexpr (requires { operator co_await(static_cast<Awaitable&&>(awaitable)); }) {
    return operator co_await(static_cast<Awaitable&&>(awaitable));
  } else {
    return static_cast<Awaitable&>(awaitable);
  }
}

// Wraps an awaiter: a suspension closes the task's running slice before the awaiter can hand the
// coroutine to another thread, and its resumption opens the next slice on the resuming thread.
// `Awaitable` is a value type (owned: a temporary was awaited) or an lvalue reference.
template <typename Awaitable> class TaskAwaiter {
public:
  TaskAwaiter(TaskState& task, Awaitable&& awaitable)
      : task_(task), awaitable_(static_cast<Awaitable&&>(awaitable)),
        awaiter_(awaiter_of(static_cast<Awaitable&&>(awaitable_))) {}
  TaskAwaiter(const TaskAwaiter&) = delete;
  TaskAwaiter& operator=(const TaskAwaiter&) = delete;

  bool await_ready() { return awaiter_.await_ready(); }

  template <typename Promise> decltype(auto) await_suspend(std::coroutine_handle<Promise> handle) {
    suspended_ = true;
    task_.suspend(HOTSCOPE_RECORD_TASK_SUSPEND);
    // Nothing of this object is touched once the awaiter may have handed the coroutine over,
    // except when it did not: it returned false, or threw (then the coroutine runs on here).
    try {
      return awaiter_.await_suspend(handle);
    } catch (...) {
      suspended_ = false;
      task_.resume();
      throw;
    }
  }

  decltype(auto) await_resume() {
    if (suspended_) {
      task_.resume();
    }
    return awaiter_.await_resume();
  }

private:
  using Awaiter = decltype(awaiter_of(std::declval<Awaitable&&>()));
  TaskState& task_;
  Awaitable awaitable_;
  Awaiter awaiter_;
  bool suspended_ = false;
};

} // namespace detail

// Derive the promise of a coroutine type from this to measure its coroutines as tasks: the
// promise's construction is the task's creation, HOTSCOPE_TASK names it.
class TaskPromise {
public:
  TaskPromise() noexcept { hotscope_task_.created_ticks = detail::now(); }

  detail::TaskStart await_transform(detail::TaskName name) noexcept {
    return {hotscope_task_, name.location};
  }
  template <typename Awaitable>
  detail::TaskAwaiter<Awaitable> await_transform(Awaitable&& awaitable) {
    return {hotscope_task_, static_cast<Awaitable&&>(awaitable)};
  }

private:
  template <typename Awaitable>
  friend detail::TaskAwaiter<Awaitable> task_await(TaskPromise& promise, Awaitable&& awaitable);
  detail::TaskState hotscope_task_;
};

// For a promise with an await_transform of its own: wrap what it returns.
template <typename Awaitable>
detail::TaskAwaiter<Awaitable> task_await(TaskPromise& promise, Awaitable&& awaitable) {
  return {promise.hotscope_task_, static_cast<Awaitable&&>(awaitable)};
}

} // namespace hotscope

// The first statement of a coroutine body whose promise derives from hotscope::TaskPromise.
#define HOTSCOPE_TASK_WITH_ID(id, name)                                                            \
  static constexpr hotscope_source_location HOTSCOPE_LOCATION_VAR(id){"" name "", __FILE__,        \
                                                                      __LINE__, 0u};               \
  const ::hotscope::detail::TaskBody HOTSCOPE_CONCAT(hotscope_task_, id) =                         \
      co_await ::hotscope::detail::task_name(&HOTSCOPE_LOCATION_VAR(id))
#define HOTSCOPE_TASK(name) HOTSCOPE_TASK_WITH_ID(__COUNTER__, name)

#else // !HOTSCOPE_ENABLED

namespace hotscope {
class TaskPromise {};
template <typename Awaitable> Awaitable&& task_await(TaskPromise&, Awaitable&& awaitable) noexcept {
  return static_cast<Awaitable&&>(awaitable);
}
} // namespace hotscope

#define HOTSCOPE_TASK(name) static_cast<void>(sizeof(name))

#endif // HOTSCOPE_ENABLED

#endif // HOTSCOPE_TASK_HPP
