// pprof profiles, gzip-compressed (docs/formats-output.md): the heap profile in Go's heap
// convention, and wall time per scope stack from the trace window.
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/profile.pb.h"

#include <google/protobuf/arena.h>

#include <libdeflate.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace hotscope::exporters {
namespace {

namespace pb = perftools::profiles;

// The frames an allocation passes through on its way to the allocator: the allocator's own and
// the standard containers' growth helpers. pprof drops them, and any frame they call, from every
// sample, so `go tool pprof -top` shows as flat the function that asked for the memory (the user's
// code, or the container operation it called) rather than the allocator. A regular expression
// matched against whole function names, after pprof has removed their argument lists and, for
// names already demangled, their template arguments: `.*` stands for either, and for a function
// template's return type.
constexpr const char* kAllocatorFrames =
    "operator new.*|operator delete.*|malloc|calloc|realloc|free|posix_memalign|aligned_alloc|"
    "memalign|valloc|pvalloc|reallocarray|hotscope_.*|"
    "(.* )?(std|__gnu_cxx)::.*::(allocate|_M_allocate.*|_M_create|_M_create_storage|"
    "_M_realloc_insert|_M_realloc_append|_M_default_append|_M_get_node|_M_create_node|_M_mutate|"
    "_M_construct|_M_append|_M_replace|_M_push_back_aux|_M_push_front_aux|_M_reallocate_map|"
    "_M_reserve_map_at_back|_M_reserve_map_at_front|_M_initialize_map|_M_rehash.*)";

// The string table: a string new to it is added to the message being built (`into`), which a
// profile written in parts (HeapParts) moves on from part to part.
class Strings {
public:
  explicit Strings(pb::Profile& into) : into_(&into) { index(""); }
  std::int64_t index(const std::string& text) {
    const auto [it, inserted] = indices_.emplace(text, static_cast<std::int64_t>(indices_.size()));
    if (inserted) {
      into_->add_string_table(text);
    }
    return it->second;
  }
  void add_to(pb::Profile& into) { into_ = &into; }

private:
  pb::Profile* into_;
  std::unordered_map<std::string, std::int64_t> indices_;
};

void add_value_type(pb::ValueType* type, Strings& strings, const std::string& name,
                    const std::string& unit) {
  type->set_type(strings.index(name));
  type->set_unit(strings.index(unit));
}

// Writes `message` gzip-compressed at libdeflate's fastest level, as Go's runtime/pprof writes
// its profiles at zlib's: several times faster than the default level, for a file a little
// larger (libdeflate's level 1 is about twice as fast as zlib's, and a large profile is written at
// the program's exit). Both buffers are left uninitialized: a large profile's are megabytes,
// whose zeroing would be a page fault per page before they are written.
void write_gzipped(std::span<const std::uint8_t> serialized, std::ostream& out) {
  const std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> compressor(
      libdeflate_alloc_compressor(1), &libdeflate_free_compressor);
  if (compressor == nullptr) {
    throw std::bad_alloc();
  }
  const std::size_t bound = libdeflate_gzip_compress_bound(compressor.get(), serialized.size());
  const auto compressed = std::make_unique_for_overwrite<char[]>(bound);
  const std::size_t compressed_size = libdeflate_gzip_compress(
      compressor.get(), serialized.data(), serialized.size(), compressed.get(), bound);
  if (compressed_size == 0) { // the bound was not enough, which libdeflate rules out
    throw std::runtime_error("libdeflate: the gzip stream did not fit its bound");
  }
  out.write(compressed.get(), static_cast<std::streamsize>(compressed_size));
}

void write_gzipped(const pb::Profile& message, std::ostream& out) {
  const std::size_t size = message.ByteSizeLong();
  const auto serialized = std::make_unique_for_overwrite<std::uint8_t[]>(size);
  message.SerializeWithCachedSizesToArray(serialized.get());
  write_gzipped({serialized.get(), size}, out);
}

// A large profile written in parts of a few thousand samples each, one after the other into one
// buffer: a message serialized is its fields one after another, and two serialized messages of one
// type read as one, the repeated fields of both in order (protobuf's merge). Each part carries the
// strings, functions and locations its samples added; the scalar fields are set in the first
// part only. Each part is built on the same arena, emptied between parts: a profile of 100,000
// sites as one message took 30 MB of fresh memory, a page fault per page, at the program's exit.
class HeapParts {
public:
  explicit HeapParts(std::size_t serialized_estimate) {
    serialized_.reserve(serialized_estimate);
    message_ = google::protobuf::Arena::CreateMessage<pb::Profile>(&arena_);
  }
  pb::Profile& message() { return *message_; }
  // Serializes the part built so far and starts the next; `strings` adds to it from then on.
  void next_part(Strings& strings) {
    const std::size_t size = message_->ByteSizeLong();
    const std::size_t at = serialized_.size();
    serialized_.resize(at + size);
    message_->SerializeWithCachedSizesToArray(serialized_.data() + at);
    arena_.Reset();
    message_ = google::protobuf::Arena::CreateMessage<pb::Profile>(&arena_);
    strings.add_to(*message_);
  }
  std::span<const std::uint8_t> serialized() const { return serialized_; }

private:
  google::protobuf::Arena arena_;
  pb::Profile* message_ = nullptr;
  std::vector<std::uint8_t> serialized_;
};

} // namespace

void write_pprof_heap(const HeapProfile& profile, std::int64_t period, std::ostream& out) {
  // A site is a Sample with repeated fields and a Label: on an arena, the hundreds of thousands of
  // small allocations of a large profile become a few blocks, reused from part to part.
  std::size_t frame_count = 0;
  for (const HeapSite& site : profile.sites) {
    frame_count += site.frames.size();
  }
  HeapParts parts(1024 + profile.sites.size() * 24 + frame_count * 2 + profile.frames.size() * 80);
  Strings strings(parts.message());
  // The part being built, moved on by HeapParts: read it through this reference only after each
  // call that may move it.
  const auto message = [&]() -> pb::Profile& { return parts.message(); };
  // speedscope shows the last type, pprof the default one: inuse_space for both.
  add_value_type(message().add_sample_type(), strings, "alloc_objects", "count");
  add_value_type(message().add_sample_type(), strings, "alloc_space", "bytes");
  add_value_type(message().add_sample_type(), strings, "inuse_objects", "count");
  add_value_type(message().add_sample_type(), strings, "inuse_space", "bytes");
  message().set_default_sample_type(strings.index("inuse_space"));
  add_value_type(message().mutable_period_type(), strings, "space", "bytes");
  message().set_period(period);
  message().set_duration_nanos(static_cast<std::int64_t>(profile.end_us) * 1000);
  // The allocator's own frames, and those the allocations come through, say nothing about who
  // allocated: pprof drops them (and any frame below them), so the callers show as flat.
  message().set_drop_frames(strings.index(kAllocatorFrames));

  // One Mapping per object with code in the process, so that a frame keeps its object and
  // offset; the program itself comes first, where pprof looks for the main binary.
  for (std::size_t i = 0; i < profile.mappings.size(); ++i) {
    const HeapMapping& object = profile.mappings[i];
    pb::Mapping* mapping = message().add_mapping();
    mapping->set_id(i + 1);
    mapping->set_memory_start(object.start);
    mapping->set_memory_limit(object.limit);
    mapping->set_file_offset(object.offset);
    mapping->set_filename(strings.index(object.path));
    mapping->set_has_functions(true); // symbolized already: pprof need not look again
    mapping->set_has_filenames(true);
    mapping->set_has_line_numbers(true);
    mapping->set_has_inline_frames(true);
  }
  // One Location per address: its frames (the frame table's, as the symbolizer resolved them),
  // innermost first, are its Lines, inlined functions before the one they were inlined into.
  std::map<std::pair<std::string, std::string>, std::uint64_t> functions;
  const auto function_id = [&](const HeapFrame& frame) {
    const auto [function, inserted] =
        functions.emplace(std::pair(frame.function, frame.file), functions.size() + 1);
    if (inserted) {
      pb::Function* added = message().add_function();
      added->set_id(function->second);
      added->set_name(strings.index(frame.function));
      added->set_system_name(added->name());
      added->set_filename(strings.index(frame.file));
    }
    return function->second;
  };
  // A Location is one address's frames, and a frame's text holds its address: the innermost
  // frame's index names the Location (0: not made yet).
  std::vector<std::uint64_t> location_of_frame(profile.frames.size(), 0);
  std::uint64_t locations = 0;
  const auto location_id = [&](std::span<const std::uint32_t> frames) {
    std::uint64_t& id = location_of_frame.at(frames.front());
    if (id == 0) {
      id = ++locations;
      const HeapFrame& innermost = profile.frame_details.at(frames.front());
      pb::Location* added = message().add_location();
      added->set_id(id);
      added->set_address(innermost.address);
      added->set_mapping_id(innermost.mapping);
      for (const std::uint32_t index : frames) {
        const HeapFrame& frame = profile.frame_details.at(index);
        if (!frame.function.empty()) { // unknown code: the address in its mapping says it all
          pb::Line* line = added->add_line();
          line->set_function_id(function_id(frame));
          line->set_line(frame.line);
        }
      }
    }
    return id;
  };

  // Whether each frame is inlined into the next, apart from the frame details (a megabyte for
  // cc1plus's 11,000 frames), where the look at every frame of every site missed the cache.
  std::vector<std::uint8_t> inlined(profile.frame_details.size());
  for (std::size_t i = 0; i < inlined.size(); ++i) {
    inlined[i] = profile.frame_details[i].inlined ? 1 : 0;
  }
  const std::int64_t bytes_key = strings.index("bytes");
  constexpr std::size_t samples_per_part = 8192;
  std::size_t in_part = 0;
  for (const HeapSite& site : profile.sites) {
    if (in_part++ == samples_per_part) {
      parts.next_part(strings);
      in_part = 1;
    }
    pb::Sample* sample = message().add_sample();
    // Sized once: grown one field at a time, each would be copied to a larger arena block.
    sample->mutable_location_id()->Reserve(static_cast<int>(site.frames.size()));
    sample->mutable_value()->Reserve(4);
    // One address's frames, innermost first: inlined frames up to the one they are inlined into.
    const std::span<const std::uint32_t> frames(site.frames);
    std::size_t first = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (inlined.at(frames[i]) == 0) {
        sample->add_location_id(location_id(frames.subspan(first, i + 1 - first))); // leaf first
        first = i + 1;
      }
    }
    if (first < frames.size()) {
      sample->add_location_id(location_id(frames.subspan(first)));
    }
    sample->add_value(static_cast<std::int64_t>(site.total_blocks));
    sample->add_value(static_cast<std::int64_t>(site.total_bytes));
    sample->add_value(static_cast<std::int64_t>(site.end_blocks));
    sample->add_value(static_cast<std::int64_t>(site.end_bytes));
    if (site.total_blocks > 0) {
      pb::Label* label = sample->add_label();
      label->set_key(bytes_key);
      label->set_num(static_cast<std::int64_t>(site.total_bytes / site.total_blocks));
    }
  }
  parts.next_part(strings);
  write_gzipped(parts.serialized(), out);
}

void write_pprof_wall(const Snapshot& snapshot, std::ostream& out) {
  pb::Profile message;
  Strings strings(message);
  add_value_type(message.add_sample_type(), strings, "wall", "nanoseconds");
  add_value_type(message.mutable_period_type(), strings, "wall", "nanoseconds");
  message.set_period(1);
  message.set_time_nanos(
      static_cast<std::int64_t>(snapshot.start_unix_ns + snapshot.trace_start_ns));
  message.set_duration_nanos(static_cast<std::int64_t>(
      snapshot.duration_ns - std::min(snapshot.duration_ns, snapshot.trace_start_ns)));

  // One Function and one Location per scope name (id = its index + 1): scopes are not code
  // addresses, so a Location has no address, only its Line.
  std::vector<bool> added(snapshot.names.size(), false);
  const auto location_of = [&](std::uint32_t name) {
    if (!added[name]) {
      added[name] = true;
      pb::Function* function = message.add_function();
      function->set_id(name + 1);
      function->set_name(strings.index(snapshot.names[name]));
      function->set_system_name(function->name());
      pb::Location* location = message.add_location();
      location->set_id(name + 1);
      location->add_line()->set_function_id(name + 1);
    }
    return static_cast<std::uint64_t>(name) + 1;
  };
  std::map<std::uint32_t, std::string> thread_names;
  for (const auto* list : {&snapshot.threads, &snapshot.trace_threads}) {
    for (const ThreadInfo& thread : *list) {
      thread_names[thread.index] = detail::thread_label(thread);
    }
  }
  const std::int64_t thread_key = strings.index("thread");
  for (const auto& [thread_stack, ns] : detail::self_time_by_stack(snapshot)) {
    const auto& [thread, open] = thread_stack;
    pb::Sample* sample = message.add_sample();
    for (auto name = open.rbegin(); name != open.rend(); ++name) {
      sample->add_location_id(location_of(*name)); // leaf first
    }
    sample->add_value(static_cast<std::int64_t>(ns));
    pb::Label* label = sample->add_label();
    label->set_key(thread_key);
    label->set_str(strings.index(thread_names[thread]));
  }
  write_gzipped(message, out);
}

} // namespace hotscope::exporters
