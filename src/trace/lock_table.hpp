// Locks (docs/locks.md): per lock, its acquisitions, waits and holds; live, who holds and who
// waits for each lock instance; the wait-for graph's cycles (deadlocks) and the lock-order
// graph's (inversions). Owned by the Aggregator, which hands it the lock records in each thread's
// order and turns what it returns into trace events.
//
// Statistics are kept per lock: per name for a named lock (every instance of a member lock is one
// lock), per address for an interposed pthread lock. Live state and both graphs are per instance
// (address). Every table is bounded; what a full table cannot follow is counted in given_up.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/histogram.hpp"
#include "trace/snapshot_conversion.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hotscope::trace {

class LockTable {
public:
  static constexpr std::size_t kLocksMax = 4096;      // locks with statistics
  static constexpr std::size_t kInstancesMax = 65536; // lock instances followed live
  static constexpr std::size_t kOrderEdgesMax = 65536;
  static constexpr std::size_t kHeldPerThread = 64;
  static constexpr std::size_t kSitesPerLock = 16; // contention sites listed per lock
  static constexpr std::size_t kWaitersPerLock = 64;
  static constexpr std::size_t kInversionsMax = 256;
  static constexpr std::size_t kStackFramesMax = 32;

  // A lock as a record names it. `name`: its name id (a named lock's location, an interposed
  // lock's text); `kind`: "mutex", "pthread_mutex", ...
  struct Lock {
    std::uint32_t name = 0;
    std::string_view display; // the name's text
    std::string_view kind;
    bool named = true; // false: an interposed lock, whose statistics are its address's
    std::uint64_t address = 0;
  };
  // Where a record's thread is: its index and OS id, the record's time and the scopes open.
  struct At {
    std::uint32_t thread = 0;
    std::int64_t os_tid = 0;
    std::uint64_t ticks = 0;
    std::span<const std::uint32_t> scopes; // name ids, outermost first
  };
  // A LockHandoff event to put in the trace: on `thread` at `ticks`.
  struct Handoff {
    std::uint32_t thread = 0;
    std::uint64_t ticks = 0;
    std::uint32_t name = 0;
    std::int64_t flow = 0;
  };
  // What an acquisition or a give-up did to the thread's wait: it ended one begun at `since`
  // (a LockWait event), with the flow `flow` (> 0: a LockAcquired event; its LockHandoff is
  // `handoff` when the release was read already, else the release's own record gives it).
  struct WaitEnd {
    bool ended = false;
    std::uint64_t since = 0;
    std::int64_t flow = 0;
    std::optional<Handoff> handoff;
  };

  // False when the tables are full and the wait is not followed.
  bool wait(const At& at, const Lock& lock);
  // The holder's OS thread id as an interposed lock names it, for the wait just begun.
  void holder(const At& at, std::uint64_t address, std::int64_t holder_tid);
  WaitEnd acquire(const At& at, const Lock& lock, bool shared);
  std::optional<Handoff> release(const At& at, const Lock& lock);
  WaitEnd try_failed(const At& at, const Lock& lock);
  // An interposed nested acquisition: `address` taken while holding `held`.
  void order(const At& at, std::uint64_t held, std::uint64_t address);
  // A native stack for the thread's last LOCK_WAIT or LOCK_ORDER.
  void stack(std::uint32_t thread, std::span<const std::uint64_t> frames);
  void thread_exited(std::uint32_t thread);
  // Every thread's records written before the pass began have been consumed: handoffs still
  // unmatched are given up, and the wait-for graph is searched for cycles.
  void finish_pass();
  // Statistics restart; live state, the order graph and what was found stay.
  void reset();

  struct Captured {
    std::vector<LockStats> locks;
    std::vector<Deadlock> deadlocks;
    std::vector<LockInversion> inversions;
    LockFigures figures;
  };
  // `scope_name`: a name id's text; `os_tid`: a thread index's OS id.
  Captured snapshot(const SnapshotConversion& conversion,
                    const std::function<std::string(std::uint32_t)>& scope_name,
                    const std::function<std::int64_t(std::uint32_t)>& os_tid) const;
  std::size_t bytes() const;

private:
  struct Site {
    std::vector<std::uint32_t> scopes;
    std::vector<std::uint64_t> stack;
    auto operator<=>(const Site&) const = default;
  };
  struct Tally {
    std::uint64_t waits = 0;
    std::uint64_t wait_ticks = 0;
  };
  struct Stats {
    std::string name;
    std::string kind;
    std::uint64_t address = 0; // an interposed lock's
    std::uint64_t acquisitions = 0;
    std::uint64_t contended = 0;
    std::uint64_t try_failed = 0;
    Durations wait;
    Durations hold;
    std::map<std::uint32_t, Tally> waiters; // by thread index
    std::map<Site, Tally> sites;
    std::uint32_t instances = 0;
  };
  struct Holder {
    std::uint32_t thread = 0;
    std::uint64_t since = 0;
    bool shared = false;
  };
  struct Instance {
    Instance(std::uint32_t lock_index, std::uint32_t name_id) : lock(lock_index), name(name_id) {}
    std::uint32_t lock = 0; // index into locks_
    std::uint32_t name = 0;
    std::vector<Holder> holders;
    std::uint32_t last_release_thread = UINT32_MAX;
    std::uint64_t last_release_ticks = 0;
    // A waiter let in before the release that let it in was read: that release's window.
    struct PendingHandoff {
      std::uint64_t wait_since = 0;
      std::uint64_t acquired = 0;
      std::int64_t flow = 0;
      std::uint64_t pass = 0; // the drain pass that read the acquisition
    };
    std::optional<PendingHandoff> pending;
  };
  struct Held {
    std::uint64_t address = 0;
    std::uint64_t since = 0;
    std::uint32_t depth = 1;
    bool shared = false;
  };
  struct Waiting {
    std::uint64_t address = 0;
    std::uint64_t since = 0;
    std::int64_t holder_tid = 0; // as the lock named it (interposed), 0: unknown
    Site site;
  };
  enum class Last : std::uint8_t { None, Wait, Order };
  struct ThreadLocks {
    std::int64_t os_tid = 0;
    std::vector<Held> held;
    std::optional<Waiting> waiting;
    Last last = Last::None;
    std::pair<std::uint64_t, std::uint64_t> last_order{};
  };
  struct Edge {
    std::uint32_t thread = 0;
    Site site;
    std::uint64_t ticks = 0;
  };
  struct Inversion {
    std::uint64_t first = 0;
    std::uint64_t second = 0;
    Edge one; // second taken holding first
    Edge two; // first reached holding second
    std::string first_name;
    std::string second_name;
  };
  // A thread waiting, the lock, and the thread holding it.
  struct Link {
    std::uint32_t waiter = 0;
    std::uint64_t address = 0;
    std::uint32_t holder = 0;
  };
  using Cycle = std::vector<Link>;

  static Stats new_stats(const Lock& lock);
  // The instance at `address` for `lock`; nullptr when the tables are full.
  Instance* instance(const Lock& lock);
  ThreadLocks& thread_locks(const At& at);
  Site site_of(const At& at) const;
  WaitEnd end_wait(ThreadLocks& thread, const At& at, std::uint64_t address, Instance& instance,
                   bool acquired);
  void add_order(const At& at, std::uint64_t held, std::uint64_t address, Site site);
  bool reaches(std::uint64_t from, std::uint64_t to, std::vector<std::uint64_t>& path) const;
  void forget_instance_edges(std::uint64_t address);
  std::string instance_name(std::uint64_t address) const;
  std::vector<Cycle> cycles() const;
  LockSite site_out(const Site& site,
                    const std::function<std::string(std::uint32_t)>& scope_name) const;
  LockThread thread_out(std::uint32_t thread, std::uint64_t since, bool shared,
                        const SnapshotConversion& conversion,
                        const std::function<std::int64_t(std::uint32_t)>& os_tid) const;

  std::vector<Stats> locks_;
  std::unordered_map<std::string, std::uint32_t> named_;        // by name: index into locks_
  std::unordered_map<std::uint64_t, std::uint32_t> by_address_; // interposed: index into locks_
  std::unordered_map<std::uint64_t, Instance> instances_;
  std::map<std::uint32_t, ThreadLocks> threads_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Edge> edges_;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> successors_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> inverted_pairs_;
  std::vector<Inversion> inversions_;
  std::int64_t next_flow_ = 0;
  std::uint64_t pass_ = 0; // drain passes finished
  // Cycles seen at the last pass (candidates), and those seen in two passes in a row (standing).
  std::set<std::vector<std::pair<std::uint32_t, std::uint64_t>>> candidates_;
  std::vector<Cycle> standing_;
  std::set<std::vector<std::pair<std::uint32_t, std::uint64_t>>> standing_keys_;
  std::uint64_t deadlocks_found_ = 0;
  std::uint64_t given_up_ = 0;
};

} // namespace hotscope::trace
