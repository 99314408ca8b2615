// A log-linear histogram of durations in integer nanoseconds, for percentiles without
// keeping samples (HdrHistogram's layout, simplified).
//
// Values below 64 ns have a bucket each (exact). Above, every power-of-two range
// [2^k, 2^(k+1)) is split into 64 equal sub-buckets of width 2^(k-6), so a bucket is
// never wider than 1/64 of its lower bound. percentile() returns the middle of the
// bucket that holds the nearest-rank sample, clamped to the exact min and max, so the
// reported value is within 1/128 (0.79%) of the true nearest-rank percentile.
//
// Memory: buckets are kept for the range between the smallest and largest value seen,
// plus slack so that a growing range is copied a logarithmic number of times (a zone
// whose durations span three octaves uses about 200 buckets); at most 3,776 buckets for
// the whole uint64 range. Allocation happens only when a value falls outside the range
// allocated so far, never in the steady state.
//
// The object itself is 40 bytes, so that an owner can keep its other per-group numbers
// in the same cache line. record() is add() followed by increment(): an owner with many
// histograms touched in random order can call add(), prefetch slot(bucket) and do the
// increment() a few calls later, when the line has arrived (the key-averages table does).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>

namespace ringtrace::detail {

class LatencyHistogram {
 public:
  static constexpr unsigned sub_bucket_bits = 6;
  static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bucket_bits;  // 64

  // Branch-free (durations straddle 64 ns all the time): below 64, shift is 0 and the
  // bucket is v; above, shift = k - 6 and (v >> shift) is 64 + the sub-bucket, so the
  // same sum gives 64 + shift * 64 + sub.
  static std::uint32_t bucket_of(std::uint64_t v) {
    const unsigned k = 63u - static_cast<unsigned>(std::countl_zero(v | 1));
    const unsigned shift = k > sub_bucket_bits ? k - sub_bucket_bits : 0;
    return static_cast<std::uint32_t>((v >> shift) + (std::uint64_t{shift} << sub_bucket_bits));
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

  LatencyHistogram() = default;
  LatencyHistogram(LatencyHistogram&& other) noexcept { *this = std::move(other); }
  LatencyHistogram& operator=(LatencyHistogram&& other) noexcept {
    if (this != &other) {
      delete[] counts_;
      counts_ = std::exchange(other.counts_, nullptr);
      base_ = std::exchange(other.base_, 0);
      size_ = std::exchange(other.size_, 0);
      count_ = std::exchange(other.count_, 0);
      min_ = std::exchange(other.min_, 0);
      max_ = std::exchange(other.max_, 0);
    }
    return *this;
  }
  ~LatencyHistogram() { delete[] counts_; }
  // A copy (copies are explicit: an owner keeps many and never copies one by accident).
  LatencyHistogram clone() const {
    LatencyHistogram h;
    if (size_ != 0) {
      h.counts_ = new std::uint64_t[size_];
      std::copy(counts_, counts_ + size_, h.counts_);
    }
    h.base_ = base_;
    h.size_ = size_;
    h.count_ = count_;
    h.min_ = min_;
    h.max_ = max_;
    return h;
  }

  void record(std::uint64_t v) { increment(add(v)); }
  // v counted `weight` times (an estimate for a sampled zone); weight >= 1.
  void record(std::uint64_t v, std::uint64_t weight) {
    const std::uint32_t b = add(v);
    count_ += weight - 1;
    counts_[b - base_] += weight;
  }

  // Counts v in count, min and max and makes room for its bucket, which it returns; the
  // bucket's own count is raised by increment(bucket), which must follow before the
  // next percentile() (other add() calls may come in between).
  std::uint32_t add(std::uint64_t v) {
    const std::uint32_t b = bucket_of(v);
    if (count_ == 0) {
      min_ = max_ = v;
    } else {
      min_ = std::min(min_, v);
      max_ = std::max(max_, v);
    }
    ++count_;
    if (b - base_ >= size_) [[unlikely]]
      grow(b);  // also b < base_: unsigned wrap
    return b;
  }
  void increment(std::uint32_t bucket) { ++counts_[bucket - base_]; }

  // Adds every value of `other` (as if each had been recorded here): the histogram of
  // both samples, bucket for bucket.
  void merge(const LatencyHistogram& other) {
    if (other.count_ == 0) return;
    const std::uint32_t low = bucket_of(other.min_), high = bucket_of(other.max_);
    min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
    if (low - base_ >= size_) grow(low);  // also low < base_: unsigned wrap
    if (high - base_ >= size_) grow(high);
    for (std::uint32_t b = low; b <= high; ++b) counts_[b - base_] += other.counts_[b - other.base_];
    count_ += other.count_;
  }
  // Where increment(bucket) writes, for a prefetch; bucket must come from add().
  const std::uint64_t* slot(std::uint32_t bucket) const { return counts_ + (bucket - base_); }

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
    for (std::size_t i = 0; i < size_; ++i) {
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
  // Buckets between the smallest and the largest value seen.
  std::size_t buckets_in_use() const { return count_ == 0 ? 0 : bucket_of(max_) - bucket_of(min_) + 1; }
  std::size_t buckets_allocated() const { return size_; }

 private:
  static constexpr std::uint32_t kBuckets = 3776;  // bucket_of(UINT64_MAX) + 1

  [[gnu::noinline]] void grow(std::uint32_t b) {
    std::uint32_t low = b, high = b + 1;  // [low, high) must hold b and the current range
    if (size_ != 0) {
      low = std::min(low, base_);
      high = std::max(high, base_ + size_);
    }
    // Slack on the side that grew, half the new span (at least 32 buckets: a zone's
    // durations usually spread over an octave or more, which would otherwise take
    // several copies to cover).
    const std::uint32_t slack = std::max<std::uint32_t>(32, (high - low) / 2);
    if (size_ == 0 || b < base_) low = low > slack ? low - slack : 0;
    if (size_ == 0 || b >= base_ + size_) high = std::min(kBuckets, high + slack);
    auto* counts = new std::uint64_t[high - low]();
    if (size_ != 0) std::copy(counts_, counts_ + size_, counts + (base_ - low));
    delete[] counts_;
    counts_ = counts;
    base_ = low;
    size_ = high - low;
  }

  std::uint64_t* counts_ = nullptr;  // counts_[i]: bucket base_ + i, for i < size_
  std::uint32_t base_ = 0;
  std::uint32_t size_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace ringtrace::detail
