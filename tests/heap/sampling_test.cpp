// The sampled mode's parts: the weights, the sampler's probabilities, the scaled accounting, its
// settings, and the pprof writer's output as a gzip stream.
#include "export/export.hpp"
#include "heap/engine.hpp"
#include "heap/sampling.hpp"
#include "heap/sampling_math.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <sstream>
#include <string_view>

namespace hotscope::heap {
namespace {

TEST(HeapSampling, WeightIsOneOverTheSamplingProbability) {
  EXPECT_DOUBLE_EQ(sample_weight(1024, 1024.0), 1.0 / (1.0 - std::exp(-1.0)));
  EXPECT_NEAR(sample_weight(1, 524288.0), 524288.5, 0.01);     // tiny blocks: ~ mean / size
  EXPECT_NEAR(sample_weight(100 << 20, 524288.0), 1.0, 1e-12); // huge blocks: always sampled
  EXPECT_DOUBLE_EQ(sample_weight(0, 4096.0), sample_weight(1, 4096.0));
}

// The preload library's own log, expm1 and llround (no libm in it) agree with libm's, over the
// sampler's uniform draws and the weights' ratios of a block's size to the mean interval.
TEST(HeapSampling, TheSamplersOwnMathAgreesWithLibm) {
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
  };
  const auto ulps_apart = [](double a, double b) {
    return std::fabs(a - b) / std::fabs(std::nextafter(b, 0.0) - b);
  };
  for (int i = 0; i < 200000; ++i) {
    const double uniform = (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53;
    ASSERT_LE(ulps_apart(math::natural_log(uniform), std::log(uniform)), 2.0) << uniform;
    // Ratios from 2^-40 (a byte against a terabyte) up to 1000, spread over the exponents.
    const double ratio = std::ldexp(uniform + 0.5, static_cast<int>(next() % 50) - 40);
    ASSERT_LE(ulps_apart(math::exp_minus_one(-ratio), std::expm1(-ratio)), 2.0) << ratio;
    const double value = static_cast<double>(next() % 100000) / 8.0; // halves and quarters too
    ASSERT_EQ(math::rounded(value), static_cast<std::uint64_t>(std::llround(value))) << value;
  }
  for (const double edge : {0x1p-1022, 0x1p-54, 0.5, 1.0 - 0x1p-53}) { // normal, as the draws
    EXPECT_LE(ulps_apart(math::natural_log(edge), std::log(edge)), 2.0) << edge;
  }
  EXPECT_EQ(math::natural_log(1.0), 0.0);
  for (const double edge : {0.0, -0x1p-1074, -0.5, -700.0, -745.0, -746.0, -1e6}) {
    EXPECT_LE(std::fabs(math::exp_minus_one(edge) - std::expm1(edge)),
              2 * std::fabs(std::nextafter(std::expm1(edge), 0.0) - std::expm1(edge)) + 1e-300)
        << edge;
  }
  EXPECT_EQ(math::rounded(0.49999999999999994), 0u);
  EXPECT_EQ(math::rounded(2.5), 3u);
  EXPECT_EQ(math::rounded(-3.0), 0u);
  EXPECT_EQ(math::rounded(std::nan("")), 0u);
}

// Each allocation holds a sample point with probability 1 - exp(-size / mean), whatever came
// before it; the same seed gives the same choices.
TEST(HeapSampling, SamplerHitsEachSizeWithItsProbability) {
  SamplingPlan plan;
  plan.mean_bytes = 4096;
  plan.seed = 7;
  Sampler sampler;
  constexpr std::array<std::size_t, 3> sizes = {64, 1000, 8192};
  std::array<int, 3> hits = {};
  constexpr int rounds = 200000;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t kind = 0; kind < sizes.size(); ++kind) {
      hits[kind] += sampler.sample(sizes[kind], plan) ? 1 : 0;
    }
  }
  for (std::size_t kind = 0; kind < sizes.size(); ++kind) {
    const double expected = 1.0 - std::exp(-static_cast<double>(sizes[kind]) / plan.mean_bytes);
    const double observed = static_cast<double>(hits[kind]) / rounds;
    EXPECT_NEAR(observed, expected, 4 * std::sqrt(expected * (1 - expected) / rounds))
        << sizes[kind];
  }
  SamplingPlan one;
  SamplingPlan other;
  one.mean_bytes = other.mean_bytes = 4096;
  one.seed = other.seed = 7;
  Sampler first;
  Sampler second;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(first.sample(500, one), second.sample(500, other));
  }
}

TEST(HeapSampling, SampledEngineScalesBytesAndBlocks) {
  constexpr double mean = 1000;
  SampledEngine engine(mean);
  constexpr std::array<std::uintptr_t, 1> stack = {0x1000};
  const StackId site = engine.intern(stack);
  engine.alloc(0x10, 500, site, 1);
  engine.alloc(0x20, 3000, site, 2);
  EXPECT_EQ(engine.live_blocks(), 2u);
  EXPECT_TRUE(engine.free(0x10, 5));
  EXPECT_FALSE(engine.free(0x30, 6)); // not sampled
  const RawProfile raw = engine.snapshot(10);
  ASSERT_EQ(raw.sites.size(), 1u);
  const SiteCounts& c = raw.sites[0].counts;
  const double w500 = 1 / (1 - std::exp(-0.5));
  const double w3000 = 1 / (1 - std::exp(-3.0));
  EXPECT_EQ(c.total_blocks, static_cast<std::uint64_t>(std::llround(w500 + w3000)));
  EXPECT_EQ(c.total_bytes, static_cast<std::uint64_t>(std::llround(500 * w500 + 3000 * w3000)));
  EXPECT_EQ(c.curr_bytes, static_cast<std::uint64_t>(std::llround(3000 * w3000)));
  EXPECT_EQ(c.curr_blocks, 1u);
  // The peak was reached with both blocks live.
  EXPECT_EQ(c.gmax_bytes, static_cast<std::uint64_t>(std::llround(500 * w500 + 3000 * w3000)));
  EXPECT_EQ(raw.gmax_time, 2u);
  EXPECT_EQ(c.lifetimes, static_cast<std::uint64_t>(std::llround(4 * w500 + 8 * w3000)));
}

// A reset: the estimates restart from the sampled blocks still live.
TEST(HeapSampling, RestartKeepsTheLiveSampledBlocks) {
  constexpr double mean = 1000;
  SampledEngine engine(mean);
  constexpr std::array<std::uintptr_t, 1> kept_stack = {0x1000};
  constexpr std::array<std::uintptr_t, 1> freed_stack = {0x2000};
  const StackId kept = engine.intern(kept_stack);
  const StackId freed = engine.intern(freed_stack);
  engine.alloc(0x10, 3000, kept, 1);
  engine.alloc(0x20, 500, freed, 2);
  EXPECT_TRUE(engine.free(0x20, 3));
  engine.restart(4);
  const RawProfile raw = engine.snapshot(10);
  const std::uint64_t live = static_cast<std::uint64_t>(std::llround(3000 / (1 - std::exp(-3.0))));
  EXPECT_EQ(raw.sites[kept].counts.total_bytes, live);
  EXPECT_EQ(raw.sites[kept].counts.curr_bytes, live);
  EXPECT_EQ(raw.sites[kept].counts.gmax_bytes, live);
  EXPECT_EQ(raw.sites[freed].counts.total_bytes, 0u);
  EXPECT_EQ(raw.sites[freed].counts.total_blocks, 0u);
  EXPECT_EQ(raw.gmax_time, 4u);
}

// A bucket's bit stays set while any sampled block hashed to it is live, and only then.
TEST(HeapSampling, SampledAddressesKnowTheLiveBlocksOnly) {
  const auto addresses = std::make_unique<SampledAddresses>();
  const std::uintptr_t block = 0x7f0000001000;
  std::size_t unset = 0;
  for (std::uintptr_t other = 0x7f0000002000; other < 0x7f0000002000 + 1000 * 16; other += 16) {
    unset += addresses->may_contain(other) ? 0 : 1;
  }
  EXPECT_EQ(unset, 1000u);
  EXPECT_FALSE(addresses->may_contain(block));
  addresses->add(block);
  addresses->add(block); // freed and handed out again before the first free was recorded
  EXPECT_TRUE(addresses->may_contain(block));
  addresses->remove(block);
  EXPECT_TRUE(addresses->may_contain(block));
  addresses->remove(block);
  EXPECT_FALSE(addresses->may_contain(block));
  // Many blocks: every one is found while live, and none is left once all are gone.
  for (std::uintptr_t address = block; address < block + 100000 * 48; address += 48) {
    addresses->add(address);
  }
  for (std::uintptr_t address = block; address < block + 100000 * 48; address += 48) {
    ASSERT_TRUE(addresses->may_contain(address)) << address;
  }
  // Half of them gone: the others are still found (their bucket's bit and the summary's bit for
  // its thousand buckets stay set while one of them is live).
  for (std::uintptr_t address = block; address < block + 100000 * 48; address += 96) {
    addresses->remove(address);
  }
  for (std::uintptr_t address = block + 48; address < block + 100000 * 48; address += 96) {
    ASSERT_TRUE(addresses->may_contain(address)) << address;
  }
  for (std::uintptr_t address = block + 48; address < block + 100000 * 48; address += 96) {
    addresses->remove(address);
  }
  for (std::uintptr_t address = block; address < block + 100000 * 48; address += 48) {
    ASSERT_FALSE(addresses->may_contain(address)) << address;
  }
}

TEST(HeapSampling, PprofIsGzip) {
  HeapProfile profile;
  profile.frames = {"[root]", "0x401000: make(int) (a.cpp:3)", "0x402000: main (a.cpp:9)"};
  profile.frame_details = {
      {}, {0x401000, "make(int)", "a.cpp", 3, 0, false}, {0x402000, "main", "a.cpp", 9, 0, false}};
  profile.sites.push_back(HeapSite{4096, 4, 0, 0, 0, 0, 0, 1024, 1, {1, 2}});
  std::ostringstream out;
  exporters::write_pprof_heap(profile, 524288, out);
  const std::string bytes = out.str();
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
}

} // namespace
} // namespace hotscope::heap
