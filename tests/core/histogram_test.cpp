#include "trace/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

using hotscope::trace::Histogram;

// The exact order statistic with the same rank rule as Histogram::quantile.
std::uint64_t exact_quantile(std::vector<std::uint64_t> values, double q) {
  std::sort(values.begin(), values.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

void expect_quantiles_within_one_percent(const std::vector<std::uint64_t>& values) {
  Histogram histogram;
  for (std::uint64_t v : values) {
    histogram.add(v);
  }
  ASSERT_EQ(histogram.count(), values.size());
  for (double q : {0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double exact = static_cast<double>(exact_quantile(values, q));
    const double reported = static_cast<double>(histogram.quantile(q));
    EXPECT_LE(std::abs(reported - exact), exact * 0.01) << "q=" << q << " exact=" << exact;
  }
}

TEST(Histogram, UniformPercentilesWithinOnePercent) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::uint64_t> dist(1, 5'000'000);
  std::vector<std::uint64_t> values(200'000);
  for (auto& v : values) {
    v = dist(rng);
  }
  expect_quantiles_within_one_percent(values);
}

TEST(Histogram, LogNormalPercentilesWithinOnePercent) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> dist(9.0, 2.0);
  std::vector<std::uint64_t> values(200'000);
  for (auto& v : values) {
    v = 1 + static_cast<std::uint64_t>(dist(rng));
  }
  expect_quantiles_within_one_percent(values);
}

TEST(Histogram, ExactBelow128AndAccurateUpToAnHour) {
  Histogram small;
  for (std::uint64_t v = 1; v <= 100; ++v) {
    small.add(v);
  }
  EXPECT_EQ(small.quantile(0.5), 50u);
  EXPECT_EQ(small.quantile(1.0), 100u);

  // 1 ns .. 1 h at 1 tick per ns, and an hour of 5 GHz ticks.
  for (std::uint64_t v :
       {1ull, 999ull, 123'456'789ull, 3'600'000'000'000ull, 18'000'000'000'000ull}) {
    Histogram one;
    one.add(v);
    const double reported = static_cast<double>(one.quantile(0.5));
    EXPECT_LE(std::abs(reported - static_cast<double>(v)), static_cast<double>(v) * 0.01) << v;
  }
}

TEST(Histogram, MergeEqualsAddingEverything) {
  Histogram a, b, all;
  for (std::uint64_t v = 1; v < 100'000; v += 7) {
    (v % 2 ? a : b).add(v);
    all.add(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.1, 0.5, 0.99}) {
    EXPECT_EQ(a.quantile(q), all.quantile(q));
  }
  Histogram copy = a;
  EXPECT_EQ(copy.quantile(0.5), a.quantile(0.5));
}

// The snapshot's p50..p999 come from one pass: the same values as one quantile() each.
TEST(Histogram, QuantilesInOnePassEqualOneAtATime) {
  std::mt19937_64 rng(4);
  std::lognormal_distribution<double> dist(8.0, 3.0);
  Histogram histogram;
  for (int i = 0; i < 50'000; ++i) {
    histogram.add(static_cast<std::uint64_t>(dist(rng)));
  }
  const std::vector<double> qs = {0.0, 0.5, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0};
  std::vector<std::uint64_t> values(qs.size(), 7);
  histogram.quantiles(qs, values);
  for (std::size_t i = 0; i < qs.size(); ++i) {
    EXPECT_EQ(values[i], histogram.quantile(qs[i])) << "q=" << qs[i];
  }
  EXPECT_LT(values.front(), values.back());

  Histogram empty;
  empty.quantiles(qs, values);
  EXPECT_EQ(values, std::vector<std::uint64_t>(qs.size(), 0));
}

// Blocks are counted as they are allocated, and a histogram moved from is empty.
TEST(Histogram, AllocatedBytesFollowTheBlocksAndMovesLeaveNothing) {
  Histogram histogram;
  EXPECT_EQ(histogram.allocated_bytes(), 0u);
  histogram.add(5);
  histogram.add(6);
  const std::size_t one_block = histogram.allocated_bytes();
  EXPECT_GT(one_block, 0u);
  histogram.add(1'000'000);
  EXPECT_EQ(histogram.allocated_bytes(), 2 * one_block);
  Histogram merged;
  merged.merge(histogram);
  EXPECT_EQ(merged.allocated_bytes(), 2 * one_block);
  EXPECT_EQ(merged.quantile(1.0), histogram.quantile(1.0));

  Histogram moved = std::move(histogram);
  EXPECT_EQ(moved.allocated_bytes(), 2 * one_block);
  EXPECT_EQ(moved.count(), 3u);
  EXPECT_EQ(histogram.allocated_bytes(), 0u); // NOLINT(bugprone-use-after-move): defined empty
  EXPECT_EQ(histogram.count(), 0u);
  EXPECT_EQ(histogram.quantile(0.5), 0u);
  histogram = std::move(moved);
  EXPECT_EQ(histogram.quantile(1.0), merged.quantile(1.0));
}

} // namespace

// Prometheus buckets come from counts_at_most: exact but for values within 0.4% of a bound.
TEST(Histogram, CountsAtMostBoundsMatchTheValuesUpToBucketWidth) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> dist(9.0, 3.0);
  std::vector<std::uint64_t> values(100'000);
  Histogram histogram;
  for (auto& v : values) {
    v = static_cast<std::uint64_t>(dist(rng));
    histogram.add(v);
  }
  const std::vector<std::uint64_t> bounds = {0, 5, 127, 128, 1'000, 25'000, 1'000'000, 1ull << 40};
  const std::vector<std::uint64_t> counts = histogram.counts_at_most(bounds);
  ASSERT_EQ(counts.size(), bounds.size());
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    const double bound = static_cast<double>(bounds[i]);
    const auto exact = std::count_if(values.begin(), values.end(),
                                     [&](std::uint64_t v) { return v <= bounds[i]; });
    const auto near = std::count_if(values.begin(), values.end(), [&](std::uint64_t v) {
      return bounds[i] >= 128 && std::abs(static_cast<double>(v) - bound) <= bound / 128;
    });
    EXPECT_LE(std::abs(static_cast<double>(counts[i]) - static_cast<double>(exact)),
              static_cast<double>(near))
        << "bound " << bounds[i];
  }
  EXPECT_EQ(counts.back(), values.size());
  EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
}
