#include "locks/locks.hpp"
#include "support/forked_child_skips.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace locks = hotscope::locks;

namespace {

// The records the calling thread writes from now on (or all it wrote, `from_start`), read from its
// own ring (the collector is paused, so nothing leaves it meanwhile).
class OwnRecords {
public:
  explicit OwnRecords(bool from_start = false)
      : ring_(hotscope::detail::current_ring()), from_(from_start ? 0 : ring_->head.load()) {}
  std::vector<hotscope_record> take() const {
    std::vector<hotscope_record> out;
    for (std::uint64_t i = from_; i < ring_->head.load(); ++i) {
      out.push_back(ring_->slots[i & (ring_->capacity - 1)]);
    }
    return out;
  }
  // The kinds, payload records left out.
  std::vector<std::uint32_t> kinds() const {
    std::vector<std::uint32_t> out;
    const std::vector<hotscope_record> records = take();
    for (std::size_t i = 0; i < records.size(); i += 1 + records[i].payload_records) {
      out.push_back(records[i].kind);
    }
    return out;
  }

private:
  hotscope::detail::Ring* ring_;
  std::uint64_t from_;
};

std::uint64_t address(const void* lock) {
  return reinterpret_cast<std::uintptr_t>(lock);
}

std::uint64_t own_tid() {
  return static_cast<std::uint64_t>(syscall(SYS_gettid));
}

class Interposer : public ::testing::Test {
protected:
  void SetUp() override { hotscope::trace::pause_collector_for_testing(true); }
  void TearDown() override {
    locks::start(locks::Mode::Off);
    hotscope::trace::pause_collector_for_testing(false);
  }
};

// Another thread holds `lock_it`'s lock until told to let go, `hold_ms` after the caller began.
class Holder {
public:
  template <class Lock, class Unlock> Holder(Lock lock_it, Unlock unlock_it, int hold_ms) {
    thread_ = std::thread([=, this] {
      tid_ = own_tid();
      lock_it();
      held_.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
      unlock_it();
    });
    while (!held_.load()) {
      std::this_thread::yield();
    }
  }
  ~Holder() { thread_.join(); }
  std::uint64_t tid() const { return tid_; }

private:
  std::thread thread_;
  std::uint64_t tid_ = 0;
  std::atomic<bool> held_{false};
};

#define HOTSCOPE_CALLER __builtin_return_address(0)

TEST_F(Interposer, UncontendedAcquisitionsRecordNothingUnlessHoldTimesAreAsked) {
  locks::start(locks::Mode::Contended);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  OwnRecords records;
  ASSERT_EQ(locks::mutex_lock(&mutex, HOTSCOPE_CALLER), 0);
  ASSERT_EQ(locks::mutex_unlock(&mutex), 0);
  EXPECT_TRUE(records.take().empty());

  locks::start(locks::Mode::Hold);
  OwnRecords held;
  ASSERT_EQ(locks::mutex_lock(&mutex, HOTSCOPE_CALLER), 0);
  ASSERT_EQ(locks::mutex_unlock(&mutex), 0);
  const std::vector<hotscope_record> written = held.take();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].kind, HOTSCOPE_RECORD_LOCK_ACQUIRE);
  EXPECT_EQ(written[1].kind, HOTSCOPE_RECORD_LOCK_RELEASE);
  for (const hotscope_record& record : written) {
    EXPECT_EQ(record.ref, HOTSCOPE_LOCK_REF_PTHREAD_MUTEX);
    EXPECT_EQ(record.value, address(&mutex));
  }
}

TEST_F(Interposer, AContendedAcquisitionRecordsItsWaitTheHolderAndTheStack) {
  locks::start(locks::Mode::Contended);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  std::vector<hotscope_record> written;
  {
    const Holder holder([&] { locks::mutex_lock(&mutex, nullptr); },
                        [&] { locks::mutex_unlock(&mutex); }, 30);
    // A thread of its own, without a ring: its first record is the wait, which registers one.
    const void* caller = nullptr;
    std::thread waiter([&] {
      caller = HOTSCOPE_CALLER;
      if (hotscope::detail::tls_ring == nullptr) {
        locks::mutex_lock(&mutex, caller);
        locks::mutex_unlock(&mutex);
        written = OwnRecords(true).take();
      }
    });
    waiter.join();
    ASSERT_GE(written.size(), 5u);
    EXPECT_EQ(written[1].ref, holder.tid());
    // The stack begins at the program's frame, not in the interposer.
    std::uint64_t innermost = 0;
    std::memcpy(&innermost, &written[3], sizeof innermost);
    EXPECT_EQ(innermost, address(caller));
  }
  EXPECT_EQ(written[0].kind, HOTSCOPE_RECORD_LOCK_WAIT);
  EXPECT_EQ(written[0].ref, HOTSCOPE_LOCK_REF_PTHREAD_MUTEX);
  EXPECT_EQ(written[0].value, address(&mutex));
  EXPECT_EQ(written[1].kind, HOTSCOPE_RECORD_LOCK_HOLDER);
  EXPECT_EQ(written[1].value, address(&mutex));
  EXPECT_EQ(written[2].kind, HOTSCOPE_RECORD_STACK);
  EXPECT_GT(written[2].value, 0u);
  EXPECT_EQ(written[2].payload_records, (written[2].value + 3) / 4);
  const std::size_t after = 3 + written[2].payload_records;
  ASSERT_EQ(written.size(), after + 2);
  EXPECT_EQ(written[after].kind, HOTSCOPE_RECORD_LOCK_ACQUIRE);
  EXPECT_EQ(written[after + 1].kind, HOTSCOPE_RECORD_LOCK_RELEASE); // its acquisition was recorded
}

// A thread's first stacks are walked with libgcc's unwinder, which keeps no memory: not with
// unw_backtrace, whose trace cache takes 64 pages of every thread at its first walk. Each new
// pair of nested locks records its stack.
TEST_F(Interposer, AThreadsFirstStacksCostItNoUnwindCache) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan's shadow memory takes pages of its own at each new access (159 here)";
#endif
  locks::start(locks::Mode::Contended);
  std::vector<pthread_mutex_t> mutexes(51);
  for (pthread_mutex_t& mutex : mutexes) {
    pthread_mutex_init(&mutex, nullptr);
  }
  long faults = -1;
  std::size_t stacks = 0;
  std::thread fresh([&] {
    hotscope::detail::current_ring(); // registered before: its own pages are not counted
    OwnRecords written;
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    for (std::size_t i = 1; i < mutexes.size(); ++i) {
      locks::mutex_lock(&mutexes[0], HOTSCOPE_CALLER);
      locks::mutex_lock(&mutexes[i], HOTSCOPE_CALLER);
      locks::mutex_unlock(&mutexes[i]);
      locks::mutex_unlock(&mutexes[0]);
    }
    getrusage(RUSAGE_THREAD, &after);
    faults = after.ru_minflt - before.ru_minflt;
    const std::vector<hotscope_record> records = written.take();
    for (std::size_t i = 0; i < records.size(); i += 1 + records[i].payload_records) {
      stacks += records[i].kind == HOTSCOPE_RECORD_STACK ? 1 : 0;
    }
  });
  fresh.join();
  EXPECT_EQ(stacks, 50u) << "each new pair records its stack";
  EXPECT_LT(faults, 24) << "page faults of a fresh thread's first 50 stacks";
}

TEST_F(Interposer, AWaitingReaderRecordsTheWriterAndASharedAcquisition) {
  locks::start(locks::Mode::Contended);
  pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
  const Holder holder([&] { locks::rwlock_lock(&rwlock, false, nullptr); },
                      [&] { locks::rwlock_unlock(&rwlock); }, 30);
  const OwnRecords records;
  ASSERT_EQ(locks::rwlock_lock(&rwlock, true, HOTSCOPE_CALLER), 0);
  ASSERT_EQ(locks::rwlock_unlock(&rwlock), 0);
  const std::vector<std::uint32_t> kinds = records.kinds();
  EXPECT_EQ(kinds,
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_LOCK_WAIT, HOTSCOPE_RECORD_LOCK_HOLDER,
                                        HOTSCOPE_RECORD_STACK, HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED,
                                        HOTSCOPE_RECORD_LOCK_RELEASE}));
  const std::vector<hotscope_record> written = records.take();
  EXPECT_EQ(written[0].ref, HOTSCOPE_LOCK_REF_PTHREAD_RWLOCK);
  EXPECT_EQ(written[1].ref, holder.tid());
}

TEST_F(Interposer, FailedTriesAndTimedOutWaitsAreRecordedAsSuch) {
  locks::start(locks::Mode::Contended);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
  const Holder mutex_holder([&] { locks::mutex_lock(&mutex, nullptr); },
                            [&] { locks::mutex_unlock(&mutex); }, 100);
  const Holder rwlock_holder([&] { locks::rwlock_lock(&rwlock, false, nullptr); },
                             [&] { locks::rwlock_unlock(&rwlock); }, 100);
  const OwnRecords records;
  EXPECT_EQ(locks::mutex_trylock(&mutex), EBUSY);
  EXPECT_EQ(locks::rwlock_trylock(&rwlock, true), EBUSY);
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_nsec += 5'000'000;
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  EXPECT_EQ(locks::mutex_timedlock(&mutex, CLOCK_MONOTONIC, &deadline, true, HOTSCOPE_CALLER),
            ETIMEDOUT);
  const std::vector<std::uint32_t> kinds = records.kinds();
  EXPECT_EQ(kinds, (std::vector<std::uint32_t>{
                       HOTSCOPE_RECORD_LOCK_TRY_FAIL, HOTSCOPE_RECORD_LOCK_TRY_FAIL,
                       HOTSCOPE_RECORD_LOCK_WAIT, HOTSCOPE_RECORD_LOCK_HOLDER,
                       HOTSCOPE_RECORD_STACK, HOTSCOPE_RECORD_LOCK_TRY_FAIL}));
  EXPECT_EQ(records.take()[1].ref, HOTSCOPE_LOCK_REF_PTHREAD_RWLOCK);
}

TEST_F(Interposer, NestedLocksRecordTheirOrderOncePerPair) {
  locks::start(locks::Mode::Contended);
  pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
  const OwnRecords records;
  for (int round = 0; round < 3; ++round) {
    locks::mutex_lock(&outer, HOTSCOPE_CALLER);
    locks::mutex_lock(&inner, HOTSCOPE_CALLER);
    locks::mutex_unlock(&inner);
    locks::mutex_unlock(&outer);
  }
  // The other order, once: a pair of its own.
  locks::mutex_lock(&inner, HOTSCOPE_CALLER);
  locks::mutex_lock(&outer, HOTSCOPE_CALLER);
  locks::mutex_unlock(&outer);
  locks::mutex_unlock(&inner);
  const std::vector<hotscope_record> written = records.take();
  EXPECT_EQ(records.kinds(),
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_LOCK_ORDER, HOTSCOPE_RECORD_STACK,
                                        HOTSCOPE_RECORD_LOCK_ORDER, HOTSCOPE_RECORD_STACK}));
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written[0].ref, address(&outer));
  EXPECT_EQ(written[0].value, address(&inner));
  const hotscope_record& second = written[1 + written[1].payload_records + 1];
  EXPECT_EQ(second.ref, address(&inner));
  EXPECT_EQ(second.value, address(&outer));
}

TEST_F(Interposer, AConditionWaitIsNotContentionAndItsMutexIsNotHeldMeanwhile) {
  locks::start(locks::Mode::Hold);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  bool ready = false;
  std::vector<std::uint32_t> kinds;
  std::thread waiter([&] {
    const OwnRecords records;
    locks::mutex_lock(&mutex, HOTSCOPE_CALLER);
    while (!ready) {
      locks::cond_wait(&cond, &mutex, CLOCK_REALTIME, nullptr, false);
    }
    locks::mutex_unlock(&mutex);
    kinds = records.kinds();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  locks::mutex_lock(&mutex, HOTSCOPE_CALLER);
  ready = true;
  pthread_cond_signal(&cond);
  locks::mutex_unlock(&mutex);
  waiter.join();
  // Each wait gives the mutex back and takes it again; no LOCK_WAIT.
  ASSERT_GE(kinds.size(), 4u);
  EXPECT_EQ(kinds.size() % 2, 0u);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(kinds[i], i % 2 == 0 ? HOTSCOPE_RECORD_LOCK_ACQUIRE : HOTSCOPE_RECORD_LOCK_RELEASE)
        << i;
  }
}

TEST_F(Interposer, TheProfilersOwnThreadsRecordNothing) {
  locks::start(locks::Mode::Hold);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  const Holder holder([&] { locks::mutex_lock(&mutex, nullptr); },
                      [&] { locks::mutex_unlock(&mutex); }, 20);
  std::size_t written = 1;
  std::thread own([&] {
    locks::own_thread();
    const OwnRecords records;
    pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
    locks::mutex_lock(&other, HOTSCOPE_CALLER);
    locks::mutex_lock(&mutex, HOTSCOPE_CALLER); // contended and nested
    locks::mutex_unlock(&mutex);
    locks::mutex_unlock(&other);
    written = records.take().size();
  });
  own.join();
  EXPECT_EQ(written, 0u);
}

TEST_F(Interposer, AThreadHoldingALockWhenItFirstNeedsARingRecordsNothingRatherThanRegister) {
  locks::start(locks::Mode::Contended);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
  const Holder holder([&] { locks::mutex_lock(&mutex, nullptr); },
                      [&] { locks::mutex_unlock(&mutex); }, 30);
  bool had_ring = true;
  std::thread waiter([&] {
    {
      const locks::Quiet quiet; // as the profiler's code would: no ring is registered for it
      locks::mutex_lock(&held, HOTSCOPE_CALLER);
    }
    locks::mutex_lock(&mutex, HOTSCOPE_CALLER); // contended, and nested
    locks::mutex_unlock(&mutex);
    locks::mutex_unlock(&held);
    had_ring = hotscope::detail::tls_ring != nullptr;
  });
  waiter.join();
  EXPECT_FALSE(had_ring);
}

TEST_F(Interposer, APthreadMutexOfTheProgramGoesThroughTheInterposer) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer build leaves the pthread functions to the sanitizer";
#endif
  locks::start(locks::Mode::Contended);
  std::mutex mutex;
  std::vector<std::uint32_t> kinds;
  {
    const Holder holder([&] { mutex.lock(); }, [&] { mutex.unlock(); }, 30);
    const OwnRecords records;
    const std::lock_guard lock(mutex);
    kinds = records.kinds();
  }
  EXPECT_EQ(kinds,
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_LOCK_WAIT, HOTSCOPE_RECORD_LOCK_HOLDER,
                                        HOTSCOPE_RECORD_STACK, HOTSCOPE_RECORD_LOCK_ACQUIRE}));
}

TEST_F(Interposer, AChildForkedWhileALockIsHeldLocksAndExits) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN("a holder thread");
  locks::start(locks::Mode::Hold);
  pthread_mutex_t held_elsewhere = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t held_here = PTHREAD_MUTEX_INITIALIZER;
  const Holder holder([&] { locks::mutex_lock(&held_elsewhere, nullptr); },
                      [&] { locks::mutex_unlock(&held_elsewhere); }, 200);
  locks::mutex_lock(&held_here, HOTSCOPE_CALLER);
  const pid_t child = fork();
  if (child == 0) {
    // The child's only thread: it still holds held_here, and takes more, nested and tried.
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    const bool ok = locks::mutex_lock(&fresh, HOTSCOPE_CALLER) == 0 &&
                    locks::mutex_trylock(&held_elsewhere) == EBUSY &&
                    locks::mutex_unlock(&fresh) == 0 && locks::mutex_unlock(&held_here) == 0;
    _exit(ok ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  locks::mutex_unlock(&held_here);
  int status = 0;
  for (int waited_ms = 0; waitpid(child, &status, WNOHANG) == 0; waited_ms += 10) {
    ASSERT_LT(waited_ms, 10'000) << "the child hangs";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
