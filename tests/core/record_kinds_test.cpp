// The record kinds table (trace/record_kinds.hpp) against record.h and the documented rules.
#include "trace/record_kinds.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace hotscope::trace {
namespace {

// The kinds record.h's enum defines, by value, read from its text: a kind added there without
// a row (and without raising HOTSCOPE_RECORD_KIND_LAST) shows here.
std::map<std::uint32_t, std::string> kinds_in_record_h() {
  std::ifstream file(HOTSCOPE_RECORD_H_PATH);
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  const std::regex enumerator(R"(HOTSCOPE_RECORD_([A-Z_]+)\s*=\s*([0-9]+))");
  std::map<std::uint32_t, std::string> kinds;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), enumerator);
       it != std::sregex_iterator(); ++it) {
    kinds.emplace(static_cast<std::uint32_t>(std::stoul((*it)[2])), (*it)[1]);
  }
  return kinds;
}

std::set<std::uint32_t> kinds_where(bool (*keep)(const RecordKind&)) {
  std::set<std::uint32_t> kinds;
  for (const RecordKind& row : kRecordKinds) {
    if (keep(row)) {
      kinds.insert(row.kind);
    }
  }
  return kinds;
}

TEST(RecordKinds, OneRowPerKindOfRecordH) {
  const std::map<std::uint32_t, std::string> declared = kinds_in_record_h();
  ASSERT_EQ(declared.size(), std::size(kRecordKinds));
  EXPECT_EQ(declared.rbegin()->first, HOTSCOPE_RECORD_KIND_LAST);
  std::set<std::string> names;
  for (const auto& [value, name] : declared) {
    const RecordKind* row = record_kind(value);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(static_cast<std::uint32_t>(row->kind), value);
    EXPECT_EQ(row->name, name);
    EXPECT_TRUE(names.insert(row->name).second) << name;
  }
  for (std::uint32_t unknown : {0u, HOTSCOPE_RECORD_KIND_LAST + 1, 0xffffffffu}) {
    EXPECT_EQ(record_kind(unknown), nullptr) << unknown;
  }
}

TEST(RecordKinds, GuestsSendAllButTaskAndLockKinds) { // docs/guest.md, "Validation"
  const std::set<std::uint32_t> expected{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 17, 18, 19};
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.from_guest; }), expected);
}

TEST(RecordKinds, SlicesOpenAndCloseAsTheirEvents) {
  const std::set<std::uint32_t> opens{HOTSCOPE_RECORD_BEGIN, HOTSCOPE_RECORD_TASK_RESUME,
                                      HOTSCOPE_RECORD_FUNCTION_BEGIN};
  const std::set<std::uint32_t> closes{HOTSCOPE_RECORD_END, HOTSCOPE_RECORD_TASK_SUSPEND,
                                       HOTSCOPE_RECORD_TASK_COMPLETE, HOTSCOPE_RECORD_FUNCTION_END};
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.slice == SliceEffect::Opens; }),
            opens);
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.slice == SliceEffect::Closes; }),
            closes);
  // The aggregator makes an event of these, reading its kind from the row.
  const std::set<std::uint32_t> events{
      HOTSCOPE_RECORD_BEGIN,          HOTSCOPE_RECORD_END,
      HOTSCOPE_RECORD_MESSAGE_STATIC, HOTSCOPE_RECORD_MESSAGE_INLINE,
      HOTSCOPE_RECORD_COUNTER,        HOTSCOPE_RECORD_QUEUE_PUSH,
      HOTSCOPE_RECORD_QUEUE_POP,      HOTSCOPE_RECORD_TASK_RESUME,
      HOTSCOPE_RECORD_TASK_SUSPEND,   HOTSCOPE_RECORD_TASK_COMPLETE,
      HOTSCOPE_RECORD_FUNCTION_BEGIN, HOTSCOPE_RECORD_FUNCTION_END};
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.event.has_value(); }), events);
  EXPECT_EQ(record_kind(HOTSCOPE_RECORD_BEGIN)->event, EventKind::Begin);
  EXPECT_EQ(record_kind(HOTSCOPE_RECORD_TASK_SUSPEND)->event, EventKind::TaskSuspend);
  EXPECT_FALSE(record_kind(HOTSCOPE_RECORD_THREAD_NAME)->event.has_value());
}

TEST(RecordKinds, PayloadsAndRefsAsRecordHSays) {
  const std::set<std::uint32_t> text{HOTSCOPE_RECORD_MESSAGE_INLINE, HOTSCOPE_RECORD_THREAD_NAME};
  const std::set<std::uint32_t> heap{HOTSCOPE_RECORD_HEAP_ALLOC, HOTSCOPE_RECORD_HEAP_FREE,
                                     HOTSCOPE_RECORD_HEAP_REALLOC};
  EXPECT_EQ(
      kinds_where([](const RecordKind& row) { return row.payload == RecordPayload::InlineText; }),
      text);
  EXPECT_EQ(
      kinds_where([](const RecordKind& row) { return row.payload == RecordPayload::StackFrames; }),
      std::set<std::uint32_t>{HOTSCOPE_RECORD_STACK});
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.ref == RecordRef::Block; }), heap);
  EXPECT_EQ(record_kind(HOTSCOPE_RECORD_HEAP_REALLOC)->payload,
            RecordPayload::HeapOldBlockAndStack);
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.ref == RecordRef::StaticText; }),
            std::set<std::uint32_t>{HOTSCOPE_RECORD_MESSAGE_STATIC});
  EXPECT_EQ(kinds_where([](const RecordKind& row) { return row.ref == RecordRef::LockName; }),
            (std::set<std::uint32_t>{HOTSCOPE_RECORD_LOCK_WAIT, HOTSCOPE_RECORD_LOCK_ACQUIRE,
                                     HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED,
                                     HOTSCOPE_RECORD_LOCK_RELEASE, HOTSCOPE_RECORD_LOCK_TRY_FAIL}));
  EXPECT_EQ(
      kinds_where([](const RecordKind& row) { return row.ref == RecordRef::Function; }),
      (std::set<std::uint32_t>{HOTSCOPE_RECORD_FUNCTION_BEGIN, HOTSCOPE_RECORD_FUNCTION_END}));
}

} // namespace
} // namespace hotscope::trace
