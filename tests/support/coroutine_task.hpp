// The smallest coroutine type a program might own, measured as a task: its promise derives from
// hotscope::TaskPromise. Started by resume(), destroyed with its object. Compiles with hotscope
// compiled out too.
#pragma once

#include <hotscope/task.hpp>

#include <coroutine>
#include <exception>
#include <utility>

// Not in namespace hotscope: a program built with hotscope compiled out uses it, and must hold
// no symbol that names hotscope.
namespace coroutine_support {

struct CoroutineTask {
  struct promise_type : hotscope::TaskPromise {
    CoroutineTask get_return_object() {
      return CoroutineTask{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  explicit CoroutineTask(std::coroutine_handle<promise_type> h) : handle(h) {}
  CoroutineTask(CoroutineTask&& other) noexcept : handle(std::exchange(other.handle, {})) {}
  CoroutineTask& operator=(CoroutineTask&&) = delete;
  ~CoroutineTask() {
    if (handle) {
      handle.destroy();
    }
  }
  std::coroutine_handle<promise_type> handle;
};

} // namespace coroutine_support
