#include "locks_text.hpp"

#include "console/text.hpp"

#include <fmt/format.h>

namespace hotscope::cli {
namespace {

using profiles::LockSite;
using profiles::LockStats;
using profiles::LockThread;

std::string duration(std::uint64_t ns) {
  return console::duration(static_cast<double>(ns));
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

std::string plural(std::size_t count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

} // namespace

std::string deadlock_line(const profiles::Deadlock& deadlock) {
  std::vector<std::string> links;
  for (const profiles::DeadlockLink& link : deadlock.cycle) {
    links.push_back(fmt::format("{} waits for {} (held by {} for {})", thread_name(link.waiter),
                                link.lock, thread_name(link.holder), duration(link.holder.for_ns)));
  }
  return "deadlock: " + joined(links, " → ");
}

std::vector<std::string> deadlock_lines(const profiles::Deadlock& deadlock) {
  std::vector<std::string> lines{deadlock_line(deadlock)};
  for (const profiles::DeadlockLink& link : deadlock.cycle) {
    lines.push_back(fmt::format("  {} in {}", thread_name(link.waiter),
                                link.waiter_scopes.empty() ? "(no scope open)"
                                                           : joined(link.waiter_scopes, " > ")));
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

std::string locks_text(const profiles::LockReport& report, bool inversions) {
  const std::vector<LockStats> locks = report.locks.value_or(std::vector<LockStats>{});
  std::string text = fmt::format(
      "{}, {} standing, {} found in all; {}\n", plural(locks.size(), "lock", "locks"),
      plural(report.deadlocks.size(), "deadlock", "deadlocks"), report.figures.deadlocks_found,
      plural(report.inversions.size(), "lock-order inversion", "lock-order inversions"));
  for (const profiles::Deadlock& deadlock : report.deadlocks) {
    for (const std::string& line : deadlock_lines(deadlock)) {
      text += "\n" + line;
    }
    text += "\n";
  }
  if (locks.empty()) {
    text += "no lock recorded: name locks with HOTSCOPE_LOCKABLE, or start the program with "
            "HOTSCOPE_LOCKS=1 (or `hotscope run --locks`) for its pthread locks\n";
  } else {
    text += "\n";
    for (const std::string& line : console::align(lock_table(locks), 0, console::Glyphs{})) {
      text += line + "\n";
    }
  }
  for (const profiles::LockInversion& inversion : report.inversions) {
    text += "\n";
    for (const std::string& line : inversion_lines(inversion, inversions)) {
      text += line + "\n";
    }
  }
  if (!report.inversions.empty() && !inversions) {
    text += "(--inversions shows where each order was taken)\n";
  }
  return text;
}

} // namespace hotscope::cli
