#include "heap/raw_report.hpp"

#include "atomic_file/atomic_file.hpp"

#include <fstream>
#include <type_traits>

namespace hotscope::heap {
namespace {

// This build's file: any change of the layout below changes the tag.
constexpr char kTag[] = "hotscope heap raw report 1\n";

// Into bytes, not a stream: the program writes them at its exit, where building the C++ library's
// locale for a first stream would cost it more than the rest of the report.
class Writer {
public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class Number> void number(Number value) {
    static_assert(std::is_arithmetic_v<Number>);
    const auto word = static_cast<std::uint64_t>(value);
    out_.append(reinterpret_cast<const char*>(&word), sizeof word);
  }
  void text(const std::string& value) {
    number(value.size());
    out_.append(value);
  }

private:
  std::string& out_;
};

class Reader {
public:
  Reader(std::istream& in, std::uint64_t size) : in_(in), left_(size) {}
  template <class Number> Number number() {
    std::uint64_t word = 0;
    take(reinterpret_cast<char*>(&word), sizeof word);
    return static_cast<Number>(word);
  }
  std::string text() {
    std::string value(count(1), '\0');
    take(value.data(), value.size());
    return value;
  }
  // A count of items of at least `item_size` bytes each, no more than the file can hold.
  std::size_t count(std::size_t item_size) {
    const auto value = number<std::uint64_t>();
    if (value > left_ / item_size) {
      ok_ = false;
      return 0;
    }
    return static_cast<std::size_t>(value);
  }
  bool ok() const { return ok_ && static_cast<bool>(in_); }

private:
  void take(char* into, std::size_t size) {
    if (size > left_) {
      ok_ = false;
      return;
    }
    in_.read(into, static_cast<std::streamsize>(size));
    left_ -= size;
  }
  std::istream& in_;
  std::uint64_t left_;
  bool ok_ = true;
};

constexpr std::size_t kCountsWords = 9; // SiteCounts's fields

template <class Io, class Counts> void each_count(Io&& io, Counts& c) {
  io(c.total_bytes, c.total_blocks, c.lifetimes, c.curr_bytes, c.curr_blocks, c.max_bytes,
     c.max_blocks, c.gmax_bytes, c.gmax_blocks);
}

} // namespace

std::string write_raw_report(const std::string& path, const RawReport& r) {
  std::string bytes(kTag, sizeof kTag - 1);
  Writer w(bytes);
  for (const std::string* text :
       {&r.json_path, &r.pprof_path, &r.program, &r.command, &r.memory_map, &r.debug_cache}) {
    w.text(*text);
  }
  w.number(r.pid);
  w.number(r.summary);
  w.number(r.sampling);
  w.number(r.sample_bytes);
  w.number(r.sampled_allocations);
  w.number(r.pprof_period);
  const RawProfile& raw = r.raw;
  for (const std::uint64_t value :
       {raw.end_time, raw.gmax_time, raw.unknown_frees, raw.unknown_reallocs,
        std::uint64_t{raw.attached}, raw.frees_before_attach, raw.reallocs_before_attach}) {
    w.number(value);
  }
  w.number(raw.sites.size());
  for (const RawSite& site : raw.sites) {
    w.number(site.id);
    each_count([&](auto... values) { (w.number(values), ...); }, site.counts);
    w.number(site.stack.size());
    for (const std::uintptr_t address : site.stack) {
      w.number(address);
    }
  }
  return atomic_file::write_new(path, bytes);
}

std::string read_raw_report(const std::string& path, RawReport& r) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return "cannot open " + path;
  }
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::string tag(sizeof kTag - 1, '\0');
  if (size < tag.size() || !in.read(tag.data(), static_cast<std::streamsize>(tag.size())) ||
      tag != kTag) {
    return path + " is not a raw heap report of this hotscope";
  }
  Reader read(in, size - tag.size());
  for (std::string* text :
       {&r.json_path, &r.pprof_path, &r.program, &r.command, &r.memory_map, &r.debug_cache}) {
    *text = read.text();
  }
  r.pid = read.number<std::int64_t>();
  r.summary = read.number<bool>();
  r.sampling = read.number<bool>();
  r.sample_bytes = read.number<std::uint64_t>();
  r.sampled_allocations = read.number<std::uint64_t>();
  r.pprof_period = read.number<std::int64_t>();
  RawProfile& raw = r.raw;
  for (std::uint64_t* value :
       {&raw.end_time, &raw.gmax_time, &raw.unknown_frees, &raw.unknown_reallocs}) {
    *value = read.number<std::uint64_t>();
  }
  raw.attached = read.number<bool>();
  raw.frees_before_attach = read.number<std::uint64_t>();
  raw.reallocs_before_attach = read.number<std::uint64_t>();
  // The stacks go into one vector; the sites' spans are made once it is whole.
  raw.sites.resize(read.count((kCountsWords + 2) * sizeof(std::uint64_t)));
  std::vector<std::size_t> starts(raw.sites.size() + 1, 0);
  for (std::size_t i = 0; i < raw.sites.size() && read.ok(); ++i) {
    RawSite& site = raw.sites[i];
    site.id = read.number<StackId>();
    each_count([&](auto&... values) { ((values = read.number<std::uint64_t>()), ...); },
               site.counts);
    const std::size_t words = read.count(sizeof(std::uint64_t));
    for (std::size_t word = 0; word < words; ++word) {
      r.stack_words.push_back(read.number<std::uintptr_t>());
    }
    starts[i + 1] = r.stack_words.size();
  }
  if (!read.ok()) {
    return path + " is cut short";
  }
  for (std::size_t i = 0; i < raw.sites.size(); ++i) {
    raw.sites[i].stack = {r.stack_words.data() + starts[i], starts[i + 1] - starts[i]};
  }
  return "";
}

} // namespace hotscope::heap
