// The pprof writer's bytes decoded by the protobuf library itself, from profile.proto compiled
// with protoc (in the tests only: libhotscope has its own writer, docs/formats-output.md "pprof
// wire format"): every field it writes reads back as written.
#include "export/export.hpp"
#include "export/protobuf_writer.hpp"
#include "export/snapshot_fixture.hpp"

#include "profile.pb.h"

#include <gtest/gtest.h>
#include <libdeflate.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace pb = perftools::profiles;
using hotscope::CpuScope;
using hotscope::CpuStack;
namespace pprof = hotscope::exporters::pprof;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMinI64 = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

pb::Profile parsed(std::span<const std::uint8_t> bytes) {
  pb::Profile profile;
  EXPECT_TRUE(profile.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return profile;
}

// A gzip stream's content; its size is in the stream's last four bytes (small profiles only).
std::vector<std::uint8_t> gunzipped(const std::string& gzip) {
  EXPECT_GE(gzip.size(), 18u);
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) {
    size |= static_cast<std::uint32_t>(static_cast<unsigned char>(gzip[gzip.size() - 4 + i]))
            << (8 * i);
  }
  std::vector<std::uint8_t> out(size);
  const std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)>
      decompressor(libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  EXPECT_EQ(libdeflate_gzip_decompress(decompressor.get(), gzip.data(), gzip.size(), out.data(),
                                       out.size(), nullptr),
            LIBDEFLATE_SUCCESS);
  return out;
}

TEST(PprofWire, EveryFieldRoundTrips) {
  pprof::ProfileWriter writer;
  writer.sample_type({1, kMaxI64});
  writer.sample_type({kMinI64, -1});
  const std::vector<std::uint64_t> locations = {kMaxU64, 1, 127, 128, 16384};
  const std::vector<std::int64_t> values = {kMinI64, -1, 0, kMaxI64};
  const std::vector<pprof::Label> labels = {{1, 2, 3}, {4, 0, -5}, {0, 0, 0}};
  writer.sample(locations, values, labels);
  writer.mapping({kMaxU64, 0x400000, kMaxU64 - 1, 1ull << 35, 7, 6, true, false, true, true});
  // Enough lines that the Location is over 128 bytes: its length takes two bytes.
  std::vector<pprof::Line> lines;
  for (std::uint64_t i = 0; i < 40; ++i) {
    lines.push_back({i + 1, i % 2 == 0 ? static_cast<std::int64_t>(i) : -static_cast<int>(i)});
  }
  writer.location({kMaxU64, 3, 0x7fffffffffff}, lines);
  writer.function({kMaxU64, kMaxI64, -2, 5, kMinI64});
  const std::string long_string(20000, 'x');
  const std::vector<std::string> strings = {
      "", "a", std::string("nul\0inside", 10), "", std::string(200, 'y'), long_string};
  for (const std::string& text : strings) {
    writer.string(text);
  }
  pprof::ProfileScalars& scalars = writer.scalars();
  scalars.drop_frames = 4;
  scalars.time_nanos = kMaxI64;
  scalars.duration_nanos = -1;
  scalars.period_type = {5, 1};
  scalars.period = 1ll << 40;
  scalars.default_sample_type = 3;
  writer.end_part();

  const pb::Profile profile = parsed(writer.bytes());
  ASSERT_EQ(profile.sample_type_size(), 2);
  EXPECT_EQ(profile.sample_type(0).type(), 1);
  EXPECT_EQ(profile.sample_type(0).unit(), kMaxI64);
  EXPECT_EQ(profile.sample_type(1).type(), kMinI64);
  EXPECT_EQ(profile.sample_type(1).unit(), -1);
  ASSERT_EQ(profile.sample_size(), 1);
  const pb::Sample& sample = profile.sample(0);
  EXPECT_EQ(std::vector<std::uint64_t>(sample.location_id().begin(), sample.location_id().end()),
            locations);
  EXPECT_EQ(std::vector<std::int64_t>(sample.value().begin(), sample.value().end()), values);
  ASSERT_EQ(sample.label_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sample.label(i).key(), labels[i].key);
    EXPECT_EQ(sample.label(i).str(), labels[i].str);
    EXPECT_EQ(sample.label(i).num(), labels[i].num);
    EXPECT_EQ(sample.label(i).num_unit(), 0);
  }
  ASSERT_EQ(profile.mapping_size(), 1);
  const pb::Mapping& mapping = profile.mapping(0);
  EXPECT_EQ(mapping.id(), kMaxU64);
  EXPECT_EQ(mapping.memory_start(), 0x400000u);
  EXPECT_EQ(mapping.memory_limit(), kMaxU64 - 1);
  EXPECT_EQ(mapping.file_offset(), 1ull << 35);
  EXPECT_EQ(mapping.filename(), 7);
  EXPECT_EQ(mapping.build_id(), 6);
  EXPECT_TRUE(mapping.has_functions());
  EXPECT_FALSE(mapping.has_filenames());
  EXPECT_TRUE(mapping.has_line_numbers());
  EXPECT_TRUE(mapping.has_inline_frames());
  ASSERT_EQ(profile.location_size(), 1);
  const pb::Location& location = profile.location(0);
  EXPECT_EQ(location.id(), kMaxU64);
  EXPECT_EQ(location.mapping_id(), 3u);
  EXPECT_EQ(location.address(), 0x7fffffffffffu);
  ASSERT_EQ(location.line_size(), 40);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(location.line(i).function_id(), lines[i].function_id);
    EXPECT_EQ(location.line(i).line(), lines[i].line);
  }
  ASSERT_EQ(profile.function_size(), 1);
  EXPECT_EQ(profile.function(0).id(), kMaxU64);
  EXPECT_EQ(profile.function(0).name(), kMaxI64);
  EXPECT_EQ(profile.function(0).system_name(), -2);
  EXPECT_EQ(profile.function(0).filename(), 5);
  EXPECT_EQ(profile.function(0).start_line(), kMinI64);
  EXPECT_EQ(std::vector<std::string>(profile.string_table().begin(), profile.string_table().end()),
            strings);
  EXPECT_EQ(profile.drop_frames(), 4);
  EXPECT_EQ(profile.time_nanos(), kMaxI64);
  EXPECT_EQ(profile.duration_nanos(), -1);
  ASSERT_TRUE(profile.has_period_type());
  EXPECT_EQ(profile.period_type().type(), 5);
  EXPECT_EQ(profile.period_type().unit(), 1);
  EXPECT_EQ(profile.period(), 1ll << 40);
  EXPECT_EQ(profile.default_sample_type(), 3);
  // Nothing the writer does not know: the bytes hold only the fields above.
  EXPECT_EQ(profile.ByteSizeLong(), writer.bytes().size());
}

// Many samples in several parts read as one profile, in order; the scalar fields of the first
// part stay, later parts leave them 0.
TEST(PprofWire, PartsReadAsOneProfile) {
  pprof::ProfileWriter writer;
  writer.string("");
  writer.scalars().period = 7;
  constexpr std::uint64_t kSamples = 50000;
  for (std::uint64_t i = 0; i < kSamples; ++i) {
    if (i % 8192 == 0 && i > 0) {
      writer.end_part();
      writer.string("part " + std::to_string(i / 8192));
    }
    const std::vector<std::uint64_t> ids(i % 50, i); // empty, short and over 128 bytes
    const std::int64_t value = static_cast<std::int64_t>(i * i);
    writer.sample(ids, std::span(&value, 1), {});
  }
  writer.end_part();
  const pb::Profile profile = parsed(writer.bytes());
  ASSERT_EQ(profile.sample_size(), static_cast<int>(kSamples));
  for (std::uint64_t i = 0; i < kSamples; ++i) {
    const pb::Sample& sample = profile.sample(static_cast<int>(i));
    ASSERT_EQ(sample.location_id_size(), static_cast<int>(i % 50)) << i;
    for (const std::uint64_t id : sample.location_id()) {
      ASSERT_EQ(id, i);
    }
    ASSERT_EQ(sample.value_size(), 1);
    ASSERT_EQ(sample.value(0), static_cast<std::int64_t>(i * i));
  }
  ASSERT_EQ(profile.string_table_size(), 7);
  EXPECT_EQ(profile.string_table(0), "");
  EXPECT_EQ(profile.string_table(6), "part 6");
  EXPECT_EQ(profile.period(), 7);
}

// The heap profile as pprof.cpp fills the messages: Go's heap convention, one Location per
// address with its inlined frames as Lines, a Mapping per object.
TEST(PprofWire, HeapProfileDecodes) {
  hotscope::HeapProfile heap;
  heap.end_us = 2000;
  heap.frames = {"[root]", "0x401000: inner", "0x401000: outer", "0x7f0000000010"};
  heap.frame_details = {{},
                        {0x401000, "inner", "a.h", 7, 1, true},
                        {0x401000, "outer", "a.c", 20, 1, false},
                        {0x7f0000000010, "", "", 0, 2, false}};
  heap.mappings = {{0x400000, 0x500000, 0, "/bin/prog"},
                   {0x7f0000000000, 0x7f0000100000, 0x2000, "/lib/libc.so.6"}};
  heap.sites.push_back({4096, 4, 0, 0, 0, 0, 0, 1024, 1, {1, 2, 3}});
  heap.sites.push_back({0, 0, 0, 0, 0, 0, 0, 0, 0, {3}});
  std::ostringstream out;
  hotscope::exporters::write_pprof_heap(heap, 512, out);
  const std::vector<std::uint8_t> bytes = gunzipped(out.str());
  const pb::Profile profile = parsed(bytes);
  const auto text = [&](std::int64_t index) { return profile.string_table(index); };
  ASSERT_GE(profile.string_table_size(), 1);
  EXPECT_EQ(text(0), "");
  ASSERT_EQ(profile.sample_type_size(), 4);
  EXPECT_EQ(text(profile.sample_type(3).type()), "inuse_space");
  EXPECT_EQ(text(profile.sample_type(3).unit()), "bytes");
  EXPECT_EQ(text(profile.default_sample_type()), "inuse_space");
  EXPECT_EQ(text(profile.period_type().type()), "space");
  EXPECT_EQ(profile.period(), 512);
  EXPECT_EQ(profile.duration_nanos(), 2'000'000);
  EXPECT_NE(text(profile.drop_frames()).find("operator new"), std::string::npos);
  ASSERT_EQ(profile.mapping_size(), 2);
  EXPECT_EQ(text(profile.mapping(1).filename()), "/lib/libc.so.6");
  EXPECT_EQ(profile.mapping(1).file_offset(), 0x2000u);
  ASSERT_EQ(profile.sample_size(), 2);
  EXPECT_EQ(
      std::vector<std::int64_t>(profile.sample(0).value().begin(), profile.sample(0).value().end()),
      (std::vector<std::int64_t>{4, 4096, 1, 1024}));
  ASSERT_EQ(profile.sample(0).label_size(), 1);
  EXPECT_EQ(text(profile.sample(0).label(0).key()), "bytes");
  EXPECT_EQ(profile.sample(0).label(0).num(), 1024);
  EXPECT_EQ(profile.sample(1).label_size(), 0); // no block: no average size
  // inner is inlined into outer at one address: one Location with two Lines.
  ASSERT_EQ(profile.sample(0).location_id_size(), 2);
  ASSERT_EQ(profile.location_size(), 2);
  const pb::Location& inlined = profile.location(0);
  EXPECT_EQ(inlined.address(), 0x401000u);
  EXPECT_EQ(inlined.mapping_id(), 1u);
  ASSERT_EQ(inlined.line_size(), 2);
  EXPECT_EQ(inlined.line(0).line(), 7);
  EXPECT_EQ(inlined.line(1).line(), 20);
  EXPECT_EQ(profile.location(1).line_size(), 0); // unknown code: its address only
  EXPECT_EQ(profile.location(1).mapping_id(), 2u);
  EXPECT_EQ(profile.sample(1).location_id(0), profile.location(1).id());
  ASSERT_EQ(profile.function_size(), 2);
  EXPECT_EQ(text(profile.function(0).name()), "inner");
  EXPECT_EQ(text(profile.function(0).system_name()), "inner");
  EXPECT_EQ(text(profile.function(0).filename()), "a.h");
}

TEST(PprofWire, WallProfileDecodes) {
  const hotscope::Snapshot snapshot = hotscope::testing::known_snapshot();
  std::ostringstream out;
  hotscope::exporters::write_pprof_wall(snapshot, out);
  const pb::Profile profile = parsed(gunzipped(out.str()));
  const auto text = [&](std::int64_t index) { return profile.string_table(index); };
  ASSERT_EQ(profile.sample_type_size(), 1);
  EXPECT_EQ(text(profile.sample_type(0).type()), "wall");
  EXPECT_EQ(text(profile.sample_type(0).unit()), "nanoseconds");
  EXPECT_EQ(profile.time_nanos(),
            static_cast<std::int64_t>(snapshot.start_unix_ns + snapshot.trace_start_ns));
  ASSERT_GT(profile.sample_size(), 0);
  std::int64_t total = 0;
  for (const pb::Sample& sample : profile.sample()) {
    ASSERT_EQ(sample.label_size(), 1);
    EXPECT_EQ(text(sample.label(0).key()), "thread");
    EXPECT_FALSE(text(sample.label(0).str()).empty());
    total += sample.value(0);
  }
  EXPECT_GT(total, 0);
  for (const pb::Location& location : profile.location()) {
    ASSERT_EQ(location.line_size(), 1);
    EXPECT_EQ(location.line(0).function_id(), location.id());
    EXPECT_EQ(location.address(), 0u);
  }
  std::vector<std::string> names;
  for (const pb::Function& function : profile.function()) {
    names.push_back(text(function.name()));
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "Tree::insert"), names.end());
}

// The CPU profile: a Sample per stack (leaf first), native frames as addresses in the
// process's mappings with their names as Functions, the scopes as Functions among them.
TEST(PprofWire, CpuProfileDecodes) {
  const hotscope::Snapshot snapshot = hotscope::testing::known_snapshot_with_cpu();
  std::ostringstream out;
  hotscope::exporters::write_pprof_cpu(snapshot, out);
  const pb::Profile profile = parsed(gunzipped(out.str()));
  const auto text = [&](std::int64_t index) { return profile.string_table(index); };
  ASSERT_EQ(profile.sample_type_size(), 2);
  EXPECT_EQ(text(profile.sample_type(0).type()), "samples");
  EXPECT_EQ(text(profile.sample_type(0).unit()), "count");
  EXPECT_EQ(text(profile.sample_type(1).type()), "cpu");
  EXPECT_EQ(text(profile.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(text(profile.period_type().type()), "cpu");
  EXPECT_EQ(text(profile.period_type().unit()), "nanoseconds");
  EXPECT_EQ(profile.period(), 10'000'000);
  EXPECT_EQ(profile.time_nanos(), static_cast<std::int64_t>(snapshot.start_unix_ns));
  EXPECT_EQ(profile.duration_nanos(), static_cast<std::int64_t>(snapshot.duration_ns));

  std::map<std::uint64_t, const pb::Location*> locations;
  for (const pb::Location& location : profile.location()) {
    locations[location.id()] = &location;
  }
  std::map<std::uint64_t, const pb::Mapping*> mappings;
  for (const pb::Mapping& mapping : profile.mapping()) {
    mappings[mapping.id()] = &mapping;
    // pprof symbolizes the addresses itself (docs/formats-output.md).
    EXPECT_FALSE(mapping.has_functions() || mapping.has_filenames() || mapping.has_line_numbers() ||
                 mapping.has_inline_frames());
    EXPECT_LT(mapping.memory_start(), mapping.memory_limit());
  }
  std::map<std::uint64_t, const pb::Function*> functions;
  for (const pb::Function& function : profile.function()) {
    functions[function.id()] = &function;
  }
  ASSERT_EQ(profile.sample_size(), 4);
  const pb::Sample& deepest = profile.sample(0);
  EXPECT_EQ(std::vector<std::int64_t>(deepest.value().begin(), deepest.value().end()),
            (std::vector<std::int64_t>{6, 60'000'000}));
  ASSERT_EQ(deepest.location_id_size(), 5);
  // Leaf first: rand interrupted, Tree::insert, the test program's return address, main, the
  // return address into std::terminate.
  const CpuStack& stack = snapshot.cpu.stacks[0];
  const std::vector<std::uint64_t> addresses = {
      stack.frames[0].address, 0, stack.frames[2].address - 1, 0, stack.frames[4].address - 1};
  const std::vector<std::string> scopes = {"", "Tree::insert", "", "main", ""};
  // Native frames named as cpu.folded names them (its test checks the names).
  const std::vector<std::string> natives = {"rand", "", "", "", "std::terminate()"};
  const std::string program = std::filesystem::read_symlink("/proc/self/exe").string();
  for (int i = 0; i < 5; ++i) {
    const pb::Location& location = *locations.at(deepest.location_id(i));
    EXPECT_EQ(location.address(), addresses[i]) << i;
    ASSERT_EQ(location.line_size(), 1) << i;
    const pb::Function& function = *functions.at(location.line(0).function_id());
    if (scopes[i].empty()) {
      if (!natives[i].empty()) {
        EXPECT_EQ(text(function.name()), natives[i]);
      }
      EXPECT_EQ(location.line(0).line(), 0);
      const pb::Mapping& mapping = *mappings.at(location.mapping_id());
      EXPECT_GE(location.address(), mapping.memory_start());
      EXPECT_LT(location.address(), mapping.memory_limit());
      // A build id in lowercase hex, as pprof matches it against the file's.
      EXPECT_TRUE(std::regex_match(text(mapping.build_id()), std::regex("([0-9a-f]{2})+")))
          << text(mapping.filename());
      if (i == 2) {
        EXPECT_EQ(text(mapping.filename()), program);
      }
      continue;
    }
    EXPECT_EQ(location.mapping_id(), 0u);
    EXPECT_EQ(text(function.name()), scopes[i]);
    const CpuScope& scope = snapshot.cpu.scopes[i == 1 ? 1 : 0];
    EXPECT_EQ(text(function.filename()), scope.file);
    EXPECT_EQ(function.start_line(), scope.line);
    EXPECT_EQ(location.line(0).line(), scope.line);
  }
  // One Location per scope and per address: the program's code interrupted at the address the
  // other stack's return address follows is the same Location.
  const pb::Sample& shallower = profile.sample(1);
  ASSERT_EQ(shallower.location_id_size(), 3);
  EXPECT_EQ(shallower.location_id(0), deepest.location_id(3));
  EXPECT_EQ(shallower.location_id(1), deepest.location_id(2));
  EXPECT_EQ(shallower.location_id(2), deepest.location_id(4));
  // In no mapping: its address, mapping 0. Without frames: no location.
  ASSERT_EQ(profile.sample(2).location_id_size(), 1);
  EXPECT_EQ(locations.at(profile.sample(2).location_id(0))->mapping_id(), 0u);
  EXPECT_EQ(locations.at(profile.sample(2).location_id(0))->address(), 0x10u);
  EXPECT_EQ(profile.sample(3).location_id_size(), 0);
  EXPECT_EQ(profile.sample(3).value(1), 10'000'000);
}

} // namespace

namespace {

// A sample's frames, leaf first, as their Functions' names; an address in no mapping as "0x…".
std::vector<std::string> frame_names(const pb::Profile& profile, const pb::Sample& sample) {
  std::map<std::uint64_t, const pb::Location*> locations;
  for (const pb::Location& location : profile.location()) {
    locations[location.id()] = &location;
  }
  std::map<std::uint64_t, std::string> functions;
  for (const pb::Function& function : profile.function()) {
    functions[function.id()] = profile.string_table(function.name());
  }
  std::vector<std::string> names;
  for (const std::uint64_t id : sample.location_id()) {
    const pb::Location& location = *locations.at(id);
    names.push_back(location.line_size() == 0 ? "?" : functions.at(location.line(0).function_id()));
  }
  return names;
}

// Go's contention profile: contentions/count and delay/nanoseconds, a sample per lock and site,
// "wait for NAME" as the leaf, then the site's native frames (return addresses, named after their
// call), then its scopes, innermost first.
TEST(PprofWire, MutexProfileDecodes) {
  const hotscope::Snapshot snapshot = hotscope::testing::known_snapshot_with_locks();
  std::ostringstream out;
  hotscope::exporters::write_pprof_mutex(snapshot, out);
  const pb::Profile profile = parsed(gunzipped(out.str()));
  const auto text = [&](std::int64_t index) { return profile.string_table(index); };
  ASSERT_EQ(profile.sample_type_size(), 2);
  EXPECT_EQ(text(profile.sample_type(0).type()), "contentions");
  EXPECT_EQ(text(profile.sample_type(0).unit()), "count");
  EXPECT_EQ(text(profile.sample_type(1).type()), "delay");
  EXPECT_EQ(text(profile.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(text(profile.period_type().type()), "contentions");
  EXPECT_EQ(text(profile.period_type().unit()), "count");
  EXPECT_EQ(profile.period(), 1);
  EXPECT_EQ(profile.duration_nanos(), static_cast<std::int64_t>(snapshot.duration_ns));
  ASSERT_EQ(profile.sample_size(), 3);
  const auto values = [&](int i) {
    return std::vector<std::int64_t>(profile.sample(i).value().begin(),
                                     profile.sample(i).value().end());
  };
  EXPECT_EQ(values(0), (std::vector<std::int64_t>{1, 500}));
  EXPECT_EQ(frame_names(profile, profile.sample(0)),
            (std::vector<std::string>{"wait for cache_mutex", "std::terminate()", "update"}));
  EXPECT_EQ(values(1), (std::vector<std::int64_t>{1, 200}));
  EXPECT_EQ(frame_names(profile, profile.sample(1)),
            (std::vector<std::string>{"wait for cache_mutex"}));
  EXPECT_EQ(frame_names(profile, profile.sample(2)),
            (std::vector<std::string>{"wait for m2", "0x10", "flush"}));
  // The return addresses stand for their calls: one byte before.
  const std::uint64_t terminate =
      hotscope::testing::code_address(reinterpret_cast<const void*>(&std::terminate));
  std::set<std::uint64_t> addresses;
  for (const pb::Location& location : profile.location()) {
    addresses.insert(location.address());
  }
  EXPECT_EQ(addresses, (std::set<std::uint64_t>{0, terminate, 0x10}));
}

// The wall profile names a lock wait "wait for NAME", a frame above the scope it waited in.
TEST(PprofWire, WallProfileNamesLockWaits) {
  std::ostringstream out;
  hotscope::exporters::write_pprof_wall(hotscope::testing::known_snapshot_with_locks(), out);
  const pb::Profile profile = parsed(gunzipped(out.str()));
  std::map<std::vector<std::string>, std::int64_t> wall;
  for (const pb::Sample& sample : profile.sample()) {
    wall[frame_names(profile, sample)] += sample.value(0);
  }
  EXPECT_EQ((wall[{"wait for cache_mutex", "update"}]), 500);
  EXPECT_EQ((wall[{"update"}]), 500);
  EXPECT_EQ((wall[{"wait for cache_mutex"}]), 200);
  EXPECT_EQ((wall[{"wait for m2"}]), 500);
}

} // namespace
