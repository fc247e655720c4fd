// The batch validator fed with hostile batches built by hand: each must be rejected whole with
// a diagnostic naming the record, leave the guest's state as it was, and let the host go on.
#include "guest_image.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace hotscope::guest;
using guest_test::append_text;
using guest_test::GuestImage;
using guest_test::rec;

constexpr std::uint64_t kCapacity = 4096;

// Guest ticks run at 2 GHz, the host's at 1 GHz; guest tick 1000 is host tick 5000.
constexpr ClockAnchor kClock{1000, 5000, 2e9, 1e9};

const hotscope_source_location& location_at(std::uint64_t ref) {
  return *reinterpret_cast<const hotscope_source_location*>(ref);
}

// A guest with its trace buffer: every flush rewrites the buffer, as a guest does.
struct Fixture {
  GuestImage image{1 << 18};
  NameStore names{NameStore::Limits{}};
  BatchValidator validator{"guest: test", image.memory(), kClock, {}, names};
  std::uint64_t buffer = image.put_records(std::vector<hotscope_record>(kCapacity));
  std::uint64_t outer = image.put_location("outer", "guest.c", 10);
  std::uint64_t inner = image.put_location("inner", "guest.c", 20);

  BatchValidator::Result flush(const std::vector<hotscope_record>& records) {
    std::memcpy(image.at(buffer), records.data(), records.size() * sizeof(hotscope_record));
    return validator.validate(buffer, records.size(), kCapacity);
  }
  // The rejection's diagnostic; fails the test when the batch was accepted.
  Diagnostic rejected(const std::vector<hotscope_record>& records) {
    BatchValidator::Result result = flush(records);
    EXPECT_TRUE(result.rejected.has_value());
    return result.rejected.value_or(Diagnostic{});
  }
};

std::vector<std::uint32_t> kinds(std::span<const hotscope_record> records) {
  std::vector<std::uint32_t> out;
  for (const auto& record : records) {
    out.push_back(record.kind);
  }
  return out;
}

TEST(GuestValidator, NestedScopesAreConvertedToHostForm) {
  Fixture f;
  const auto result =
      f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer), rec(HOTSCOPE_RECORD_BEGIN, 1200, f.inner),
               rec(HOTSCOPE_RECORD_END, 1400, f.inner), rec(HOTSCOPE_RECORD_END, 3000, f.outer)});
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  ASSERT_EQ(result.records.size(), 4u);
  EXPECT_EQ(result.records[0].ticks, 5000u);
  EXPECT_EQ(result.records[1].ticks, 5100u);
  EXPECT_EQ(result.records[2].ticks, 5200u);
  EXPECT_EQ(result.records[3].ticks, 6000u);
  // Refs now point at host copies, not into guest memory.
  const hotscope_source_location& outer = location_at(result.records[0].ref);
  EXPECT_STREQ(outer.name, "outer");
  EXPECT_STREQ(outer.file, "guest.c");
  EXPECT_EQ(outer.line, 10u);
  EXPECT_STREQ(location_at(result.records[1].ref).name, "inner");
  EXPECT_EQ(result.records[3].ref, result.records[0].ref);
  EXPECT_EQ(f.validator.counts().batches_accepted, 1u);
  EXPECT_EQ(f.validator.counts().records_accepted, 4u);
  EXPECT_EQ(f.validator.counts().nesting_repairs, 0u);
}

TEST(GuestValidator, EqualContentIsInternedOnce) {
  Fixture f;
  const std::uint64_t copy = f.image.put_location("outer", "guest.c", 10);
  const auto result =
      f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer), rec(HOTSCOPE_RECORD_END, 1100, copy)});
  ASSERT_FALSE(result.rejected);
  EXPECT_EQ(result.records[0].ref, result.records[1].ref);
  EXPECT_EQ(f.names.size(), 1u);
  EXPECT_EQ(f.validator.counts().nesting_repairs, 0u);
}

TEST(GuestValidator, RandomBytesAreRejectedAndTheHostGoesOn) {
  Fixture f;
  std::mt19937_64 random(42);
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<hotscope_record> records(1 + random() % 64);
    for (auto& record : records) {
      record = {random(), random(), random(), static_cast<std::uint32_t>(random()),
                static_cast<std::uint32_t>(random())};
    }
    const Diagnostic diagnostic = f.rejected(records);
    EXPECT_FALSE(diagnostic.message.empty());
  }
  EXPECT_EQ(f.validator.counts().batches_rejected, 200u);
  EXPECT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer)}).rejected);
}

TEST(GuestValidator, CountAndCapacityAreChecked) {
  Fixture f;
  const std::uint64_t buffer = f.image.put_records({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer)});
  auto result = f.validator.validate(buffer, 5, 4);
  ASSERT_TRUE(result.rejected);
  EXPECT_FALSE(result.rejected->record);
  EXPECT_EQ(result.rejected->to_string(), "guest batch rejected: 5 records flushed from a buffer "
                                          "of 4; a guest flushes at most a full buffer");
  EXPECT_TRUE(f.validator.validate(buffer, 0, 0).rejected);
  EXPECT_TRUE(f.validator.validate(buffer, 1, BatchValidator::kMaxCapacity + 1).rejected);
  EXPECT_EQ(f.validator.counts().batches_rejected, 3u);
  EXPECT_EQ(f.validator.counts().records_rejected, 0u); // no count was believable
  // An empty flush (the guest exits with nothing recorded) is fine.
  EXPECT_FALSE(f.validator.validate(buffer, 0, 4).rejected);
}

TEST(GuestValidator, BufferMustLieInsideGuestMemory) {
  Fixture f;
  const std::uint64_t end = f.image.end();
  const auto whole = [&](std::uint64_t address, std::uint64_t count) {
    const auto result = f.validator.validate(address, count, kCapacity);
    EXPECT_TRUE(result.rejected && !result.rejected->record) << address;
    return result.rejected ? result.rejected->message : "";
  };
  EXPECT_NE(whole(0, 1).find("is not inside guest memory"), std::string::npos);
  EXPECT_NE(whole(end, 1).find("is not inside guest memory"), std::string::npos);
  EXPECT_NE(whole(end - 16, 1).find("is not inside guest memory"), std::string::npos); // straddles
  EXPECT_NE(whole(end - 32 * 3, 4).find("is not inside guest memory"), std::string::npos);
  EXPECT_NE(whole(UINT64_MAX - 40, 2).find("wraps around"), std::string::npos);
  EXPECT_EQ(f.validator.counts().records_rejected, 9u);
}

TEST(GuestValidator, UnknownKindsAreRejectedAtTheirRecord) {
  Fixture f;
  for (std::uint32_t kind : {0u, 12u, 20u, 0xffffffffu}) {
    const Diagnostic d = f.rejected({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer), rec(kind, 1001)});
    EXPECT_EQ(d.record, 1u);
    EXPECT_NE(d.to_string().find("at record 1: unknown record kind " + std::to_string(kind)),
              std::string::npos)
        << d.to_string();
  }
}

TEST(GuestValidator, InlineTextIsBoundedAndPrintable) {
  Fixture f;
  std::vector<hotscope_record> too_long;
  append_text(too_long, HOTSCOPE_RECORD_MESSAGE_INLINE, 1000,
              std::string(HOTSCOPE_INLINE_TEXT_MAX + 1, 'x'));
  EXPECT_NE(f.rejected(too_long).message.find("longer than HOTSCOPE_INLINE_TEXT_MAX"),
            std::string::npos);

  std::vector<hotscope_record> lying{rec(HOTSCOPE_RECORD_MESSAGE_INLINE, 1000, 0, 40, 1),
                                     hotscope_record{}};
  EXPECT_NE(f.rejected(lying).message.find("says 1 payload records where its value 40 needs 2"),
            std::string::npos);

  std::vector<hotscope_record> cut;
  append_text(cut, HOTSCOPE_RECORD_MESSAGE_INLINE, 1000, std::string(40, 'x'));
  cut.pop_back(); // the batch ends inside the payload
  EXPECT_NE(f.rejected(cut).message.find("run past the end of the batch"), std::string::npos);

  for (const std::string& text :
       {std::string("bell\a"), std::string("esc\x1b[2J"), std::string("bad \xc3\x28"),
        std::string("\xed\xa0\x80"), std::string("over\xc0\xaf")}) {
    std::vector<hotscope_record> records;
    append_text(records, HOTSCOPE_RECORD_MESSAGE_INLINE, 1000, text);
    EXPECT_NE(f.rejected(records).message.find("guest text must be printable UTF-8"),
              std::string::npos)
        << text;
  }
  // UTF-8 itself is fine, and the text ends at a NUL.
  std::vector<hotscope_record> fine;
  append_text(fine, HOTSCOPE_RECORD_MESSAGE_INLINE, 1000,
              std::string("took 3 \xc2\xb5s\0junk", 15));
  const auto result = f.flush(fine);
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  ASSERT_EQ(result.records.size(), 2u);
  EXPECT_EQ(result.records[0].value, 10u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&result.records[1]), 10), "took 3 µs");
}

TEST(GuestValidator, StaticTextsAndLocationsAreReadWithBounds) {
  Fixture f;
  const auto message = [&](std::uint64_t ref) {
    return f.rejected({rec(HOTSCOPE_RECORD_MESSAGE_STATIC, 1000, ref)}).message;
  };
  const auto scope = [&](std::uint64_t ref) {
    return f.rejected({rec(HOTSCOPE_RECORD_BEGIN, 1000, ref)}).message;
  };
  EXPECT_NE(message(0).find("no message text (ref 0)"), std::string::npos);
  EXPECT_NE(message(0x10).find("runs out of guest memory"), std::string::npos);
  EXPECT_NE(message(f.image.put_text(std::string(300, 'a'))).find("not NUL-terminated within 256"),
            std::string::npos);
  EXPECT_NE(message(f.image.put_text("ring\a")).find("control byte 0x07 at offset 4"),
            std::string::npos);
  EXPECT_NE(scope(0).find("no source location (ref 0)"), std::string::npos);
  EXPECT_NE(scope(f.image.end() - 8).find("is not inside guest memory"), std::string::npos);
  EXPECT_NE(scope(f.image.put_location("flagged", "guest.c", 1, 0x80)).find("unknown flags 0x80"),
            std::string::npos);
  const std::uint64_t bad_name[3] = {f.image.end() + 64, 0, 0};
  EXPECT_NE(scope(f.image.put(bad_name, sizeof(bad_name))).find("location name at"),
            std::string::npos);
  EXPECT_EQ(f.names.size(), 0u); // nothing of a rejected batch was kept
}

TEST(GuestValidator, TextsEndingAtTheEndOfGuestMemoryAreFound) {
  // 1000 bytes: not a multiple of the 32-byte pieces texts are read in.
  GuestImage image(1000);
  NameStore names{NameStore::Limits{}};
  BatchValidator validator("guest: test", image.memory(), kClock, {}, names);
  const std::uint64_t buffer = image.put_records({rec(HOTSCOPE_RECORD_MESSAGE_STATIC, 1000, 0)});
  std::memcpy(image.at(image.end() - 5), "last", 5);
  reinterpret_cast<hotscope_record*>(image.at(buffer))->ref = image.end() - 5;
  const auto result = validator.validate(buffer, 1, 1);
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  EXPECT_STREQ(reinterpret_cast<const char*>(result.records[0].ref), "last");

  image.at(image.end() - 1)[0] = 'x'; // now it runs into the end of memory
  const auto cut = validator.validate(buffer, 1, 1);
  ASSERT_TRUE(cut.rejected);
  EXPECT_NE(cut.rejected->message.find("runs out of guest memory before its NUL"),
            std::string::npos);
}

TEST(GuestValidator, EndsWithoutBeginsAreRepairedNotRejected) {
  Fixture f;
  const std::uint64_t other = f.image.put_location("other");
  auto result = f.flush({rec(HOTSCOPE_RECORD_END, 1000, f.outer),   // nothing open: dropped
                         rec(HOTSCOPE_RECORD_BEGIN, 1100, f.outer), //
                         rec(HOTSCOPE_RECORD_BEGIN, 1200, f.inner), //
                         rec(HOTSCOPE_RECORD_END, 1300, other),     // matches nothing: dropped
                         rec(HOTSCOPE_RECORD_END, 1400, f.outer)}); // closes inner, then outer
  ASSERT_FALSE(result.rejected);
  EXPECT_EQ(kinds(result.records),
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_BEGIN, HOTSCOPE_RECORD_BEGIN,
                                        HOTSCOPE_RECORD_END, HOTSCOPE_RECORD_END}));
  EXPECT_STREQ(location_at(result.records[2].ref).name, "inner");
  EXPECT_EQ(result.records[2].ticks, 5200u);
  EXPECT_STREQ(location_at(result.records[3].ref).name, "outer");
  EXPECT_EQ(f.validator.counts().nesting_repairs, 3u);

  // Nesting carries across batches; scopes still open when the guest stops are closed.
  ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 2000, f.outer)}).rejected);
  ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 2100, f.inner)}).rejected);
  const auto ends = f.validator.close_open_scopes(0);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_STREQ(location_at(ends[0].ref).name, "inner");
  EXPECT_STREQ(location_at(ends[1].ref).name, "outer");
  EXPECT_EQ(ends[0].ticks, 5550u); // the guest's last record: the host's `now` was earlier
  EXPECT_EQ(f.validator.counts().nesting_repairs, 5u);
}

TEST(GuestValidator, NestingDeeperThanTheLimitIsRepaired) {
  Fixture f;
  const std::size_t depth = BatchValidator::kMaxDepth + 44;
  std::vector<hotscope_record> records;
  for (std::size_t i = 0; i < depth; ++i) {
    records.push_back(rec(HOTSCOPE_RECORD_BEGIN, 1000 + i, f.outer));
  }
  for (std::size_t i = 0; i < depth; ++i) {
    records.push_back(rec(HOTSCOPE_RECORD_END, 2000 + i, f.outer));
  }
  const auto result = f.flush(records);
  ASSERT_FALSE(result.rejected);
  EXPECT_EQ(result.records.size(), 2 * BatchValidator::kMaxDepth);
  EXPECT_EQ(f.validator.counts().nesting_repairs, 44u);
  EXPECT_TRUE(f.validator.close_open_scopes(0).empty());
}

TEST(GuestValidator, TimestampsMustNotGoBackwards) {
  Fixture f;
  Diagnostic d = f.rejected(
      {rec(HOTSCOPE_RECORD_BEGIN, 2000, f.outer), rec(HOTSCOPE_RECORD_END, 1999, f.outer)});
  EXPECT_EQ(d.record, 1u);
  EXPECT_NE(d.message.find("timestamp 1999 is earlier than the previous record's 2000"),
            std::string::npos);
  ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 3000, f.outer)}).rejected);
  d = f.rejected({rec(HOTSCOPE_RECORD_END, 2999, f.outer)});
  EXPECT_EQ(d.record, 0u);
  EXPECT_NE(d.message.find("(in the previous batch)"), std::string::npos);
  // Equal timestamps are fine; so are ticks before the anchor that the host clock can hold.
  EXPECT_FALSE(f.flush({rec(HOTSCOPE_RECORD_END, 3000, f.outer)}).rejected);
  Fixture early;
  const auto result = early.flush({rec(HOTSCOPE_RECORD_BEGIN, 0, early.outer)});
  ASSERT_FALSE(result.rejected);
  EXPECT_EQ(result.records[0].ticks, 4500u);
  // Ticks that cannot be placed on the host clock are rejected.
  Fixture far;
  EXPECT_NE(far.rejected({rec(HOTSCOPE_RECORD_BEGIN, UINT64_MAX, far.outer)})
                .message.find("too far from the clock anchor"),
            std::string::npos);
}

TEST(GuestValidator, ARejectedBatchLeavesTheStateUntouched) {
  Fixture f;
  ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer)}).rejected);
  // Opens a scope, moves time far ahead, names something new, then breaks.
  const std::uint64_t fresh = f.image.put_location("fresh");
  const Diagnostic d = f.rejected({rec(HOTSCOPE_RECORD_BEGIN, 9000, f.inner),
                                   rec(HOTSCOPE_RECORD_BEGIN, 9100, fresh), rec(99, 9200)});
  EXPECT_EQ(d.record, 2u);
  EXPECT_EQ(f.names.size(), 1u); // "outer" only: "inner" and "fresh" were not interned
  // Time and nesting are as the first batch left them.
  const auto result = f.flush({rec(HOTSCOPE_RECORD_END, 2000, f.outer)});
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  ASSERT_EQ(result.records.size(), 1u);
  EXPECT_STREQ(location_at(result.records[0].ref).name, "outer");
  EXPECT_EQ(f.validator.counts().nesting_repairs, 0u);
  EXPECT_EQ(f.validator.counts().records_rejected, 3u);
}

TEST(GuestValidator, AFloodOfBatchesKeepsCountsExactAndMemoryBounded) {
  Fixture f;
  std::uint64_t ticks = 1000;
  for (int i = 0; i < 20000; ++i) {
    if (i % 10 == 9) {
      f.rejected({rec(HOTSCOPE_RECORD_BEGIN, ticks, f.outer), rec(42, ticks)});
      continue;
    }
    ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, ticks, f.outer),
                          rec(HOTSCOPE_RECORD_END, ticks + 1, f.outer)})
                     .rejected);
    ticks += 2;
  }
  const GuestCounts& counts = f.validator.counts();
  EXPECT_EQ(counts.batches_accepted, 18000u);
  EXPECT_EQ(counts.batches_rejected, 2000u);
  EXPECT_EQ(counts.records_accepted, 36000u);
  EXPECT_EQ(counts.records_rejected, 4000u);
  EXPECT_EQ(f.names.size(), 1u);
}

TEST(GuestValidator, DistinctNamesAreBoundedPerGuestAndOverall) {
  GuestImage image(1 << 20);
  NameStore names{NameStore::Limits{100, 1 << 20, 10}};
  BatchValidator first("guest: a", image.memory(), kClock, {}, names);
  const auto batch = [&](int from, int to) {
    std::vector<hotscope_record> records;
    for (int i = from; i < to; ++i) {
      records.push_back(
          rec(HOTSCOPE_RECORD_MESSAGE_STATIC, 1000, image.put_text("m" + std::to_string(i))));
    }
    return records;
  };
  const auto flush = [&](BatchValidator& validator, const std::vector<hotscope_record>& records) {
    return validator.validate(image.put_records(records), records.size(), kCapacity);
  };
  EXPECT_FALSE(flush(first, batch(0, 10)).rejected);
  EXPECT_FALSE(flush(first, batch(0, 10)).rejected); // known names cost nothing
  const auto over = flush(first, batch(10, 11));
  ASSERT_TRUE(over.rejected);
  EXPECT_NE(over.rejected->message.find("this guest already has 10"), std::string::npos);
  // Other guests have their own quota, up to the store's limit.
  for (int guest = 0; guest < 9; ++guest) {
    BatchValidator next("guest: b", image.memory(), kClock, {}, names);
    EXPECT_FALSE(flush(next, batch(100 + guest * 10, 110 + guest * 10)).rejected);
  }
  BatchValidator last("guest: c", image.memory(), kClock, {}, names);
  const auto full = flush(last, batch(1000, 1001));
  ASSERT_TRUE(full.rejected);
  EXPECT_NE(full.rejected->message.find("store of guest names is full (100 entries"),
            std::string::npos);
  EXPECT_EQ(names.size(), 100u);
}

TEST(GuestValidator, StacksBecomeOneMessagePerFrame) {
  GuestImage image;
  NameStore names{NameStore::Limits{}};
  const Symbolizer symbolizer = [](std::uint64_t address) -> std::optional<Symbol> {
    if (address >= 0x401000 && address < 0x401100) {
      return Symbol{"guest_fn", address - 0x401000};
    }
    if (address == 0x402000) {
      return Symbol{"evil\x1b[2J", 0}; // from the guest's ELF: not shown as is
    }
    return std::nullopt;
  };
  BatchValidator validator("guest: test", image.memory(), kClock, symbolizer, names);
  std::vector<hotscope_record> records{rec(HOTSCOPE_RECORD_STACK, 1000, 0, 3, 1),
                                       hotscope_record{}};
  const std::uint64_t frames[4] = {0x401012, 0x500000, 0x402000, 0};
  std::memcpy(&records[1], frames, sizeof(frames));
  const auto result =
      validator.validate(image.put_records(records), records.size(), records.size());
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < result.records.size(); i += 1 + result.records[i].payload_records) {
    EXPECT_EQ(result.records[i].kind, HOTSCOPE_RECORD_MESSAGE_INLINE);
    EXPECT_EQ(result.records[i].ticks, 5000u);
    texts.emplace_back(reinterpret_cast<const char*>(&result.records[i + 1]),
                       result.records[i].value);
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"#0 guest_fn+0x12", "#1 0x500000", "#2 0x402000"}));

  for (std::uint64_t count : {0u, HOTSCOPE_STACK_FRAMES_MAX + 1}) {
    std::vector<hotscope_record> bad{rec(HOTSCOPE_RECORD_STACK, 1000, 0, count, 9)};
    bad.resize(10);
    const auto rejected = validator.validate(image.put_records(bad), bad.size(), bad.size());
    ASSERT_TRUE(rejected.rejected);
    EXPECT_NE(rejected.rejected->message.find("outside 1..HOTSCOPE_STACK_FRAMES_MAX"),
              std::string::npos);
  }
}

TEST(GuestValidator, ThreadNamesCountersAndAllocationsPassThrough) {
  Fixture f;
  const std::uint64_t counter = f.image.put_location("queue depth");
  std::vector<hotscope_record> records{rec(HOTSCOPE_RECORD_COUNTER, 1000, counter, -3ull),
                                       rec(HOTSCOPE_RECORD_ALLOCATION, 1000, 0, 4096)};
  append_text(records, HOTSCOPE_RECORD_THREAD_NAME, 1000, "worker");
  const auto result = f.flush(records);
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  ASSERT_EQ(result.records.size(), 4u);
  EXPECT_STREQ(location_at(result.records[0].ref).name, "queue depth");
  EXPECT_EQ(static_cast<std::int64_t>(result.records[0].value), -3);
  EXPECT_EQ(result.records[1].value, 4096u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&result.records[3]), result.records[2].value),
            "guest: test (worker)");
  EXPECT_NE(f.rejected({rec(HOTSCOPE_RECORD_ALLOCATION, 1000, 0, 1ull << 41)})
                .message.find("more than a guest can have"),
            std::string::npos);
  EXPECT_NE(f.rejected({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer, 0, 1), hotscope_record{}})
                .message.find("BEGIN record says 1 payload records where its value 0 needs 0"),
            std::string::npos);
}

TEST(GuestValidator, QueueRecordsPassThroughWithTheirQueuesLocation) {
  Fixture f;
  const std::uint64_t jobs = f.image.put_location("jobs");
  const auto result = f.flush({rec(HOTSCOPE_RECORD_QUEUE_CAPACITY, 1000, jobs, 8),
                               rec(HOTSCOPE_RECORD_QUEUE_PUSH, 1001, jobs, 0xfeedull << 40),
                               rec(HOTSCOPE_RECORD_QUEUE_POP, 1002, jobs, 0xfeedull << 40)});
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  EXPECT_EQ(kinds(result.records),
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_QUEUE_CAPACITY, HOTSCOPE_RECORD_QUEUE_PUSH,
                                        HOTSCOPE_RECORD_QUEUE_POP}));
  for (const hotscope_record& record : result.records) {
    EXPECT_STREQ(location_at(record.ref).name, "jobs");
  }
  EXPECT_EQ(result.records[0].value, 8u);
  EXPECT_EQ(result.records[2].value, 0xfeedull << 40);
  EXPECT_EQ(result.records[2].ticks, 5001u); // host ticks
  // The queue's name is read like a scope's: a bad ref rejects the batch, naming the record.
  const Diagnostic d = f.rejected({rec(HOTSCOPE_RECORD_QUEUE_POP, 2000, 0, 1)});
  EXPECT_NE(d.to_string().find("no source location (ref 0)"), std::string::npos) << d.to_string();
  EXPECT_NE(f.rejected({rec(HOTSCOPE_RECORD_QUEUE_PUSH, 2000, jobs, 1, 1), hotscope_record{}})
                .message.find("QUEUE_PUSH record says 1 payload records where its value 1 needs 0"),
            std::string::npos);
}

TEST(GuestClock, TicksConvertAcrossRatesAndAroundTheAnchor) {
  const ClockAnchor same{100, 1'000'000, 1e9, 1e9};
  EXPECT_EQ(to_host_ticks(same, 100), 1'000'000u);
  EXPECT_EQ(to_host_ticks(same, 150), 1'000'050u);
  EXPECT_EQ(to_host_ticks(same, 0), 999'900u); // before the anchor
  // A 3 GHz TSC onto a 1 GHz host clock, exact over a day of ticks.
  const ClockAnchor tsc{5'000'000'000, 7, 3e9, 1e9};
  EXPECT_EQ(to_host_ticks(tsc, 5'000'000'000 + 3 * 86'400'000'000'000ull), 7 + 86'400'000'000'000u);
  EXPECT_EQ(to_host_ticks(tsc, 5'000'000'000 + 3), 8u);
  EXPECT_EQ(to_host_ticks(tsc, 5'000'000'000 - 21), 0u);
  EXPECT_EQ(to_host_ticks(tsc, 5'000'000'000 - 24), std::nullopt); // before host tick 0
  // The far future does not wrap: it is refused.
  const ClockAnchor slow{0, 0, 1e6, 1e9};
  EXPECT_EQ(to_host_ticks(slow, UINT64_MAX), std::nullopt);
  EXPECT_EQ(to_host_ticks(slow, 9'223'372'036'854'775ull), 9'223'372'036'854'775'000u);
  EXPECT_EQ(to_host_ticks(ClockAnchor{0, static_cast<std::uint64_t>(INT64_MAX), 1e9, 1e9}, 1),
            std::nullopt);
  // Full 64-bit precision: no rounding to a double's 53 bits.
  EXPECT_EQ(to_host_ticks(ClockAnchor{0, 1, 1e9, 1e9}, (1ull << 60) + 1), (1ull << 60) + 2);
}

// A heap record as the guest runtime writes it: the header, then `slots` (a realloc's old
// address, then the stack) 4 per payload record, unused slots 0.
std::vector<hotscope_record> heap_record(std::uint32_t kind, std::uint64_t ticks,
                                         std::uint64_t address, std::uint64_t size,
                                         const std::vector<std::uint64_t>& slots) {
  const auto payload = static_cast<std::uint32_t>((slots.size() + 3) / 4);
  std::vector<hotscope_record> records{rec(kind, ticks, address, size, payload)};
  records.resize(1 + payload, hotscope_record{});
  if (!slots.empty()) {
    std::memcpy(static_cast<void*>(records.data() + 1), slots.data(), slots.size() * 8);
  }
  return records;
}

std::vector<hotscope_record> joined(std::initializer_list<std::vector<hotscope_record>> parts) {
  std::vector<hotscope_record> all;
  for (const auto& part : parts) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

TEST(GuestValidator, HeapRecordsBecomeHeapEventsWithTheirStacks) {
  Fixture f;
  const std::vector<std::uint64_t> stack{0x100a10, 0x100b20, 0x100c30, 0x100d40, 0x100e50};
  const auto result = f.flush(joined({
      {rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer)},
      heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1010, 0x200000, 48, stack),
      heap_record(HOTSCOPE_RECORD_HEAP_REALLOC, 1020, 0x200100, 96, {0x200000, 0x100a11}),
      heap_record(HOTSCOPE_RECORD_HEAP_FREE, 1030, 0x200100, 0, {}),
      heap_record(HOTSCOPE_RECORD_HEAP_REALLOC, 1040, 0, 1 << 20, {0x200200}), // failed
      {rec(HOTSCOPE_RECORD_END, 1050, f.outer)},
  }));
  ASSERT_FALSE(result.rejected) << result.rejected->to_string();
  ASSERT_EQ(result.heap.size(), 4u);
  const GuestHeapEvent& alloc = result.heap[0];
  EXPECT_EQ(alloc.kind, HOTSCOPE_RECORD_HEAP_ALLOC);
  EXPECT_EQ(alloc.ticks, 5005u);
  EXPECT_EQ(alloc.address, 0x200000u);
  EXPECT_EQ(alloc.size, 48u);
  EXPECT_EQ(std::vector<std::uint64_t>(alloc.stack.begin(), alloc.stack.end()), stack);
  const GuestHeapEvent& realloc = result.heap[1];
  EXPECT_EQ(realloc.address, 0x200100u);
  EXPECT_EQ(realloc.old_address, 0x200000u);
  EXPECT_EQ(realloc.size, 96u);
  EXPECT_EQ(std::vector<std::uint64_t>(realloc.stack.begin(), realloc.stack.end()),
            std::vector<std::uint64_t>{0x100a11});
  EXPECT_EQ(result.heap[2].kind, HOTSCOPE_RECORD_HEAP_FREE);
  EXPECT_TRUE(result.heap[2].stack.empty());
  EXPECT_EQ(result.heap[3].address, 0u);
  EXPECT_EQ(result.heap[3].old_address, 0x200200u);
  // The trace gets an ALLOCATION for each block handed out, inside the scope it happened in.
  EXPECT_EQ(kinds(result.records),
            (std::vector<std::uint32_t>{HOTSCOPE_RECORD_BEGIN, HOTSCOPE_RECORD_ALLOCATION,
                                        HOTSCOPE_RECORD_ALLOCATION, HOTSCOPE_RECORD_END}));
  EXPECT_EQ(result.records[1].value, 48u);
  EXPECT_EQ(result.records[2].value, 96u);
  EXPECT_EQ(f.validator.counts().records_accepted, 10u);
  // The next batch has its own events.
  const auto next = f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1060, f.outer)});
  ASSERT_FALSE(next.rejected);
  EXPECT_TRUE(next.heap.empty());
}

TEST(GuestValidator, MalformedHeapRecordsRejectTheBatch) {
  struct Case {
    std::vector<hotscope_record> records;
    std::string expected;
  };
  const std::vector<std::uint64_t> too_deep(HOTSCOPE_STACK_FRAMES_MAX + 1, 0x100a10);
  const Case cases[] = {
      {heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1000, 0x200000, 1ull << 41, {}),
       "HEAP_ALLOC of 2199023255552 bytes is more than a guest can have"},
      {heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1000, 0, 16, {}), "HEAP_ALLOC of block address 0"},
      {heap_record(HOTSCOPE_RECORD_HEAP_FREE, 1000, 0, 0, {}), "HEAP_FREE of block address 0"},
      {heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1000, UINT64_MAX - 8, 16, {}),
       "wraps around the address space"},
      {heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1000, 0x200000, 16, too_deep),
       "HEAP_ALLOC record says 9 payload records where it carries 0 to 8"},
      {heap_record(HOTSCOPE_RECORD_HEAP_REALLOC, 1000, 0x200000, 16, {}),
       "HEAP_REALLOC record says 0 payload records where it carries 1 to 9"},
      {heap_record(HOTSCOPE_RECORD_HEAP_FREE, 1000, 0x200000, 0, {0x100a10, 0, 0x100b20}),
       "HEAP_FREE stack has a return address after an empty slot"},
  };
  for (const Case& c : cases) {
    Fixture f;
    std::vector<hotscope_record> records{rec(HOTSCOPE_RECORD_BEGIN, 900, f.outer)};
    records.insert(records.end(), c.records.begin(), c.records.end());
    const Diagnostic diagnostic = f.rejected(records);
    EXPECT_EQ(diagnostic.record, std::optional<std::uint64_t>(1));
    EXPECT_NE(diagnostic.message.find(c.expected), std::string::npos) << diagnostic.message;
    EXPECT_EQ(f.validator.counts().records_rejected, records.size());
  }
  // A payload that runs past the batch is caught before its slots are read.
  Fixture f;
  auto cut = heap_record(HOTSCOPE_RECORD_HEAP_ALLOC, 1000, 0x200000, 16, {1, 2, 3, 4, 5});
  cut.pop_back();
  EXPECT_NE(f.rejected(cut).message.find("run past the end of the batch"), std::string::npos);
}

TEST(GuestValidator, HostSpansNestInsideTheOpenScopeAndKeepTheTrackInOrder) {
  Fixture f;
  static const hotscope_source_location host_call{"host_call print", "", 0, 0};
  const auto ref = reinterpret_cast<std::uint64_t>(&host_call);
  ASSERT_FALSE(f.flush({rec(HOTSCOPE_RECORD_BEGIN, 1000, f.outer)}).rejected); // host tick 5000
  // A span that claims to begin before the guest's last record is moved to it.
  std::span<const hotscope_record> span = f.validator.host_span(ref, 4000, 7000);
  ASSERT_EQ(kinds(span), (std::vector<std::uint32_t>{HOTSCOPE_RECORD_BEGIN, HOTSCOPE_RECORD_END}));
  EXPECT_EQ(span[0].ticks, 5000u);
  EXPECT_EQ(span[1].ticks, 7000u);
  EXPECT_EQ(span[0].ref, ref);
  // Guest records that convert to before the span's end are placed at its end.
  const auto result = f.flush({rec(HOTSCOPE_RECORD_END, 4000, f.outer)}); // host tick 6500
  ASSERT_FALSE(result.rejected);
  ASSERT_EQ(result.records.size(), 1u);
  EXPECT_EQ(result.records[0].ticks, 7000u);
  EXPECT_EQ(f.validator.counts().nesting_repairs, 0u);
}

TEST(GuestClock, UnusableRatesAreRefused) {
  GuestImage image;
  for (double rate : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(BatchValidator("g", image.memory(), ClockAnchor{0, 0, rate, 1e9}),
                 std::invalid_argument);
    EXPECT_THROW(BatchValidator("g", image.memory(), ClockAnchor{0, 0, 1e9, rate}),
                 std::invalid_argument);
  }
}

TEST(GuestMemory, FlatMemoryChecksEveryByte) {
  const unsigned char bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const FlatMemory memory(bytes, 0x1000, sizeof(bytes));
  unsigned char out[16] = {};
  EXPECT_TRUE(memory.read(0x1000, out, 16));
  EXPECT_EQ(out[15], 16);
  EXPECT_TRUE(memory.read(0x100f, out, 1));
  EXPECT_EQ(out[0], 16);
  EXPECT_TRUE(memory.read(0x1010, out, 0));
  EXPECT_FALSE(memory.read(0x0fff, out, 1));
  EXPECT_FALSE(memory.read(0x1001, out, 16));
  EXPECT_FALSE(memory.read(0x1011, out, 0));
  EXPECT_FALSE(memory.read(UINT64_MAX, out, 2));
  EXPECT_FALSE(memory.read(0x1008, out, SIZE_MAX));
}

} // namespace
