// pprof profiles, gzip-compressed (docs/formats-output.md): the heap profile in Go's heap
// convention, wall time per scope stack from the trace window, the CPU samples and the lock
// contention (Go's mutex profile). The Profile message is written by ProfileWriter
// (protobuf_writer.hpp).
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/protobuf_writer.hpp"
#include "objects/objects.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace hotscope::exporters {
namespace {

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

// The string table: a string new to it is written to the profile's current part.
class Strings {
public:
  explicit Strings(pprof::ProfileWriter& writer) : writer_(&writer) { index(""); }
  std::int64_t index(const std::string& text) {
    const auto [it, inserted] = indices_.emplace(text, static_cast<std::int64_t>(indices_.size()));
    if (inserted) {
      writer_->string(text);
    }
    return it->second;
  }
  pprof::ValueType value_type(const std::string& type, const std::string& unit) {
    return {index(type), index(unit)};
  }

private:
  pprof::ProfileWriter* writer_;
  std::unordered_map<std::string, std::int64_t> indices_;
};

// Writes `serialized` gzip-compressed at libdeflate's fastest level, as Go's runtime/pprof writes
// its profiles at zlib's: several times faster than the default level, for a file a little
// larger (libdeflate's level 1 is about twice as fast as zlib's, and a large profile is written at
// the program's exit). The output buffer is left uninitialized: a large profile's is megabytes,
// whose zeroing would be a page fault per page before it is written.
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

// One Mapping per object with code in the process (id: its index + 1), so that a frame keeps its
// object and offset; by address, so the program itself comes first, where pprof looks for the
// main binary. `known` holds the has_* flags: what the profile's Lines say already.
template <typename CodeObjects>
void write_mappings(pprof::ProfileWriter& writer, Strings& strings, const CodeObjects& objects,
                    const pprof::Mapping& known) {
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto& object = objects[i];
    pprof::Mapping mapping = known;
    mapping.id = i + 1;
    mapping.memory_start = object.start;
    mapping.memory_limit = object.limit;
    mapping.file_offset = object.offset;
    mapping.filename = strings.index(object.path);
    if constexpr (requires { object.build_id; }) {
      mapping.build_id = object.build_id.empty() ? 0 : strings.index(object.build_id);
    }
    writer.mapping(mapping);
  }
}

// The heap profile, written in parts of a few thousand samples each (ProfileWriter::end_part):
// each part carries the strings, functions and locations its samples added, the scalar fields
// the first part only. Written as one part, a profile of 100,000 sites took tens of megabytes
// of fresh memory, a page fault per page, at the program's exit.
class HeapProfileWriter {
public:
  HeapProfileWriter(const HeapProfile& profile, std::size_t size_estimate)
      : profile_(profile), writer_(size_estimate), strings_(writer_),
        location_of_frame_(profile.frames.size(), 0), inlined_(profile.frame_details.size()) {
    for (std::size_t i = 0; i < inlined_.size(); ++i) {
      inlined_[i] = profile.frame_details[i].inlined ? 1 : 0;
    }
  }

  std::span<const std::uint8_t> write(std::int64_t period) {
    header(period);
    // Symbolized already: pprof need not look again.
    pprof::Mapping symbolized;
    symbolized.has_functions = symbolized.has_filenames = true;
    symbolized.has_line_numbers = symbolized.has_inline_frames = true;
    write_mappings(writer_, strings_, profile_.mappings, symbolized);
    const std::int64_t bytes_key = strings_.index("bytes");
    constexpr std::size_t samples_per_part = 8192;
    std::size_t in_part = 0;
    for (const HeapSite& site : profile_.sites) {
      if (in_part++ == samples_per_part) {
        writer_.end_part();
        in_part = 1;
      }
      sample(site, bytes_key);
    }
    writer_.end_part();
    return writer_.bytes();
  }

private:
  void header(std::int64_t period) {
    // speedscope shows the last type, pprof the default one: inuse_space for both.
    writer_.sample_type(strings_.value_type("alloc_objects", "count"));
    writer_.sample_type(strings_.value_type("alloc_space", "bytes"));
    writer_.sample_type(strings_.value_type("inuse_objects", "count"));
    writer_.sample_type(strings_.value_type("inuse_space", "bytes"));
    pprof::ProfileScalars& scalars = writer_.scalars();
    scalars.default_sample_type = strings_.index("inuse_space");
    scalars.period_type = strings_.value_type("space", "bytes");
    scalars.period = period;
    scalars.duration_nanos = static_cast<std::int64_t>(profile_.end_us) * 1000;
    // The allocator's own frames, and those the allocations come through, say nothing about who
    // allocated: pprof drops them (and any frame below them), so the callers show as flat.
    scalars.drop_frames = strings_.index(kAllocatorFrames);
  }

  std::uint64_t function_id(const HeapFrame& frame) {
    const auto [function, inserted] =
        functions_.emplace(std::pair(frame.function, frame.file), functions_.size() + 1);
    if (inserted) {
      const std::int64_t name = strings_.index(frame.function);
      writer_.function({function->second, name, name, strings_.index(frame.file)});
    }
    return function->second;
  }

  // One Location per address: its frames (the frame table's, as the symbolizer resolved them),
  // innermost first, are its Lines, inlined functions before the one they were inlined into. A
  // frame's text holds its address: the innermost frame's index names the Location (0: not
  // written yet).
  std::uint64_t location_id(std::span<const std::uint32_t> frames) {
    std::uint64_t& id = location_of_frame_.at(frames.front());
    if (id == 0) {
      id = ++locations_;
      const HeapFrame& innermost = profile_.frame_details.at(frames.front());
      lines_.clear();
      for (const std::uint32_t index : frames) {
        const HeapFrame& frame = profile_.frame_details.at(index);
        if (!frame.function.empty()) { // unknown code: the address in its mapping says it all
          lines_.push_back({function_id(frame), frame.line});
        }
      }
      writer_.location({id, innermost.mapping, innermost.address}, lines_);
    }
    return id;
  }

  void sample(const HeapSite& site, std::int64_t bytes_key) {
    // One address's frames, innermost first: inlined frames up to the one they are inlined into.
    const std::span<const std::uint32_t> frames(site.frames);
    location_ids_.clear();
    std::size_t first = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (inlined_.at(frames[i]) == 0) {
        location_ids_.push_back(location_id(frames.subspan(first, i + 1 - first))); // leaf first
        first = i + 1;
      }
    }
    if (first < frames.size()) {
      location_ids_.push_back(location_id(frames.subspan(first)));
    }
    const std::array<std::int64_t, 4> values = {
        static_cast<std::int64_t>(site.total_blocks), static_cast<std::int64_t>(site.total_bytes),
        static_cast<std::int64_t>(site.end_blocks), static_cast<std::int64_t>(site.end_bytes)};
    pprof::Label average_size{bytes_key, 0, 0};
    std::size_t labels = 0;
    if (site.total_blocks > 0) {
      average_size.num = static_cast<std::int64_t>(site.total_bytes / site.total_blocks);
      labels = 1;
    }
    writer_.sample(location_ids_, values, std::span(&average_size, labels));
  }

  const HeapProfile& profile_;
  pprof::ProfileWriter writer_;
  Strings strings_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> functions_;
  std::vector<std::uint64_t> location_of_frame_;
  std::uint64_t locations_ = 0;
  // Whether each frame is inlined into the next, apart from the frame details (a megabyte for
  // cc1plus's 11,000 frames), where the look at every frame of every site missed the cache.
  std::vector<std::uint8_t> inlined_;
  std::vector<std::uint64_t> location_ids_; // reused from sample to sample
  std::vector<pprof::Line> lines_;          // reused from location to location
};

// The CPU profile's Locations: one per native instruction address, in the mapping that holds it,
// and one per open scope, without address. A native Location's Lines name its frame as
// cpu.folded does (inlined functions first), without file or line; pprof replaces them when it
// symbolizes the address from the mapping's file itself (the mappings say nothing is
// symbolized). A Location without Lines would have pprof ask the agent for its name
// (/debug/pprof/symbol, not served: pprof fails). A scope's Line names the scope's Function.
class CpuLocations {
public:
  CpuLocations(const CpuProfile& profile, pprof::ProfileWriter& writer, Strings& strings)
      : profile_(profile), writer_(writer), strings_(strings),
        scope_locations_(profile.scopes.size(), 0) {
    objects::add_build_ids(mappings_);
    write_mappings(writer_, strings_, mappings_, pprof::Mapping{});
  }

  std::uint64_t native(std::uint64_t address) {
    const auto [location, inserted] = native_locations_.emplace(address, next_id_);
    if (inserted) {
      ++next_id_;
      // The frame's names outermost first (a function, then those inlined into it): its Lines
      // innermost first.
      const std::vector<std::string>& names = native_names_.at(addresses_.index.at(address));
      lines_.clear();
      for (auto name = names.rbegin(); name != names.rend(); ++name) {
        lines_.push_back({native_function(*name), 0});
      }
      writer_.location({location->second, objects::mapping_of(mappings_, address), address},
                       lines_);
    }
    return location->second;
  }

  std::uint64_t scope(std::int32_t index) {
    std::uint64_t& id = scope_locations_.at(static_cast<std::size_t>(index));
    if (id == 0) {
      id = next_id_++;
      const CpuScope& scope = profile_.scopes[static_cast<std::size_t>(index)];
      const std::int64_t name = strings_.index(scope.name);
      writer_.function({id, name, name, strings_.index(scope.file), scope.line});
      const pprof::Line line{id, scope.line};
      writer_.location({id, 0, 0}, std::span(&line, 1));
    }
    return id;
  }

private:
  // The Function of a native frame's name (docs/formats-output.md, "cpu.pb.gz").
  std::uint64_t native_function(const std::string& name) {
    const auto [function, inserted] = native_functions_.emplace(name, next_id_);
    if (inserted) {
      ++next_id_;
      const std::int64_t name = strings_.index(function->first);
      writer_.function({function->second, name, name, 0, 0});
    }
    return function->second;
  }

  const CpuProfile& profile_;
  pprof::ProfileWriter& writer_;
  Strings& strings_;
  const detail::CpuAddresses addresses_ = detail::cpu_addresses(profile_);
  const std::vector<std::vector<std::string>> native_names_ =
      objects::native_frame_names(addresses_.addresses, objects::code_mappings());
  // Read after the names: naming may load the symbolizer module, whose code is then mapped too
  // (the table is the process's as the profile is written, the same in every profile after).
  std::vector<objects::CodeMapping> mappings_ = objects::code_mappings();
  std::vector<pprof::Line> lines_; // reused from location to location
  std::unordered_map<std::uint64_t, std::uint64_t> native_locations_;
  std::unordered_map<std::string, std::uint64_t> native_functions_; // by name
  std::vector<std::uint64_t> scope_locations_; // by scope index; 0: not written yet
  std::uint64_t next_id_ = 1; // Locations' and Functions' (a scope's shares its Location's)
};

// Writes `profile`'s stacks (the CPU samples, or the lock contention sites in their form) as the
// samples, each with the values `values` gives the stack of that index.
void write_stacks(const CpuProfile& profile, pprof::ProfileWriter& writer, Strings& strings,
                  const std::function<std::array<std::int64_t, 2>(std::size_t)>& values) {
  CpuLocations locations(profile, writer, strings);
  std::vector<std::uint64_t> location_ids;
  for (std::size_t i = 0; i < profile.stacks.size(); ++i) {
    location_ids.clear();
    bool innermost_native = true;
    for (const CpuFrame& frame : profile.stacks[i].frames) { // leaf first, as pprof wants them
      if (frame.is_scope()) {
        location_ids.push_back(locations.scope(frame.scope));
      } else {
        location_ids.push_back(
            locations.native(detail::instruction_address(frame, innermost_native)));
        innermost_native = false;
      }
    }
    writer.sample(location_ids, values(i), {});
  }
  writer.end_part();
}

// The lock contention sites in the CPU profile's form (docs/formats-output.md, "Mutex profile"):
// per lock and site, the leaf "wait for NAME", the site's native frames, then its scopes, the
// innermost first; `samples` the waits, and each stack's waited time beside.
struct ContentionStacks {
  CpuProfile stacks;
  std::vector<std::uint64_t> wait_ns;
};

ContentionStacks contention_stacks(const Snapshot& snapshot) {
  ContentionStacks out;
  std::unordered_map<std::string, std::int32_t> scopes; // by name
  const auto scope = [&](const std::string& name) {
    const auto [found, added] =
        scopes.emplace(name, static_cast<std::int32_t>(out.stacks.scopes.size()));
    if (added) {
      out.stacks.scopes.push_back({name, "", 0});
    }
    return CpuFrame{0, found->second};
  };
  for (const LockStats& lock : snapshot.locks) {
    for (const LockStats::Contention& contention : lock.contended_at) {
      CpuStack stack{{scope(detail::lock_wait_frame(lock.name))}, contention.waits};
      // Every frame is a return address, the innermost too: it is stored as its call's address,
      // which instruction_address keeps for the innermost native frame.
      for (const std::uint64_t address : contention.site.stack) {
        const bool innermost = stack.frames.size() == 1;
        stack.frames.push_back({innermost && address != 0 ? address - 1 : address, -1});
      }
      for (auto name = contention.site.scopes.rbegin(); name != contention.site.scopes.rend();
           ++name) {
        stack.frames.push_back(scope(*name));
      }
      out.stacks.stacks.push_back(std::move(stack));
      out.wait_ns.push_back(contention.wait_ns);
    }
  }
  return out;
}

// The sample types of a profile counting events and their time ("samples"/count and
// "cpu"/nanoseconds; "contentions"/count and "delay"/nanoseconds), its period, and the window
// it covers: the whole measuring window.
struct SampleNames {
  const char* count;
  const char* time;
};
struct Period {
  const char* type;
  const char* unit;
  std::int64_t value;
};
void count_and_time_profile(pprof::ProfileWriter& writer, Strings& strings,
                            const Snapshot& snapshot, SampleNames names, Period period) {
  writer.sample_type(strings.value_type(names.count, "count"));
  writer.sample_type(strings.value_type(names.time, "nanoseconds"));
  pprof::ProfileScalars& scalars = writer.scalars();
  scalars.period_type = strings.value_type(period.type, period.unit);
  scalars.period = period.value;
  scalars.time_nanos = static_cast<std::int64_t>(snapshot.start_unix_ns);
  scalars.duration_nanos = static_cast<std::int64_t>(snapshot.duration_ns);
}

} // namespace

void write_pprof_heap(const HeapProfile& profile, std::int64_t period, std::ostream& out) {
  std::size_t frame_count = 0;
  for (const HeapSite& site : profile.sites) {
    frame_count += site.frames.size();
  }
  HeapProfileWriter writer(profile, 1024 + profile.sites.size() * 24 + frame_count * 2 +
                                        profile.frames.size() * 80);
  write_gzipped(writer.write(period), out);
}

void write_pprof_wall(const Snapshot& snapshot, std::ostream& out) {
  pprof::ProfileWriter writer;
  Strings strings(writer);
  writer.sample_type(strings.value_type("wall", "nanoseconds"));
  pprof::ProfileScalars& scalars = writer.scalars();
  scalars.period_type = strings.value_type("wall", "nanoseconds");
  scalars.period = 1;
  scalars.time_nanos = static_cast<std::int64_t>(snapshot.start_unix_ns + snapshot.trace_start_ns);
  scalars.duration_nanos = static_cast<std::int64_t>(
      snapshot.duration_ns - std::min(snapshot.duration_ns, snapshot.trace_start_ns));

  // One Function and one Location per stack frame, a scope's name or a lock wait (id = the
  // frame + 1): neither is a code address, so a Location has no address, only its Line.
  std::vector<bool> added(2 * snapshot.names.size(), false);
  const auto location_of = [&](std::uint32_t frame) {
    const std::uint64_t id = static_cast<std::uint64_t>(frame) + 1;
    if (!added.at(frame)) {
      added[frame] = true;
      const std::int64_t function_name = strings.index(detail::stack_frame_name(snapshot, frame));
      writer.function({id, function_name, function_name, 0});
      const pprof::Line line{id, 0};
      writer.location({id, 0, 0}, std::span(&line, 1));
    }
    return id;
  };
  std::map<std::uint32_t, std::string> thread_names;
  for (const auto* list : {&snapshot.threads, &snapshot.trace_threads}) {
    for (const ThreadInfo& thread : *list) {
      thread_names[thread.index] = detail::thread_label(thread);
    }
  }
  const std::int64_t thread_key = strings.index("thread");
  std::vector<std::uint64_t> location_ids;
  for (const auto& [thread_stack, ns] : detail::self_time_by_stack(snapshot)) {
    const auto& [thread, open] = thread_stack;
    location_ids.clear();
    for (auto name = open.rbegin(); name != open.rend(); ++name) {
      location_ids.push_back(location_of(*name)); // leaf first
    }
    const std::int64_t value = static_cast<std::int64_t>(ns);
    const pprof::Label label{thread_key, strings.index(thread_names[thread]), 0};
    writer.sample(location_ids, std::span(&value, 1), std::span(&label, 1));
  }
  writer.end_part();
  write_gzipped(writer.bytes(), out);
}

void write_pprof_cpu(const Snapshot& snapshot, std::ostream& out) {
  const CpuProfile& cpu = snapshot.cpu;
  pprof::ProfileWriter writer;
  Strings strings(writer);
  count_and_time_profile(writer, strings, snapshot, {"samples", "cpu"},
                         {"cpu", "nanoseconds", static_cast<std::int64_t>(cpu.period_ns)});
  write_stacks(cpu, writer, strings, [&](std::size_t i) {
    return std::array<std::int64_t, 2>{
        static_cast<std::int64_t>(cpu.stacks[i].samples),
        static_cast<std::int64_t>(cpu.stacks[i].samples * cpu.period_ns)};
  });
  write_gzipped(writer.bytes(), out);
}

void write_pprof_mutex(const Snapshot& snapshot, std::ostream& out) {
  pprof::ProfileWriter writer;
  Strings strings(writer);
  count_and_time_profile(writer, strings, snapshot, {"contentions", "delay"},
                         {"contentions", "count", 1});
  const ContentionStacks contention = contention_stacks(snapshot);
  write_stacks(contention.stacks, writer, strings, [&](std::size_t i) {
    return std::array<std::int64_t, 2>{
        static_cast<std::int64_t>(contention.stacks.stacks[i].samples),
        static_cast<std::int64_t>(contention.wait_ns[i])};
  });
  write_gzipped(writer.bytes(), out);
}

} // namespace hotscope::exporters
