// Interposed locks' names (src/trace/lock_names.cpp, objects::data_name): a lock in a loaded
// object's data is named by its static's symbol, file-local or not; any other by its address.
#include "objects/objects.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <pthread.h>

#include <memory>

pthread_mutex_t hotscope_test_exported_mutex = PTHREAD_MUTEX_INITIALIZER;

namespace {

// In .data (their initialisers are not all zero): a static in .bss past the object's last page
// of file is no module's for libdw, and is named by its address (docs/locks.md).
pthread_mutex_t file_local_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
pthread_rwlock_t file_local_rwlock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

std::uint64_t address(const void* lock) {
  return reinterpret_cast<std::uintptr_t>(lock);
}

TEST(LockNames, AStaticIsNamedByItsSymbolAndAnythingElseByNothing) {
  EXPECT_EQ(hotscope::objects::data_name(address(&hotscope_test_exported_mutex)),
            "hotscope_test_exported_mutex");
  EXPECT_EQ(hotscope::objects::data_name(address(&file_local_mutex)),
            "(anonymous namespace)::file_local_mutex");
  const auto on_heap = std::make_unique<pthread_mutex_t>();
  EXPECT_EQ(hotscope::objects::data_name(address(on_heap.get())), "");
  pthread_mutex_t on_stack;
  EXPECT_EQ(hotscope::objects::data_name(address(&on_stack)), "");
}

TEST(LockNames, TheSnapshotNamesEachInterposedLockWhereverItAppears) {
  namespace trace = hotscope::trace;
  const auto on_heap = std::make_unique<pthread_mutex_t>();
  hotscope::Snapshot snapshot;
  for (const auto& [kind, lock] :
       {std::pair<const char*, const void*>{"pthread_mutex", &file_local_mutex},
        {"pthread_rwlock", &file_local_rwlock},
        {"pthread_mutex", on_heap.get()}}) {
    hotscope::LockStats stats;
    stats.name = trace::address_lock_name(kind, address(lock));
    stats.address = address(lock);
    snapshot.locks.push_back(stats);
  }
  const std::string heap_name = snapshot.locks[2].name;
  EXPECT_EQ(heap_name.rfind("pthread_mutex 0x", 0), 0u) << heap_name;
  snapshot.names = {snapshot.locks[0].name, "unrelated"};
  hotscope::Deadlock deadlock;
  deadlock.cycle.resize(2);
  deadlock.cycle[0].lock = snapshot.locks[0].name;
  deadlock.cycle[1].lock = snapshot.locks[2].name;
  snapshot.deadlocks.push_back(deadlock);
  hotscope::LockInversion inversion;
  inversion.first = snapshot.locks[1].name;
  // An order between locks never contended: the lock table names them without their kind.
  inversion.second = trace::address_lock_name("pthread lock", address(&file_local_mutex));
  snapshot.inversions.push_back(inversion);

  trace::name_interposed_locks(snapshot);
  EXPECT_EQ(snapshot.locks[0].name, "(anonymous namespace)::file_local_mutex");
  EXPECT_EQ(snapshot.locks[1].name, "(anonymous namespace)::file_local_rwlock");
  EXPECT_EQ(snapshot.locks[2].name, heap_name);
  EXPECT_EQ(snapshot.deadlocks[0].cycle[0].lock, "(anonymous namespace)::file_local_mutex");
  EXPECT_EQ(snapshot.deadlocks[0].cycle[1].lock, heap_name);
  EXPECT_EQ(snapshot.inversions[0].first, "(anonymous namespace)::file_local_rwlock");
  EXPECT_EQ(snapshot.inversions[0].second, "(anonymous namespace)::file_local_mutex");
  EXPECT_EQ(snapshot.names,
            (std::vector<std::string>{"(anonymous namespace)::file_local_mutex", "unrelated"}));
}

} // namespace
