// The sampled mode: Poisson byte sampling per thread, and DHAT's accounting over the sampled
// blocks with each one weighted by the number of allocations it stands for.
#include "heap/sampling.hpp"

#include "heap/sampling_math.hpp"

#include <cmath>

namespace hotscope::heap {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

using math::rounded;

} // namespace

double sample_weight(std::uint64_t size, double mean_bytes) {
  const double bytes = size == 0 ? 1.0 : static_cast<double>(size);
  return -1.0 / math::exp_minus_one(-bytes / mean_bytes);
}

// An exponential draw, rounded up to whole bytes: an allocation of s bytes holds the sample
// point when s >= the interval, with probability 1 - exp(-s / mean).
std::uint64_t Sampler::next_interval(const SamplingPlan& plan) {
  const double uniform = (static_cast<double>(splitmix64(random_) >> 11) + 0.5) * 0x1p-53;
  const double interval = std::ceil(-math::natural_log(uniform) * plan.mean_bytes);
  return interval < 1.0      ? 1
         : interval > 0x1p62 ? std::uint64_t{1} << 62
                             : static_cast<std::uint64_t>(interval);
}

bool Sampler::at_sample_point(std::uint64_t bytes, SamplingPlan& plan) {
  if (!seeded_) {
    seeded_ = true;
    random_ =
        plan.seed ^ (plan.threads.fetch_add(1, std::memory_order_relaxed) * 0xD1B54A32D192ED03ull);
    remaining_ = next_interval(plan);
    if (bytes < remaining_) {
      remaining_ -= bytes;
      return false;
    }
  }
  // The process is memoryless: the next interval starts afresh after this allocation.
  remaining_ = next_interval(plan);
  return true;
}

StackId SampledEngine::intern(std::span<const std::uintptr_t> stack) {
  return stacks_.intern_site(stack, sites_);
}

// As Engine::check_for_peak: before the live estimate drops from the (latest) peak, every
// site's live figures are its figures at t-gmax.
void SampledEngine::check_for_peak() {
  if (curr_bytes_ != max_bytes_) {
    return;
  }
  for (Site& site : sites_) {
    site.gmax_bytes = site.curr_bytes;
    site.gmax_blocks = site.curr_blocks;
  }
}

void SampledEngine::alloc(std::uintptr_t address, std::size_t size, StackId stack,
                          std::uint64_t now) {
  const std::uint64_t bytes = size == 0 ? 1 : size;
  const double weight = sample_weight(bytes, mean_bytes_);
  const double scaled = static_cast<double>(bytes) * weight;
  Site& site = sites_[stack];
  ++sampled_;
  curr_bytes_ += scaled;
  curr_blocks_ += weight;
  site.curr_bytes += scaled;
  site.curr_blocks += weight;
  site.total_bytes += scaled;
  site.total_blocks += weight;
  if (curr_bytes_ >= max_bytes_) {
    max_bytes_ = curr_bytes_;
    max_blocks_ = curr_blocks_;
    gmax_time_ = now;
    site.max_bytes = site.curr_bytes;
    site.max_blocks = site.curr_blocks;
  }
  live_.insert(address, LiveBlock{stack, bytes, now});
}

bool SampledEngine::free(std::uintptr_t address, std::uint64_t now) {
  LiveBlock block;
  if (!live_.take(address, block)) {
    return false;
  }
  check_for_peak();
  const double weight = sample_weight(block.size, mean_bytes_);
  const double scaled = static_cast<double>(block.size) * weight;
  Site& site = sites_[block.site];
  curr_bytes_ -= scaled;
  curr_blocks_ -= weight;
  site.curr_bytes -= scaled;
  site.curr_blocks -= weight;
  site.lifetimes += weight * static_cast<double>(now - block.alloc_time);
  return true;
}

Totals SampledEngine::totals() const {
  double total_bytes = 0;
  double total_blocks = 0;
  for (const Site& site : sites_) {
    total_bytes += site.total_bytes;
    total_blocks += site.total_blocks;
  }
  const LiveFigures live = live_figures();
  return {rounded(total_bytes), rounded(total_blocks), live.live_bytes,
          live.live_blocks,     live.peak_bytes,       live.peak_blocks};
}

LiveFigures SampledEngine::live_figures() const {
  return {rounded(curr_bytes_), rounded(curr_blocks_), rounded(max_bytes_), rounded(max_blocks_)};
}

void SampledEngine::restart(std::uint64_t now) {
  max_bytes_ = curr_bytes_;
  max_blocks_ = curr_blocks_;
  gmax_time_ = now;
  for (Site& site : sites_) {
    site.total_bytes = site.max_bytes = site.gmax_bytes = site.curr_bytes;
    site.total_blocks = site.max_blocks = site.gmax_blocks = site.curr_blocks;
    site.lifetimes = 0;
  }
}

RawProfile SampledEngine::snapshot(std::uint64_t now) const {
  std::vector<double> lifetimes(sites_.size());
  for (std::size_t id = 0; id < sites_.size(); ++id) {
    lifetimes[id] = sites_[id].lifetimes;
  }
  live_.for_each([&](const LiveBlock& block) {
    lifetimes[block.site] +=
        sample_weight(block.size, mean_bytes_) * static_cast<double>(now - block.alloc_time);
  });
  RawProfile raw;
  raw.end_time = now;
  raw.gmax_time = gmax_time_;
  raw.sites.reserve(sites_.size());
  const bool at_peak = curr_bytes_ == max_bytes_; // the exit-time check_for_peak
  for (StackId id = 0; id < sites_.size(); ++id) {
    const Site& site = sites_[id];
    const auto frames = stacks_.stack(id);
    SiteCounts counts;
    counts.total_bytes = rounded(site.total_bytes);
    counts.total_blocks = rounded(site.total_blocks);
    counts.lifetimes = rounded(lifetimes[id]);
    counts.curr_bytes = rounded(site.curr_bytes);
    counts.curr_blocks = rounded(site.curr_blocks);
    counts.max_bytes = rounded(site.max_bytes);
    counts.max_blocks = rounded(site.max_blocks);
    counts.gmax_bytes = rounded(at_peak ? site.curr_bytes : site.gmax_bytes);
    counts.gmax_blocks = rounded(at_peak ? site.curr_blocks : site.gmax_blocks);
    raw.sites.push_back(RawSite{frames, counts, id});
  }
  return raw;
}

} // namespace hotscope::heap
