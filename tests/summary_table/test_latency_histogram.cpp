// The p50/p99 histogram: bucket layout, exactness below 64 ns, the documented error
// bound (1/128 of the true nearest-rank percentile) on known distributions, and memory
// that depends on the range of values, not their number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "latency_histogram.hpp"

namespace ringtrace::detail {
namespace {

std::uint64_t nearest_rank(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

void expect_within_bound(const LatencyHistogram& h, const std::vector<std::uint64_t>& values, double p) {
  const std::uint64_t truth = nearest_rank(values, p);
  const std::uint64_t got = h.percentile(p);
  const double error = std::abs(static_cast<double>(got) - static_cast<double>(truth));
  EXPECT_LE(error, static_cast<double>(truth) / 128.0) << "p" << p << " truth " << truth << " got " << got;
}

TEST(LatencyHistogram, BucketsTileTheRangeWithBoundedWidth) {
  for (std::uint32_t b = 0; b < 3776; ++b) {
    const std::uint64_t low = LatencyHistogram::bucket_low(b);
    const std::uint64_t width = LatencyHistogram::bucket_width(b);
    ASSERT_EQ(LatencyHistogram::bucket_of(low), b);
    ASSERT_EQ(LatencyHistogram::bucket_of(low + width - 1), b);
    if (b + 1 < 3776) {
      ASSERT_EQ(LatencyHistogram::bucket_low(b + 1), low + width) << b;
    }
    if (b >= 64) {
      ASSERT_LE(width * 64, low) << b;  // width <= 1/64 of the lower bound
    }
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(std::numeric_limits<std::uint64_t>::max()), 3775u);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 60; ++v) h.record(v);
  EXPECT_EQ(h.percentile(50), 30u);
  EXPECT_EQ(h.percentile(99), 60u);  // rank ceil(59.4) = 60
  EXPECT_EQ(h.percentile(1), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 60u);
  EXPECT_EQ(h.count(), 60u);
  LatencyHistogram two;
  two.record(10);
  two.record(20);
  EXPECT_EQ(two.percentile(50), 10u);  // nearest rank: the first of two
  EXPECT_EQ(LatencyHistogram().percentile(50), 0u);
}

TEST(LatencyHistogram, UniformDistributionWithinTheBound) {
  LatencyHistogram h;
  std::vector<std::uint64_t> values;
  for (std::uint64_t v = 1; v <= 100'000; ++v) {
    values.push_back(v);
    h.record(v);
  }
  EXPECT_EQ(nearest_rank(values, 50), 50'000u);
  EXPECT_EQ(nearest_rank(values, 99), 99'000u);
  for (const double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) expect_within_bound(h, values, p);
  // The concrete values: 50,000 is in the bucket [49,664, 50,175] (width 512), 99,000
  // in [98,304, 99,327] (width 1,024); the middles are reported.
  EXPECT_EQ(h.percentile(50), 49'919u);
  EXPECT_EQ(h.percentile(99), 98'815u);
}

TEST(LatencyHistogram, LogNormalDistributionWithinTheBound) {
  std::mt19937_64 rng(12345);
  std::lognormal_distribution<double> dist(std::log(20'000.0), 1.5);
  LatencyHistogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  for (const double p : {0.1, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.99}) expect_within_bound(h, values, p);
  EXPECT_EQ(h.percentile(0), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(h.percentile(100), *std::max_element(values.begin(), values.end()));
}

TEST(LatencyHistogram, MemoryDependsOnTheRangeNotTheCount) {
  LatencyHistogram h;
  for (int i = 0; i < 1'000'000; ++i) h.record(1000 + static_cast<std::uint64_t>(i % 7000));
  // [1000, 7999]: from the bucket of 1000 to the bucket of 7999, three octaves.
  EXPECT_EQ(h.buckets_in_use(), LatencyHistogram::bucket_of(7999) - LatencyHistogram::bucket_of(1000) + 1u);
  EXPECT_LE(h.buckets_in_use(), 3u * 64u);
  EXPECT_LE(h.buckets_allocated(), 2 * h.buckets_in_use() + 64);  // slack for growth, bounded
  h.record(0);                                                    // grows at the front
  h.record(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(h.buckets_in_use(), 3776u);
  EXPECT_EQ(h.buckets_allocated(), 3776u);
  EXPECT_EQ(h.percentile(100), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(h.percentile(0), 0u);
}

// The table defers increment() past later add() calls (to prefetch the bucket); growth at
// either end in between must not lose or misplace the deferred counts.
TEST(LatencyHistogram, DeferredIncrementsSurviveGrowth) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> values;
  LatencyHistogram deferred, direct;
  std::vector<std::uint32_t> pending;
  for (int i = 0; i < 20'000; ++i) {
    // Ranges that widen in both directions as the run goes on.
    const std::uint64_t v = (rng() % (std::uint64_t{1} << (i % 40))) + (i % 3 == 0 ? 0 : 5000);
    values.push_back(v);
    direct.record(v);
    pending.push_back(deferred.add(v));
    if (pending.size() == 16) {
      for (const std::uint32_t b : pending) deferred.increment(b);
      pending.clear();
    }
  }
  for (const std::uint32_t b : pending) deferred.increment(b);
  for (const double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    EXPECT_EQ(deferred.percentile(p), direct.percentile(p)) << p;
    expect_within_bound(deferred, values, p);
  }
  EXPECT_EQ(deferred.count(), values.size());
  EXPECT_EQ(deferred.min(), direct.min());
  EXPECT_EQ(deferred.max(), direct.max());
}

}  // namespace
}  // namespace ringtrace::detail
