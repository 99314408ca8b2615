// The statistics of `ringtrace diff` (diff_stats.cpp): quantiles of zone durations, the
// Mann-Whitney U test as Google Benchmark's compare.py runs it (scipy's mannwhitneyu,
// two-sided), and a bootstrap interval for the relative change of a quantile. Pure
// functions of sorted samples; docs/guide.md ("Comparing recordings") says the method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringtrace::tool::stats {

// The rank (1-based) of the nearest-rank p-quantile of n values: ceil(p * n), at least 1.
std::size_t quantile_rank(std::size_t n, double p);
// The nearest-rank p-quantile (p in (0, 1]) of sorted values: the smallest value such that
// at least p of them are <= it (the key-averages table's definition); 0 when empty.
std::uint64_t quantile(std::span<const std::uint64_t> sorted, double p);

// compare.py's rules for its U test: no test with fewer than 2 samples on a side, and a
// result it calls unreliable with fewer than 9 (UTEST_MIN_REPETITIONS,
// UTEST_OPTIMAL_REPETITIONS), at its default alpha.
inline constexpr std::size_t kUTestMinSamples = 2;
inline constexpr std::size_t kUTestReliableSamples = 9;
inline constexpr double kDefaultAlpha = 0.05;

struct UTest {
  double u = 0;        // U of the first sample (scipy's statistic): pairs (a, b) with a > b, ties 1/2
  double p = 1;        // two-sided p-value
  bool exact = false;  // from U's exact distribution (a side of at most 8, no ties), else the normal one
};
// The two-sided Mann-Whitney U test of sorted samples a and b (each at least one value),
// as scipy.stats.mannwhitneyu(a, b) with its defaults computes it: midranks for ties; the
// exact null distribution when a side has at most 8 values and no value is tied (here
// also only while the count of its arrangements fits 125 bits: the normal one beyond);
// else the normal approximation with the tie correction and the continuity correction;
// p = 2 P(U' >= max(U, n_a n_b - U)), at most 1.
UTest mann_whitney(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b);

struct Interval {
  double low = 0, high = 0;
};
// A percentile-bootstrap interval (confidence e.g. 0.95) for quantile(b, p) / quantile(a, p)
// - 1 from `resamples` resamples of each side. A resample's p-quantile is drawn exactly
// without making the resample: the r-th smallest of n draws from a sample is its value
// at rank ceil(n u), u the r-th smallest of n uniform draws, which is Beta(r, n - r + 1).
// Deterministic for a seed. Both samples non-empty, quantile(a, p) > 0.
Interval bootstrap_change(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b, double p,
                          double confidence, std::size_t resamples, std::uint64_t seed);

}  // namespace ringtrace::tool::stats
