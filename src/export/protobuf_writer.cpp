// The field numbers below are pprof's (profile.proto), as docs/formats-output.md ("pprof wire
// format") lists them.
#include "export/protobuf_writer.hpp"

#include <algorithm>
#include <cstring>

namespace hotscope::exporters::pprof {
namespace {

// Protobuf's wire types: a varint, or a length and that many bytes.
constexpr std::uint32_t kVarint = 0;
constexpr std::uint32_t kLengthDelimited = 2;

namespace profile_field {
constexpr std::uint32_t kSampleType = 1;
constexpr std::uint32_t kSample = 2;
constexpr std::uint32_t kMapping = 3;
constexpr std::uint32_t kLocation = 4;
constexpr std::uint32_t kFunction = 5;
constexpr std::uint32_t kStringTable = 6;
constexpr std::uint32_t kDropFrames = 7;
constexpr std::uint32_t kTimeNanos = 9;
constexpr std::uint32_t kDurationNanos = 10;
constexpr std::uint32_t kPeriodType = 11;
constexpr std::uint32_t kPeriod = 12;
constexpr std::uint32_t kDefaultSampleType = 14;
} // namespace profile_field

std::uint32_t tag(std::uint32_t field, std::uint32_t wire_type) {
  return field << 3 | wire_type;
}

std::size_t varint_size(std::uint64_t value) {
  std::size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// int64 fields are varints of their two's complement: a negative one takes 10 bytes.
std::uint64_t as_varint(std::int64_t value) {
  return static_cast<std::uint64_t>(value);
}

void write_value_type(WireBuffer& out, std::uint32_t field, const ValueType& type) {
  const std::size_t start = out.open(field);
  out.varint_field(1, as_varint(type.type));
  out.varint_field(2, as_varint(type.unit));
  out.close(start);
}

} // namespace

void WireBuffer::grow(std::size_t bytes) {
  const std::size_t capacity = std::max({capacity_ * 2, size_ + bytes, std::size_t{256}});
  auto data = std::make_unique_for_overwrite<std::uint8_t[]>(capacity);
  if (size_ > 0) {
    std::memcpy(data.get(), data_.get(), size_);
  }
  data_ = std::move(data);
  capacity_ = capacity;
}

void WireBuffer::varint(std::uint64_t value) {
  make_room(10);
  std::uint8_t* out = data_.get() + size_;
  while (value >= 0x80) {
    *out++ = static_cast<std::uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<std::uint8_t>(value);
  size_ = static_cast<std::size_t>(out - data_.get());
}

void WireBuffer::varint_field(std::uint32_t field, std::uint64_t value) {
  if (value != 0) {
    varint(tag(field, kVarint));
    varint(value);
  }
}

void WireBuffer::bytes_field(std::uint32_t field, std::string_view bytes) {
  varint(tag(field, kLengthDelimited));
  varint(bytes.size());
  make_room(bytes.size());
  if (!bytes.empty()) {
    std::memcpy(data_.get() + size_, bytes.data(), bytes.size());
  }
  size_ += bytes.size();
}

void WireBuffer::packed_field(std::uint32_t field, std::span<const std::uint64_t> values) {
  if (values.empty()) {
    return;
  }
  std::size_t size = 0;
  for (const std::uint64_t value : values) {
    size += varint_size(value);
  }
  varint(tag(field, kLengthDelimited));
  varint(size);
  for (const std::uint64_t value : values) {
    varint(value);
  }
}

// One byte is kept for the length, enough for a message under 128 bytes; a longer one moves
// its bytes up to make room for the longer length.
std::size_t WireBuffer::open(std::uint32_t field) {
  varint(tag(field, kLengthDelimited));
  make_room(1);
  data_[size_++] = 0;
  return size_;
}

void WireBuffer::close(std::size_t start) {
  const std::size_t length = size_ - start;
  const std::size_t extra = varint_size(length) - 1;
  if (extra > 0) {
    make_room(extra);
    std::memmove(data_.get() + start + extra, data_.get() + start, length);
    size_ += extra;
  }
  std::uint64_t value = length;
  std::uint8_t* out = data_.get() + start - 1;
  while (value >= 0x80) {
    *out++ = static_cast<std::uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out = static_cast<std::uint8_t>(value);
}

void WireBuffer::append(const WireBuffer& other) {
  make_room(other.size_);
  if (other.size_ > 0) {
    std::memcpy(data_.get() + size_, other.data_.get(), other.size_);
  }
  size_ += other.size_;
}

void ProfileWriter::sample_type(const ValueType& type) {
  write_value_type(sample_types_, profile_field::kSampleType, type);
}

void ProfileWriter::sample(std::span<const std::uint64_t> location_ids,
                           std::span<const std::int64_t> values, std::span<const Label> labels) {
  const std::size_t start = samples_.open(profile_field::kSample);
  samples_.packed_field(1, location_ids);
  values_.assign(values.begin(), values.end());
  samples_.packed_field(2, values_);
  for (const Label& label : labels) {
    const std::size_t label_start = samples_.open(3);
    samples_.varint_field(1, as_varint(label.key));
    samples_.varint_field(2, as_varint(label.str));
    samples_.varint_field(3, as_varint(label.num));
    samples_.close(label_start);
  }
  samples_.close(start);
}

void ProfileWriter::mapping(const Mapping& mapping) {
  const std::size_t start = mappings_.open(profile_field::kMapping);
  mappings_.varint_field(1, mapping.id);
  mappings_.varint_field(2, mapping.memory_start);
  mappings_.varint_field(3, mapping.memory_limit);
  mappings_.varint_field(4, mapping.file_offset);
  mappings_.varint_field(5, as_varint(mapping.filename));
  mappings_.varint_field(6, as_varint(mapping.build_id));
  mappings_.varint_field(7, mapping.has_functions ? 1 : 0);
  mappings_.varint_field(8, mapping.has_filenames ? 1 : 0);
  mappings_.varint_field(9, mapping.has_line_numbers ? 1 : 0);
  mappings_.varint_field(10, mapping.has_inline_frames ? 1 : 0);
  mappings_.close(start);
}

void ProfileWriter::location(const Location& location, std::span<const Line> lines) {
  const std::size_t start = locations_.open(profile_field::kLocation);
  locations_.varint_field(1, location.id);
  locations_.varint_field(2, location.mapping_id);
  locations_.varint_field(3, location.address);
  for (const Line& line : lines) {
    const std::size_t line_start = locations_.open(4);
    locations_.varint_field(1, line.function_id);
    locations_.varint_field(2, as_varint(line.line));
    locations_.close(line_start);
  }
  locations_.close(start);
}

void ProfileWriter::function(const Function& function) {
  const std::size_t start = functions_.open(profile_field::kFunction);
  functions_.varint_field(1, function.id);
  functions_.varint_field(2, as_varint(function.name));
  functions_.varint_field(3, as_varint(function.system_name));
  functions_.varint_field(4, as_varint(function.filename));
  functions_.varint_field(5, as_varint(function.start_line));
  functions_.close(start);
}

void ProfileWriter::string(std::string_view text) {
  strings_.bytes_field(profile_field::kStringTable, text);
}

void ProfileWriter::end_part() {
  for (WireBuffer* field :
       {&sample_types_, &samples_, &mappings_, &locations_, &functions_, &strings_}) {
    profile_.append(*field);
    field->clear();
  }
  profile_.varint_field(profile_field::kDropFrames, as_varint(scalars_.drop_frames));
  profile_.varint_field(profile_field::kTimeNanos, as_varint(scalars_.time_nanos));
  profile_.varint_field(profile_field::kDurationNanos, as_varint(scalars_.duration_nanos));
  const ValueType& period_type = scalars_.period_type;
  if (period_type.type != 0 || period_type.unit != 0) {
    write_value_type(profile_, profile_field::kPeriodType, period_type);
  }
  profile_.varint_field(profile_field::kPeriod, as_varint(scalars_.period));
  profile_.varint_field(profile_field::kDefaultSampleType, as_varint(scalars_.default_sample_type));
  scalars_ = ProfileScalars{};
}

} // namespace hotscope::exporters::pprof
