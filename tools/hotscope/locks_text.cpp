#include "locks_text.hpp"

#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hotscope::cli {
namespace {

using profiles::LockSite;
using profiles::LockStats;
using profiles::LockThread;

std::string duration(std::uint64_t ns) {
  return exporters::detail::human_duration(static_cast<double>(ns));
}

std::string joined(const std::vector<std::string>& names, const char* separator) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : separator) + name;
  }
  return text;
}

std::string thread_name(const LockThread& thread) {
  return thread.thread.empty() ? fmt::format("thread {}", thread.os_tid) : thread.thread;
}

// "locker-a 1.20 s, locker-b 3.00 ms (shared)": who holds or waits now, for how long.
std::string threads_now(const std::vector<LockThread>& threads) {
  std::vector<std::string> named;
  for (const LockThread& thread : threads) {
    named.push_back(fmt::format("{} {}{}", thread_name(thread), duration(thread.for_ns),
                                thread.shared ? " (shared)" : ""));
  }
  return named.empty() ? "-" : joined(named, ", ");
}

// A figure of `count` measurements: "-" when there were none.
std::string figure(std::uint64_t count, std::uint64_t ns) {
  return count == 0 ? "-" : duration(ns);
}

void add_site(std::vector<std::string>& lines, const std::string& heading, const LockSite& site) {
  lines.push_back("  " + heading);
  lines.push_back("    scopes: " + (site.scopes.empty() ? "-" : joined(site.scopes, " > ")));
  if (site.stack.empty()) {
    lines.push_back("    stack: -");
  }
  for (std::size_t i = 0; i < site.stack.size(); ++i) {
    lines.push_back((i == 0 ? "    stack: " : "           ") + site.stack[i]);
  }
}

} // namespace

std::vector<std::string> deadlock_lines(const profiles::Deadlock& deadlock) {
  // The agent's and report.txt's words (export/common.hpp), from the cycle as read.
  const auto thread = [](const LockThread& read) {
    return hotscope::LockThread{read.thread, read.os_tid, read.for_ns, read.shared};
  };
  hotscope::Deadlock cycle;
  for (const profiles::DeadlockLink& link : deadlock.cycle) {
    cycle.cycle.push_back(hotscope::Deadlock::Link{thread(link.waiter), link.lock,
                                                   thread(link.holder), link.waiter_scopes});
  }
  std::vector<std::string> lines;
  const std::string text = exporters::detail::deadlocks_text({cycle}, "");
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> inversion_lines(const profiles::LockInversion& inversion, bool sites) {
  std::vector<std::string> lines{fmt::format(
      "lock-order inversion: {} then {} ({}), {} then {} ({})", inversion.first, inversion.second,
      inversion.thread_one, inversion.second, inversion.first, inversion.thread_two)};
  if (sites) {
    add_site(lines,
             fmt::format("{} took {} holding {}:", inversion.thread_one, inversion.second,
                         inversion.first),
             inversion.site_one);
    add_site(lines,
             fmt::format("{} took {} holding {}:", inversion.thread_two, inversion.first,
                         inversion.second),
             inversion.site_two);
  }
  return lines;
}

std::vector<std::vector<std::string>> lock_table(const std::vector<LockStats>& locks) {
  std::vector<std::vector<std::string>> rows{{"Lock", "Kind", "Acquired", "Contended", "Wait p50",
                                              "p99", "max", "Hold p99", "Holders now",
                                              "Waiters now"}};
  for (const LockStats& lock : locks) {
    rows.push_back({lock.name.empty() ? lock.address : lock.name, lock.kind,
                    fmt::format("{}", lock.acquisitions), fmt::format("{}", lock.contended),
                    figure(lock.waits, lock.wait_p50_ns), figure(lock.waits, lock.wait_p99_ns),
                    figure(lock.waits, lock.wait_max_ns), figure(lock.holds, lock.hold_p99_ns),
                    threads_now(lock.holders), threads_now(lock.waiters)});
  }
  return rows;
}

} // namespace hotscope::cli
