// The locks of a stats.json, of the agent's GET /v1/stats and GET /v1/locks answers, and the
// deadlocks of GET /v1/threads (docs/formats-output.md, docs/locks.md): checked key by key, then
// read into LockReport. One table of a lock's figures serves the check and the read.
#include "checker.hpp"

#include <utility>

namespace hotscope::cli::profiles {
namespace {

using Json = nlohmann::json;

struct LockFigure {
  const char* key;
  std::uint64_t LockStats::*member;
  Type type;
};

const LockFigure kLockFigures[] = {
    {"acquisitions", &LockStats::acquisitions, Type::Count},
    {"contended", &LockStats::contended, Type::Count},
    {"try_failed", &LockStats::try_failed, Type::Count},
    {"waits", &LockStats::waits, Type::Count},
    {"wait_total_ns", &LockStats::wait_total_ns, Type::Number},
    {"wait_p50_ns", &LockStats::wait_p50_ns, Type::Number},
    {"wait_p95_ns", &LockStats::wait_p95_ns, Type::Number},
    {"wait_p99_ns", &LockStats::wait_p99_ns, Type::Number},
    {"wait_max_ns", &LockStats::wait_max_ns, Type::Number},
    {"holds", &LockStats::holds, Type::Count},
    {"hold_total_ns", &LockStats::hold_total_ns, Type::Number},
    {"hold_p50_ns", &LockStats::hold_p50_ns, Type::Number},
    {"hold_p95_ns", &LockStats::hold_p95_ns, Type::Number},
    {"hold_p99_ns", &LockStats::hold_p99_ns, Type::Number},
    {"hold_max_ns", &LockStats::hold_max_ns, Type::Number},
};

// The figures the tools do not show, checked all the same.
const Key kOtherFigures[] = {
    {"wait_mean_ns", Type::Number}, {"wait_min_ns", Type::Number},  {"wait_p90_ns", Type::Number},
    {"wait_p999_ns", Type::Number}, {"hold_mean_ns", Type::Number}, {"hold_min_ns", Type::Number},
    {"hold_p90_ns", Type::Number},  {"hold_p999_ns", Type::Number},
};

const std::vector<Key>& lock_keys() {
  static const std::vector<Key> keys = [] {
    std::vector<Key> all{{"name", Type::String, true},  {"kind", Type::String},
                         {"address", Type::String},     {"top_waiters", Type::Array},
                         {"contended_at", Type::Array}, {"holders", Type::Array},
                         {"waiters", Type::Array}};
    for (const LockFigure& figure : kLockFigures) {
      all.push_back(Key{figure.key, figure.type});
    }
    all.insert(all.end(), std::begin(kOtherFigures), std::end(kOtherFigures));
    return all;
  }();
  return keys;
}

void check_lock_thread(const Checker& checker, const Json& thread, const std::string& where) {
  checker.keys(thread, where,
               {{"thread", Type::String},
                {"os_tid", Type::Count},
                {"for_ns", Type::Number},
                {"shared", Type::Bool}});
}

void check_site(const Checker& checker, const Json& site, const std::string& where) {
  checker.keys(site, where,
               {{"scopes", Type::Array},
                {"stack", Type::Array},
                {"waits", Type::Count},
                {"wait_ns", Type::Number}});
}

void check_lock(const Checker& checker, const Json& lock, const std::string& where) {
  const std::vector<Key>& keys = lock_keys();
  checker.keys(lock, where, keys.data(), keys.data() + keys.size());
  checker.elements(lock, where, "top_waiters", [&](const Json& waiter, const std::string& at) {
    checker.keys(waiter, at,
                 {{"thread", Type::String}, {"waits", Type::Count}, {"wait_ns", Type::Number}});
  });
  checker.elements(lock, where, "contended_at",
                   [&](const Json& site, const std::string& at) { check_site(checker, site, at); });
  for (const char* list : {"holders", "waiters"}) {
    checker.elements(lock, where, list, [&](const Json& thread, const std::string& at) {
      check_lock_thread(checker, thread, at);
    });
  }
}

void check_inversion(const Checker& checker, const Json& inversion, const std::string& where) {
  checker.keys(inversion, where,
               {{"first", Type::String},
                {"second", Type::String},
                {"thread_one", Type::String},
                {"site_one", Type::Object},
                {"thread_two", Type::String},
                {"site_two", Type::Object},
                {"found_ns", Type::Number}});
  for (const char* site : {"site_one", "site_two"}) {
    if (const auto found = inversion.find(site); found != inversion.end()) {
      check_site(checker, *found, Checker::member(where, site));
    }
  }
}

LockThread lock_thread_of(const Json& thread) {
  return LockThread{text_at(thread, "thread"), integer_at(thread, "os_tid"),
                    count_at(thread, "for_ns"), thread.value("shared", false)};
}

LockSite site_of(const Json& site) {
  return LockSite{names_at(site, "scopes"), names_at(site, "stack"), count_at(site, "waits"),
                  count_at(site, "wait_ns")};
}

std::vector<LockThread> lock_threads_of(const Json& owner, const char* key) {
  return list_of(owner, key, lock_thread_of).value_or(std::vector<LockThread>{});
}

LockStats lock_of(const Json& lock) {
  LockStats row;
  row.name = text_at(lock, "name");
  row.kind = text_at(lock, "kind");
  row.address = text_at(lock, "address");
  for (const LockFigure& figure : kLockFigures) {
    row.*figure.member = count_at(lock, figure.key);
  }
  row.top_waiters = list_of(lock, "top_waiters", [](const Json& waiter) {
                      return LockWaiter{text_at(waiter, "thread"), count_at(waiter, "waits"),
                                        count_at(waiter, "wait_ns")};
                    }).value_or(std::vector<LockWaiter>{});
  row.contended_at = list_of(lock, "contended_at", site_of).value_or(std::vector<LockSite>{});
  row.holders = lock_threads_of(lock, "holders");
  row.waiters = lock_threads_of(lock, "waiters");
  return row;
}

LockInversion inversion_of(const Json& inversion) {
  return LockInversion{text_at(inversion, "first"),
                       text_at(inversion, "second"),
                       text_at(inversion, "thread_one"),
                       text_at(inversion, "thread_two"),
                       site_of(object_at(inversion, "site_one")),
                       site_of(object_at(inversion, "site_two")),
                       count_at(inversion, "found_ns")};
}

} // namespace

void check_deadlocks(const Checker& checker, const Json& owner) {
  checker.keys(owner, "", {{"deadlocks", Type::Array}});
  checker.elements(owner, "", "deadlocks", [&](const Json& deadlock, const std::string& where) {
    checker.keys(deadlock, where, {{"cycle", Type::Array}});
    checker.elements(deadlock, where, "cycle", [&](const Json& link, const std::string& at) {
      checker.keys(link, at,
                   {{"waiter", Type::Object},
                    {"lock", Type::String},
                    {"holder", Type::Object},
                    {"waiter_scopes", Type::Array}});
      for (const char* thread : {"waiter", "holder"}) {
        if (const auto found = link.find(thread); found != link.end()) {
          check_lock_thread(checker, *found, Checker::member(at, thread));
        }
      }
    });
  });
}

std::vector<Deadlock> deadlocks_of(const Json& owner) {
  return list_of(owner, "deadlocks",
                 [](const Json& deadlock) {
                   Deadlock read;
                   read.cycle = list_of(deadlock, "cycle", [](const Json& link) {
                                  return DeadlockLink{lock_thread_of(object_at(link, "waiter")),
                                                      text_at(link, "lock"),
                                                      lock_thread_of(object_at(link, "holder")),
                                                      names_at(link, "waiter_scopes")};
                                }).value_or(std::vector<DeadlockLink>{});
                   return read;
                 })
      .value_or(std::vector<Deadlock>{});
}

void check_locks(const Checker& checker, const Json& owner) {
  checker.keys(
      owner, "",
      {{"locks", Type::Array}, {"lock_inversions", Type::Array}, {"lock_figures", Type::Object}});
  checker.elements(owner, "", "locks", [&](const Json& lock, const std::string& where) {
    check_lock(checker, lock, where);
  });
  check_deadlocks(checker, owner);
  checker.elements(owner, "", "lock_inversions",
                   [&](const Json& inversion, const std::string& where) {
                     check_inversion(checker, inversion, where);
                   });
  if (const auto figures = owner.find("lock_figures"); figures != owner.end()) {
    checker.keys(*figures, "\"lock_figures\"",
                 {{"deadlocks_found", Type::Count},
                  {"order_edges", Type::Count},
                  {"given_up", Type::Count}});
  }
}

LockReport locks_of(const Json& owner) {
  LockReport report;
  report.locks = list_of(owner, "locks", lock_of);
  report.deadlocks = deadlocks_of(owner);
  report.inversions =
      list_of(owner, "lock_inversions", inversion_of).value_or(std::vector<LockInversion>{});
  const Json& figures = object_at(owner, "lock_figures");
  report.figures = LockFigures{count_at(figures, "deadlocks_found"),
                               count_at(figures, "order_edges"), count_at(figures, "given_up")};
  return report;
}

LockReport read_locks(const Json& answer, const std::string& source) {
  check_locks(Checker(source, "a locks answer"), answer);
  return locks_of(answer);
}

} // namespace hotscope::cli::profiles
