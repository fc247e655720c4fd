// pprof profiles, gzip-compressed (docs/formats-output.md): the heap profile in Go's heap
// convention, and wall time per scope stack from the trace window.
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/profile.pb.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <ostream>
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

// One frame of the frame table, read back from valgrind's syntax (symbols::describe):
// "0xADDR: func (file:line)", "0xADDR: func (in object)" or "0xADDR: ??? (in object)".
struct ParsedFrame {
  std::uint64_t address = 0;
  std::string function;
  std::string file; // the source file, else the object
  std::int64_t line = 0;
};

ParsedFrame parse_frame(std::string_view text) {
  ParsedFrame frame;
  const std::size_t colon = text.find(": ");
  if (colon == std::string_view::npos) {
    frame.function = text;
    return frame;
  }
  frame.address = std::strtoull(std::string(text.substr(0, colon)).c_str(), nullptr, 16);
  std::string_view rest = text.substr(colon + 2);
  const std::size_t open = rest.rfind(" (");
  if (open == std::string_view::npos || rest.back() != ')') {
    frame.function = rest;
    return frame;
  }
  frame.function = rest.substr(0, open);
  const std::string_view where = rest.substr(open + 2, rest.size() - open - 3);
  const std::size_t separator = where.rfind(':');
  if (where.starts_with("in ")) {
    frame.file = where.substr(3);
  } else if (separator != std::string_view::npos) {
    frame.file = where.substr(0, separator);
    frame.line = std::strtoll(std::string(where.substr(separator + 1)).c_str(), nullptr, 10);
  } else {
    frame.file = where;
  }
  if (frame.function == "???") {
    frame.function = std::string(text.substr(0, colon)); // unknown code: named by its address
  }
  return frame;
}

class Strings {
public:
  explicit Strings(pb::Profile& profile) : profile_(profile) { index(""); }
  std::int64_t index(const std::string& text) {
    const auto [it, inserted] = indices_.emplace(text, profile_.string_table_size());
    if (inserted) {
      profile_.add_string_table(text);
    }
    return it->second;
  }

private:
  pb::Profile& profile_;
  std::unordered_map<std::string, std::int64_t> indices_;
};

void add_value_type(pb::ValueType* type, Strings& strings, const std::string& name,
                    const std::string& unit) {
  type->set_type(strings.index(name));
  type->set_unit(strings.index(unit));
}

std::string gzip(const std::string& data) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string compressed(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(compressed.data());
  stream.avail_out = static_cast<uInt>(compressed.size());
  const int result = deflate(&stream, Z_FINISH);
  compressed.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) {
    throw std::runtime_error("zlib: deflate did not finish");
  }
  return compressed;
}

void write_gzipped(const pb::Profile& message, std::ostream& out) {
  const std::string compressed = gzip(message.SerializeAsString());
  out.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
}

} // namespace

void write_pprof_heap(const HeapProfile& profile, std::int64_t period, std::ostream& out) {
  pb::Profile message;
  Strings strings(message);
  // speedscope shows the last type, pprof the default one: inuse_space for both.
  add_value_type(message.add_sample_type(), strings, "alloc_objects", "count");
  add_value_type(message.add_sample_type(), strings, "alloc_space", "bytes");
  add_value_type(message.add_sample_type(), strings, "inuse_objects", "count");
  add_value_type(message.add_sample_type(), strings, "inuse_space", "bytes");
  message.set_default_sample_type(strings.index("inuse_space"));
  add_value_type(message.mutable_period_type(), strings, "space", "bytes");
  message.set_period(period);
  message.set_duration_nanos(static_cast<std::int64_t>(profile.end_us) * 1000);
  // The allocator's own frames, and those the allocations come through, say nothing about who
  // allocated: pprof drops them (and any frame below them), so the callers show as flat.
  message.set_drop_frames(strings.index(kAllocatorFrames));

  // One Location per frame of the frame table (id = its index, never 0: frame 0 is "[root]"),
  // each with one Line and its Function, so every viewer shows every frame.
  std::vector<bool> used(profile.frames.size(), false);
  for (const HeapSite& site : profile.sites) {
    for (const std::uint32_t frame : site.frames) {
      used[frame] = true;
    }
  }
  std::map<std::pair<std::string, std::string>, std::uint64_t> functions;
  for (std::uint32_t index = 1; index < profile.frames.size(); ++index) {
    if (!used[index]) {
      continue;
    }
    const ParsedFrame frame = parse_frame(profile.frames[index]);
    const auto [function, inserted] =
        functions.emplace(std::pair(frame.function, frame.file), functions.size() + 1);
    if (inserted) {
      pb::Function* added = message.add_function();
      added->set_id(function->second);
      added->set_name(strings.index(frame.function));
      added->set_system_name(added->name());
      added->set_filename(strings.index(frame.file));
    }
    pb::Location* location = message.add_location();
    location->set_id(index);
    location->set_address(frame.address);
    pb::Line* line = location->add_line();
    line->set_function_id(function->second);
    line->set_line(frame.line);
  }

  const std::int64_t bytes_key = strings.index("bytes");
  for (const HeapSite& site : profile.sites) {
    pb::Sample* sample = message.add_sample();
    for (const std::uint32_t frame : site.frames) {
      sample->add_location_id(frame); // innermost first: pprof's leaf first
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
  write_gzipped(message, out);
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
  for (const ThreadInfo& thread : snapshot.threads) {
    thread_names[thread.index] = detail::thread_label(thread);
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
