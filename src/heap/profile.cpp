// Raw figures to the exporters' HeapProfile: symbolize, expand inlined frames, drop what lies
// below main, build the frame table and key sites by their final frame-index vector.
#include "heap/profile.hpp"
#include "objects/objects.hpp"
#include "symbols/symbols.hpp"

#include <algorithm>
#include <span>
#include <unordered_map>

namespace hotscope::heap {
namespace {

class FrameTable {
public:
  explicit FrameTable(std::vector<std::string>& strings) : strings_(strings) {
    strings_.assign(1, "[root]");
  }
  std::uint32_t index(const std::string& text) {
    const auto [it, inserted] = indices_.emplace(text, static_cast<std::uint32_t>(strings_.size()));
    if (inserted) {
      strings_.push_back(text);
    }
    return it->second;
  }

private:
  std::vector<std::string>& strings_;
  std::unordered_map<std::string, std::uint32_t> indices_;
};

void merge_into(HeapSite& into, const HeapSite& from) {
  into.total_bytes += from.total_bytes;
  into.total_blocks += from.total_blocks;
  into.lifetimes_us += from.lifetimes_us;
  into.gmax_bytes += from.gmax_bytes;
  into.gmax_blocks += from.gmax_blocks;
  into.end_bytes += from.end_bytes;
  into.end_blocks += from.end_blocks;
  if (from.max_bytes > into.max_bytes) {
    into.max_bytes = from.max_bytes;
    into.max_blocks = from.max_blocks;
  }
}

// True for the frames of main: the C runtime's start-up frames below it say nothing.
bool is_main(const std::vector<symbols::Frame>& frames) {
  return std::any_of(frames.begin(), frames.end(),
                     [](const symbols::Frame& frame) { return frame.function == "main"; });
}

// Each distinct return address's frames, as indices into the frame table: a profile's stacks
// repeat a few thousand addresses millions of times, so this lookup is build_profile's inner loop.
class AddressFrames {
public:
  struct Entry {
    std::uint32_t first; // its frames: [first, first + count) of the indices
    std::uint32_t count;
    bool in_main; // a frame of main: the frames after it are the C runtime's
  };

  // The entry of `address`, and true when it is new: its frames are then to be added.
  std::pair<Entry*, bool> find_or_add(std::uintptr_t address) {
    const auto [id, added] = addresses_.find_or_add(address);
    if (added) {
      entries_.push_back(Entry{static_cast<std::uint32_t>(indices_.size()), 0, false});
    }
    return {&entries_[id], added};
  }
  // Adds a frame to the entry find_or_add added last.
  void add_frame(Entry& entry, std::uint32_t index) {
    indices_.push_back(index);
    ++entry.count;
  }
  std::span<const std::uint32_t> frames(const Entry& entry) const {
    return {indices_.data() + entry.first, entry.count};
  }

private:
  AddressIndex addresses_;
  std::vector<Entry> entries_; // by the address's id
  std::vector<std::uint32_t> indices_;
};

} // namespace

// What a profile of one stack table needs per stack, kept from profile to profile and built
// ahead: the frame table, each return address's frames, and each stack's site.
struct ProfileBuilder::State {
  std::uint64_t refreshes_seen = 0; // the symbolizer's forgetting_refreshes() when built
  std::vector<std::string> frames;
  FrameTable table{frames};
  std::vector<HeapFrame> frame_details{HeapFrame{}}; // their mappings are found by each profile
  // Each distinct address is symbolized and described once; sites share far more addresses
  // than they have.
  AddressFrames by_address;
  // Each stack's site by its id, with where the stack table keeps the stack (a raw site's stack
  // of that id kept elsewhere is another table's); key 0: not added.
  struct AddedStack {
    std::uintptr_t key = 0;
    std::uint32_t site = 0; // index into site_frames
  };
  std::vector<AddedStack> stacks;
  std::size_t in_order = 0; // stacks added by add(), in the table's order
  // Each site's frames, and the sites by their frames: stacks that differ only below main are
  // one site.
  std::vector<std::vector<std::uint32_t>> site_frames;
  HashIndex site_index;
  std::vector<std::uint32_t> scratch; // a stack's frames, reused
  bool handed_over = false;           // build_last() moved the tables out: the next use starts over
};

ProfileBuilder::ProfileBuilder() : state_(std::make_unique<State>()) {}
ProfileBuilder::~ProfileBuilder() = default;

namespace {

// Where the stack table keeps a stack, never 0: its key among the stacks added. Only one stack can
// be empty (equal stacks are one), and its address may be where the next one starts.
std::uintptr_t stack_key(std::span<const std::uintptr_t> stack) {
  return reinterpret_cast<std::uintptr_t>(stack.data()) | (stack.empty() ? 1 : 0);
}

} // namespace

std::size_t ProfileBuilder::added() const {
  return state_->in_order;
}

void ProfileBuilder::forget_if_stale(const symbols::Symbolizer& symbolizer) {
  if (state_->handed_over || symbolizer.forgetting_refreshes() != state_->refreshes_seen) {
    state_ = std::make_unique<State>();
    state_->refreshes_seen = symbolizer.forgetting_refreshes();
  }
}

void ProfileBuilder::add(std::span<const std::uintptr_t> stack, symbols::Symbolizer& symbolizer) {
  site_of(static_cast<StackId>(state_->in_order++), stack, symbolizer);
}

std::uint32_t ProfileBuilder::site_of(StackId id, std::span<const std::uintptr_t> stack,
                                      symbols::Symbolizer& symbolizer) {
  State& s = *state_;
  const std::uintptr_t key = stack_key(stack);
  if (id < s.stacks.size() && s.stacks[id].key == key) {
    return s.stacks[id].site;
  }
  const std::uint32_t site = site_of(stack, symbolizer);
  if (id >= s.stacks.size()) {
    s.stacks.resize(std::size_t{id} + 1);
  }
  if (s.stacks[id].key == 0) { // another table's stack leaves this table's alone
    s.stacks[id] = State::AddedStack{key, site};
  }
  return site;
}

std::uint32_t ProfileBuilder::site_of(std::span<const std::uintptr_t> stack,
                                      symbols::Symbolizer& symbolizer) {
  State& s = *state_;
  s.scratch.clear();
  for (const std::uintptr_t return_address : stack) {
    auto [known, inserted] = s.by_address.find_or_add(return_address);
    if (inserted) {
      // The call instruction ends just before the return address.
      const std::uintptr_t call = return_address - 1;
      const std::vector<symbols::Frame>& resolved = symbolizer.resolve(call);
      for (std::size_t i = 0; i < resolved.size(); ++i) {
        const symbols::Frame& frame = resolved[i];
        const std::uint32_t index = s.table.index(symbols::describe(call, frame));
        s.by_address.add_frame(*known, index);
        if (index == s.frame_details.size()) { // new to the table
          // All but the last of an address's frames are inlined into the next one.
          s.frame_details.push_back(
              HeapFrame{call, frame.function, frame.file, frame.line, 0, i + 1 < resolved.size()});
        }
      }
      known->in_main = is_main(resolved);
    }
    const auto indices = s.by_address.frames(*known);
    s.scratch.insert(s.scratch.end(), indices.begin(), indices.end());
    if (known->in_main) {
      break; // the C runtime's start-up frames say nothing
    }
  }
  const auto next = static_cast<std::uint32_t>(s.site_frames.size());
  const std::uint32_t site = s.site_index.find_or_add(
      hash_values(std::span<const std::uint32_t>(s.scratch)), next,
      [&](std::uint32_t known) { return s.site_frames[known] == s.scratch; });
  if (site == next) {
    s.site_frames.push_back(s.scratch);
  }
  return site;
}

HeapProfile ProfileBuilder::build(const RawProfile& raw, std::string command, std::int64_t pid,
                                  symbols::Symbolizer& symbolizer,
                                  const std::vector<objects::CodeMapping>* mappings) {
  return make_profile(raw, std::move(command), pid, symbolizer, false, mappings);
}

HeapProfile ProfileBuilder::build_last(const RawProfile& raw, std::string command, std::int64_t pid,
                                       symbols::Symbolizer& symbolizer,
                                       const std::vector<objects::CodeMapping>* mappings) {
  return make_profile(raw, std::move(command), pid, symbolizer, true, mappings);
}

HeapProfile ProfileBuilder::make_profile(const RawProfile& raw, std::string command,
                                         std::int64_t pid, symbols::Symbolizer& symbolizer,
                                         bool hand_over,
                                         const std::vector<objects::CodeMapping>* given) {
  HeapProfile profile;
  profile.command = std::move(command);
  profile.pid = pid;
  profile.end_us = raw.end_time;
  profile.gmax_us = raw.gmax_time;
  profile.unknown_frees = raw.unknown_frees;
  profile.unknown_reallocs = raw.unknown_reallocs;
  profile.attached = raw.attached;
  profile.frees_before_attach = raw.frees_before_attach;
  profile.reallocs_before_attach = raw.reallocs_before_attach;

  symbolizer.refresh();
  forget_if_stale(symbolizer);
  // Each raw site's site: known for the stacks added ahead, made now for the others. The
  // profile's sites come in the order of their first raw site, as when built at once.
  // All sites are found before any site's frames are handed over: finding a site compares frames.
  // The calls of the stacks not added ahead, each once, resolved in one batch: each object's
  // symbol table is read once for all of them.
  std::vector<std::uintptr_t> calls;
  AddressIndex distinct;
  for (const RawSite& site : raw.sites) {
    if (site.id >= state_->stacks.size() || state_->stacks[site.id].key != stack_key(site.stack)) {
      for (const std::uintptr_t return_address : site.stack) {
        if (distinct.find_or_add(return_address).second) {
          calls.push_back(return_address - 1);
        }
      }
    }
  }
  symbolizer.resolve_all(calls);
  std::vector<std::uint32_t> sites(raw.sites.size());
  for (std::size_t i = 0; i < raw.sites.size(); ++i) {
    sites[i] = site_of(raw.sites[i].id, raw.sites[i].stack, symbolizer);
  }
  State& s = *state_;
  constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<std::uint32_t> profile_site(s.site_frames.size(), none);
  profile.sites.reserve(raw.sites.size());
  for (std::size_t i = 0; i < raw.sites.size(); ++i) {
    const std::uint32_t site = sites[i];
    const SiteCounts& c = raw.sites[i].counts;
    const HeapSite counts{c.total_bytes, c.total_blocks, c.lifetimes,  c.max_bytes,   c.max_blocks,
                          c.gmax_bytes,  c.gmax_blocks,  c.curr_bytes, c.curr_blocks, {}};
    if (profile_site[site] == none) {
      profile_site[site] = static_cast<std::uint32_t>(profile.sites.size());
      profile.sites.push_back(counts);
      profile.sites.back().frames =
          hand_over ? std::move(s.site_frames[site]) : s.site_frames[site];
    } else {
      merge_into(profile.sites[profile_site[site]], counts);
    }
  }
  // The frame table holds the frames of every stack added, those without blocks too.
  profile.frames = hand_over ? std::move(s.frames) : s.frames;
  const std::vector<objects::CodeMapping> mappings =
      given != nullptr ? *given : objects::code_mappings();
  for (const objects::CodeMapping& mapping : mappings) {
    profile.mappings.push_back({mapping.start, mapping.limit, mapping.offset, mapping.path});
  }
  profile.frame_details = hand_over ? std::move(s.frame_details) : s.frame_details;
  s.handed_over = hand_over;
  for (HeapFrame& frame : profile.frame_details) {
    frame.mapping = frame.address == 0
                        ? 0
                        : static_cast<std::uint32_t>(objects::mapping_of(mappings, frame.address));
  }
  return profile;
}

HeapProfile build_profile(const RawProfile& raw, std::string command, std::int64_t pid,
                          symbols::Symbolizer& symbolizer,
                          const std::vector<objects::CodeMapping>* mappings) {
  return ProfileBuilder().build(raw, std::move(command), pid, symbolizer, mappings);
}

} // namespace hotscope::heap
