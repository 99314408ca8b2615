// A log-linear histogram of durations in integer nanoseconds, for percentiles without
// keeping samples (HdrHistogram's layout, simplified).
//
// Values below 64 ns have a bucket each (exact). Above, every power-of-two range
// [2^k, 2^(k+1)) is split into 64 equal sub-buckets of width 2^(k-6), so a bucket is
// never wider than 1/64 of its lower bound. percentile() returns the middle of the
// bucket that holds the nearest-rank sample, clamped to the exact min and max, so the
// reported value is within 1/128 (0.79%) of the true nearest-rank percentile.
//
// Memory: only the buckets between the smallest and largest value seen are kept (a
// zone whose durations span three octaves uses about 200 buckets); at most 3,776
// buckets for the whole uint64 range. record() allocates only when a value falls
// outside the range seen so far, never in the steady state.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace ringtrace::detail {

class LatencyHistogram {
 public:
  static constexpr unsigned sub_bucket_bits = 6;
  static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bucket_bits;  // 64

  static std::uint32_t bucket_of(std::uint64_t v) {
    if (v < sub_buckets) return static_cast<std::uint32_t>(v);
    const unsigned k = 63u - static_cast<unsigned>(std::countl_zero(v));  // >= 6
    const unsigned shift = k - sub_bucket_bits;
    const std::uint64_t sub = (v >> shift) - sub_buckets;  // [0, 64)
    return static_cast<std::uint32_t>(sub_buckets + shift * sub_buckets + sub);
  }
  // Smallest value that falls into `bucket`.
  static std::uint64_t bucket_low(std::uint32_t bucket) {
    if (bucket < sub_buckets) return bucket;
    const std::uint32_t shift = static_cast<std::uint32_t>((bucket - sub_buckets) / sub_buckets);
    const std::uint64_t sub = (bucket - sub_buckets) % sub_buckets;
    return (sub_buckets + sub) << shift;
  }
  static std::uint64_t bucket_width(std::uint32_t bucket) {
    if (bucket < sub_buckets) return 1;
    return std::uint64_t{1} << ((bucket - sub_buckets) / sub_buckets);
  }

  void record(std::uint64_t v) {
    const std::uint32_t b = bucket_of(v);
    if (count_ == 0) {
      min_ = max_ = v;
    } else {
      min_ = std::min(min_, v);
      max_ = std::max(max_, v);
    }
    ++count_;
    if (counts_.empty()) [[unlikely]] {
      base_ = b;
      counts_.assign(1, 0);
    } else if (b < base_) [[unlikely]] {
      counts_.insert(counts_.begin(), base_ - b, 0);
      base_ = b;
    } else if (b - base_ >= counts_.size()) [[unlikely]] {
      counts_.resize(b - base_ + 1, 0);
    }
    ++counts_[b - base_];
  }

  // Nearest-rank percentile (p in [0, 100]): the smallest recorded value such that at
  // least p% of the samples are <= it, approximated as described above. 0 when empty.
  std::uint64_t percentile(double p) const {
    if (count_ == 0) return 0;
    if (p <= 0) return min_;
    if (p >= 100) return max_;
    // rank = ceil(p / 100 * count), at least 1; computed in integers of 1e-6 percent
    // so that p50 of 2 samples is the first one (rank 1), as nearest-rank defines it.
    const auto micro = static_cast<std::uint64_t>(p * 1e6 + 0.5);  // p in millionths of a percent
    const unsigned __int128 scaled = static_cast<unsigned __int128>(micro) * count_;
    const unsigned __int128 denom = 100'000'000;
    std::uint64_t rank = static_cast<std::uint64_t>((scaled + denom - 1) / denom);
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const auto bucket = static_cast<std::uint32_t>(base_ + i);
        const std::uint64_t mid = bucket_low(bucket) + (bucket_width(bucket) - 1) / 2;
        return std::clamp(mid, min_, max_);
      }
    }
    return max_;
  }

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return min_; }
  std::uint64_t max() const { return max_; }
  std::size_t buckets_in_use() const { return counts_.size(); }

 private:
  std::vector<std::uint64_t> counts_;  // counts_[i]: bucket base_ + i
  std::uint32_t base_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace ringtrace::detail
