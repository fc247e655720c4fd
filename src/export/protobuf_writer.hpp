// pprof's Profile message in the protobuf wire format, written by hand for exactly the fields
// hotscope emits: the field numbers and wire types are pprof's own (profile.proto), restated in
// docs/formats-output.md ("pprof wire format"). libhotscope links no protobuf library: a
// service's own protobuf, at another version, would be a second copy in its process.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace hotscope::exporters::pprof {

// The messages' fields hotscope writes; the string-valued ones are string table indices. A field
// left 0 (or false) is not written, as proto3 does: a reader sees 0 either way.
struct ValueType {
  std::int64_t type = 0;
  std::int64_t unit = 0;
};

struct Label {
  std::int64_t key = 0;
  std::int64_t str = 0;
  std::int64_t num = 0;
};

struct Mapping {
  std::uint64_t id = 0;
  std::uint64_t memory_start = 0;
  std::uint64_t memory_limit = 0;
  std::uint64_t file_offset = 0;
  std::int64_t filename = 0;
  std::int64_t build_id = 0;
  bool has_functions = false;
  bool has_filenames = false;
  bool has_line_numbers = false;
  bool has_inline_frames = false;
};

struct Line {
  std::uint64_t function_id = 0;
  std::int64_t line = 0;
};

struct Location {
  std::uint64_t id = 0;
  std::uint64_t mapping_id = 0;
  std::uint64_t address = 0;
};

struct Function {
  std::uint64_t id = 0;
  std::int64_t name = 0;
  std::int64_t system_name = 0;
  std::int64_t filename = 0;
  std::int64_t start_line = 0;
};

// Profile's scalar fields.
struct ProfileScalars {
  std::int64_t drop_frames = 0;
  std::int64_t time_nanos = 0;
  std::int64_t duration_nanos = 0;
  ValueType period_type;
  std::int64_t period = 0;
  std::int64_t default_sample_type = 0;
};

// Appends protobuf's encodings to a byte buffer.
class WireBuffer {
public:
  void varint(std::uint64_t value);
  // A varint field; 0 is not written.
  void varint_field(std::uint32_t field, std::uint64_t value);
  // A length-delimited field (string or bytes), written even when empty.
  void bytes_field(std::uint32_t field, std::string_view bytes);
  // A packed repeated varint field; nothing when empty.
  void packed_field(std::uint32_t field, std::span<const std::uint64_t> values);
  // An embedded message: open() writes its tag, then the caller its fields, then close(open's
  // result) puts its length in front of them.
  std::size_t open(std::uint32_t field);
  void close(std::size_t start);

  void append(const WireBuffer& other);
  void reserve(std::size_t bytes) { make_room(bytes > size_ ? bytes - size_ : 0); }
  void clear() { size_ = 0; }
  std::span<const std::uint8_t> bytes() const { return {data_.get(), size_}; }

private:
  // At least `bytes` more bytes of room, uninitialized: growing one varint at a time through a
  // std::vector was a third of a large profile's encoding time, and a large profile's buffer is
  // megabytes whose zeroing would be a page fault per page.
  void make_room(std::size_t bytes) {
    if (capacity_ - size_ < bytes) {
      grow(bytes);
    }
  }
  void grow(std::size_t bytes);

  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// A Profile, written in parts: each field as it is added goes to the buffer of its field, and
// end_part() appends the buffers to the profile in field-number order (how protobuf writes a
// message), then empties them. Two serialized Profiles read as one, their repeated fields in
// order (protobuf's merge), so a large profile needs only one part's buffers at a time.
class ProfileWriter {
public:
  explicit ProfileWriter(std::size_t size_estimate = 0) { profile_.reserve(size_estimate); }

  void sample_type(const ValueType& type);
  // One Sample: its locations leaf first, one value per sample type, its labels.
  void sample(std::span<const std::uint64_t> location_ids, std::span<const std::int64_t> values,
              std::span<const Label> labels);
  void mapping(const Mapping& mapping);
  // One Location: its lines, the innermost inlined function first.
  void location(const Location& location, std::span<const Line> lines);
  void function(const Function& function);
  void string(std::string_view text);
  // Written with the current part; the next part starts with them all 0.
  ProfileScalars& scalars() { return scalars_; }

  void end_part();
  // The profile's bytes: the parts ended so far.
  std::span<const std::uint8_t> bytes() const { return profile_.bytes(); }

private:
  WireBuffer sample_types_;
  WireBuffer samples_;
  WireBuffer mappings_;
  WireBuffer locations_;
  WireBuffer functions_;
  WireBuffer strings_;
  ProfileScalars scalars_;
  WireBuffer profile_;
  std::vector<std::uint64_t> values_; // a sample's values as varints, reused
};

} // namespace hotscope::exporters::pprof
