// Boost.Asio with hotscope's handler tracking hook and no other change to the program: timers, a
// TCP echo over loopback and co_spawn coroutines, then the tasks the collector reports per kind
// of operation. Built with the CMake target hotscope::asio (BOOST_ASIO_CUSTOM_HANDLER_TRACKING).
#include "support/named.hpp"
#include "trace/trace.hpp"

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using hotscope::Snapshot;
using hotscope::TaskStats;
using hotscope::test_support::named;

Snapshot final_snapshot() {
  hotscope::trace::collect_now(); // the pass after the last ends: lifetimes are final
  return hotscope::trace::snapshot();
}

TEST(AsioTracking, TimersReportTheirLatencyAndHandlers) {
  hotscope::trace::reset();
  asio::io_context context;
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  int fired = 0;
  for (int i = 0; i < 5; ++i) {
    auto& timer = *timers.emplace_back(std::make_unique<asio::steady_timer>(context, 20ms));
    timer.async_wait([&](const boost::system::error_code& error) {
      EXPECT_FALSE(error);
      std::this_thread::sleep_for(2ms); // the handler's own time
      ++fired;
    });
  }
  context.run();
  ASSERT_EQ(fired, 5);
  const TaskStats& waits = named(final_snapshot().tasks, "deadline_timer.async_wait");
  EXPECT_EQ(waits.kind, "asio");
  EXPECT_EQ(waits.created, 5u);
  EXPECT_EQ(waits.completed, 5u);
  EXPECT_EQ(waits.alive, 0u);
  EXPECT_EQ(waits.resumes, 5u);
  EXPECT_GE(waits.waiting.min_ns, 19'000'000u); // the timer's 20 ms, at least
  EXPECT_GE(waits.running.min_ns, 2'000'000u);
  EXPECT_EQ(waits.lifetime.calls, 5u);
}

TEST(AsioTracking, AHandlerNeverRunIsDestroyedUnfinished) {
  hotscope::trace::reset();
  {
    asio::io_context context;
    asio::steady_timer timer(context, 1h);
    timer.async_wait([](const boost::system::error_code&) { ADD_FAILURE() << "never runs"; });
    context.poll(); // the wait is pending; the context is destroyed with it
  }
  const TaskStats& waits = named(final_snapshot().tasks, "deadline_timer.async_wait");
  EXPECT_EQ(waits.created, 1u);
  EXPECT_EQ(waits.completed, 0u);
  EXPECT_EQ(waits.destroyed_unfinished, 1u);
  EXPECT_EQ(waits.alive, 0u);
}

asio::awaitable<void> echo_server(tcp::acceptor& acceptor) {
  tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
  std::array<char, 64> data{};
  for (;;) {
    boost::system::error_code error;
    const std::size_t n = co_await socket.async_read_some(
        asio::buffer(data), asio::redirect_error(asio::use_awaitable, error));
    if (error) {
      co_return; // the client closed
    }
    co_await asio::async_write(socket, asio::buffer(data, n), asio::use_awaitable);
  }
}

asio::awaitable<void> echo_client(tcp::endpoint server, int round_trips, int& echoed) {
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, asio::use_awaitable);
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (int i = 0; i < round_trips; ++i) {
    const std::string message = "ping " + std::to_string(i);
    co_await asio::async_write(socket, asio::buffer(message), asio::use_awaitable);
    std::string reply(message.size(), '\0');
    co_await asio::async_read(socket, asio::buffer(reply), asio::use_awaitable);
    echoed += reply == message ? 1 : 0;
    pause.expires_after(1ms);
    co_await pause.async_wait(asio::use_awaitable);
  }
}

TEST(AsioTracking, ATcpEchoBetweenCoSpawnedCoroutines) {
  hotscope::trace::reset();
  asio::io_context context;
  tcp::acceptor acceptor(context, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  constexpr int kRoundTrips = 50;
  int echoed = 0;
  asio::co_spawn(context, echo_server(acceptor), asio::detached);
  asio::co_spawn(context, echo_client(acceptor.local_endpoint(), kRoundTrips, echoed),
                 asio::detached);
  // Two threads run the handlers, so operations complete on either.
  std::thread helper([&] { context.run(); });
  context.run();
  helper.join();
  ASSERT_EQ(echoed, kRoundTrips);

  const Snapshot s = final_snapshot();
  const TaskStats& accept = named(s.tasks, "socket.async_accept");
  EXPECT_EQ(accept.completed, 1u);
  const TaskStats& connect = named(s.tasks, "socket.async_connect");
  EXPECT_EQ(connect.completed, 1u);
  // Each round trip: the client's write and read and the server's read and write, at least; a
  // read that finds its bytes at once completes without waiting in the reactor but still runs
  // its handler through the hook.
  const TaskStats& sends = named(s.tasks, "socket.async_send");
  const TaskStats& receives = named(s.tasks, "socket.async_receive");
  EXPECT_GE(sends.completed, 2u * kRoundTrips);
  EXPECT_GE(receives.completed, 2u * kRoundTrips);
  EXPECT_EQ(sends.alive, 0u);
  EXPECT_EQ(receives.alive, 0u);
  const TaskStats& pauses = named(s.tasks, "deadline_timer.async_wait");
  EXPECT_EQ(pauses.completed, static_cast<std::uint64_t>(kRoundTrips));
  EXPECT_GE(pauses.waiting.min_ns, 900'000u);
  // The coroutines resume inside these handlers: each operation's handler is a slice on the
  // thread that ran it, with the coroutine's work inside.
  std::uint64_t handler_slices = 0;
  for (const TaskStats& task : s.tasks) {
    EXPECT_EQ(task.kind, "asio") << task.name;
    handler_slices += task.running.calls;
  }
  EXPECT_GE(handler_slices, 4u * kRoundTrips);
}

} // namespace
