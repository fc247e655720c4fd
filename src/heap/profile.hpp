// From raw figures to the exporters' model: symbolized stacks, a frame table, sites keyed by
// their frames (a HeapProfile).
#pragma once

#include "heap/engine.hpp"
#include "heap/tables.hpp"
#include "objects/objects.hpp"
#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace hotscope::symbols {
class Symbolizer;
}

namespace hotscope::heap {

// Times in `raw` are in µs. Symbolizes every stack (inlined frames expanded, frames below `main`
// dropped), builds the deduplicated frame table and keys sites by their final frame-index vector.
// Sites that end up with the same vector are merged: counts add up, mb/mbk are the largest single
// site's (the exact value is unknowable after the fact).
// `symbolizer` is refreshed first (after a dlopen or dlclose since its last use it forgets what
// they may have changed), so one kept across profiles resolves each address once, never stale.
// The profile's mappings are `mappings` (an ended process's), or when null this process's.
HeapProfile build_profile(const RawProfile& raw, std::string command, std::int64_t pid,
                          symbols::Symbolizer& symbolizer,
                          const std::vector<objects::CodeMapping>* mappings = nullptr);

// Profiles of one stack table's stacks (ids 0, 1, ... in the order added), with what each stack
// needs done once (symbolized up to main, inlined frames expanded, its frames added to the frame
// table, its site found by its frames) done ahead of the profiles, where a thread has the time
// (the full mode's collector): a profile then only adds up each stack's counts into its site.
// Each return address is resolved once. After a refresh of the symbolizer that forgot results
// (a dlopen or dlclose, by whoever called it) everything is done again.
class ProfileBuilder {
public:
  ProfileBuilder();
  ~ProfileBuilder(); // where State is whole

  // How many stacks add() added: the next one is the stack of that id.
  std::size_t added() const;
  // Starts over if the symbolizer forgot results since the stacks were added.
  void forget_if_stale(const symbols::Symbolizer& symbolizer);
  // Adds the next stack of the table (id added()). The symbolizer refreshed by the caller.
  void add(std::span<const std::uintptr_t> stack, symbols::Symbolizer& symbolizer);
  // As build_profile. A raw site is matched to the stack added with its id, if that was kept
  // where the site's stack is (the same span's data: the same table); the others are added now.
  // The frame table also lists the frames of stacks added that the profile has no site of
  // (stacks without blocks).
  HeapProfile build(const RawProfile& raw, std::string command, std::int64_t pid,
                    symbols::Symbolizer& symbolizer,
                    const std::vector<objects::CodeMapping>* mappings = nullptr);
  // As build(), for the last profile (the report at exit): the builder's tables are moved into
  // it, not copied, and the next use of the builder starts over.
  HeapProfile build_last(const RawProfile& raw, std::string command, std::int64_t pid,
                         symbols::Symbolizer& symbolizer,
                         const std::vector<objects::CodeMapping>* mappings = nullptr);

private:
  // build() and build_last(): `hand_over` moves the tables into the profile.
  HeapProfile make_profile(const RawProfile& raw, std::string command, std::int64_t pid,
                           symbols::Symbolizer& symbolizer, bool hand_over,
                           const std::vector<objects::CodeMapping>* mappings);
  // The site of `stack`, added if it is new.
  std::uint32_t site_of(std::span<const std::uintptr_t> stack, symbols::Symbolizer& symbolizer);
  // The site of the stack `id`, kept where `stack` is, found or added.
  std::uint32_t site_of(StackId id, std::span<const std::uintptr_t> stack,
                        symbols::Symbolizer& symbolizer);
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace hotscope::heap
