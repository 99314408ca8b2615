// The statistics of `ringtrace diff`: see diff_stats.hpp.
#include "diff_stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace ringtrace::tool::stats {
namespace {

using Count = __int128;

// C(m + n, m) when it is below 2^125, else 0.
Count arrangements(std::size_t m, std::size_t n) {
  constexpr Count kLimit = Count{1} << 125;
  Count c = 1;
  for (std::size_t i = 1; i <= m; ++i) {
    const auto factor = static_cast<Count>(n + i);
    if (c > kLimit / factor) return 0;
    c = c * factor / static_cast<Count>(i);  // exact: C(n + i, i) = C(n + i - 1, i - 1) (n + i) / i
  }
  return c;
}

// How many arrangements of m values among m + n give each U (0 to m n): the coefficients
// of the Gaussian binomial [m + n choose m]_q, built by the q-Pascal rule
// [n + i choose i]_q = [n + i - 1 choose i - 1]_q (1 - q^(n + i)) / (1 - q^i), every
// step a polynomial with integer coefficients (exact in 128 bits below 2^125).
std::vector<Count> u_counts(std::size_t m, std::size_t n) {
  std::vector<Count> poly(m * n + 1, 0);
  poly[0] = 1;
  for (std::size_t i = 1; i <= m; ++i) {
    const std::size_t degree = i * n;  // of the result of this step
    for (std::size_t k = degree; k >= n + i && k <= degree; --k) poly[k] -= poly[k - (n + i)];
    for (std::size_t k = i; k <= degree; ++k) poly[k] += poly[k - i];
  }
  return poly;
}

// P(U' >= u) under the null hypothesis, exactly.
double exact_sf(std::size_t m, std::size_t n, double u, Count total) {
  const std::vector<Count> counts = u_counts(std::min(m, n), std::max(m, n));
  const auto from = static_cast<std::size_t>(std::ceil(u));
  Count at_least = 0;
  for (std::size_t k = from; k < counts.size(); ++k) at_least += counts[k];
  return static_cast<double>(static_cast<long double>(at_least) / static_cast<long double>(total));
}

}  // namespace

std::size_t quantile_rank(std::size_t n, double p) {
  if (n == 0) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n) - 1e-9));
  return std::clamp<std::size_t>(rank, 1, n);
}

std::uint64_t quantile(std::span<const std::uint64_t> sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[quantile_rank(sorted.size(), p) - 1];
}

UTest mann_whitney(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) {
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  // Ranks of the pooled values, ties at their mean rank: a merge of the sorted samples.
  double rank_sum_a = 0, tie_term = 0;
  std::size_t i = 0, j = 0, before = 0;
  while (i < a.size() || j < b.size()) {
    const std::uint64_t v = j == b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    std::size_t in_a = 0, in_b = 0;
    while (i < a.size() && a[i] == v) ++i, ++in_a;
    while (j < b.size() && b[j] == v) ++j, ++in_b;
    const double t = static_cast<double>(in_a + in_b);
    rank_sum_a += static_cast<double>(in_a) * (static_cast<double>(before) + (t + 1) / 2);
    tie_term += t * t * t - t;
    before += in_a + in_b;
  }
  UTest out;
  out.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double u = std::max(out.u, n1 * n2 - out.u);
  const std::size_t small = std::min(a.size(), b.size()), large = std::max(a.size(), b.size());
  if ((small <= 8) && tie_term == 0) {
    const Count total = arrangements(small, large);
    if (total != 0) {
      out.exact = true;
      out.p = std::min(1.0, 2 * exact_sf(small, large, u, total));
      return out;
    }
  }
  const double n = n1 + n2;
  const double variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(variance > 0)) return out;  // every value tied: no evidence, p = 1
  const double z = (u - n1 * n2 / 2 - 0.5) / std::sqrt(variance);
  out.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 P(Z > z)
  return out;
}

Interval bootstrap_change(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b, double p,
                          double confidence, std::size_t resamples, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  // One resample's p-quantile of a sorted sample of n: its value at rank ceil(n u), u ~ Beta(r, n - r + 1).
  const auto draw = [&random, p](std::span<const std::uint64_t> sorted) {
    const std::size_t n = sorted.size(), r = quantile_rank(n, p);
    std::gamma_distribution<double> x(static_cast<double>(r)), y(static_cast<double>(n - r + 1));
    const double gx = x(random), gy = y(random);
    const double u = gx / (gx + gy);
    const auto rank = static_cast<std::size_t>(std::ceil(u * static_cast<double>(n)));
    return static_cast<double>(sorted[std::clamp<std::size_t>(rank, 1, n) - 1]);
  };
  std::vector<double> changes;
  changes.reserve(resamples);
  for (std::size_t k = 0; k < resamples; ++k) {
    const double base = draw(a), next = draw(b);
    changes.push_back(base > 0 ? next / base - 1 : 0);
  }
  std::sort(changes.begin(), changes.end());
  const double tail = (1 - confidence) / 2;
  Interval out;
  out.low = changes[quantile_rank(changes.size(), tail) - 1];
  out.high = changes[quantile_rank(changes.size(), 1 - tail) - 1];
  return out;
}

}  // namespace ringtrace::tool::stats
