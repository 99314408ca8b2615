// The timing loop and report of bench/bench_tail.cpp, for the peers of issue 36
// (bench/peers/run_tail_peers.sh): every zone timed with the TSC around it, 5 M zones per
// thread, flat out, the thread's first zone measured apart. No ringtrace in here: the
// histogram is bench_tail's (exact below 4096 ticks, then 64 buckets per power of two)
// plus the mean, which bench_tail does not report; the TSC's rate is measured against
// CLOCK_MONOTONIC_RAW over 200 ms (bench_tail takes ringtrace's calibration).
#pragma once
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace peers {

class TickHistogram {
 public:
  void add(std::uint64_t ticks) {
    ++count_;
    sum_ += ticks;
    max_ = std::max(max_, ticks);
    buckets_[bucket(ticks)] += 1;
  }
  void merge(const TickHistogram& o) {
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
    for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
  }
  std::uint64_t quantile(double q) const {
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(count_ - 1));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen > rank) return upper(i);
    }
    return max_;
  }
  std::uint64_t above(std::uint64_t ticks) const {
    std::uint64_t n = 0;
    for (std::size_t i = bucket(ticks) + 1; i < buckets_.size(); ++i) n += buckets_[i];
    return n;
  }
  std::uint64_t max() const { return max_; }
  double mean() const { return static_cast<double>(sum_) / static_cast<double>(count_); }

 private:
  static constexpr std::size_t kExact = 4096;
  static std::size_t bucket(std::uint64_t t) {
    if (t < kExact) return t;
    const unsigned log = 63 - static_cast<unsigned>(__builtin_clzll(t));
    const std::uint64_t sub = (t >> (log - 6)) & 63;
    return std::min<std::size_t>(kExact + (log - 12) * 64 + sub, kSize - 1);
  }
  static std::uint64_t upper(std::size_t i) {
    if (i < kExact) return i;
    const std::size_t log = 12 + (i - kExact) / 64, sub = (i - kExact) % 64;
    return (std::uint64_t{1} << log) + ((sub + 1) << (log - 6)) - 1;
  }
  static constexpr std::size_t kSize = kExact + 52 * 64;
  std::vector<std::uint64_t> buckets_ = std::vector<std::uint64_t>(kSize, 0);
  std::uint64_t count_ = 0, sum_ = 0, max_ = 0;
};

inline std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// TSC ticks per second over 200 ms.
inline double tsc_per_second() {
  const std::uint64_t n0 = monotonic_ns(), t0 = __rdtsc();
  while (monotonic_ns() - n0 < 200'000'000u) {}
  const std::uint64_t n1 = monotonic_ns(), t1 = __rdtsc();
  return static_cast<double>(t1 - t0) * 1e9 / static_cast<double>(n1 - n0);
}

constexpr int kZones = 5'000'000;

// Runs `threads` threads; each calls begin(t), times its first zone(t) apart, then
// kZones zones, then end(t). Prints one line:
//   ROW <label> p50_ns p99_ns p99.9_ns p99.99_ns max_us over_1us over_10us first_us wall_ms mean_ns
template <class Begin, class Zone, class End>
void run(const char* label, int threads, Begin begin, Zone zone, End end) {
  const double ticks_per_second = tsc_per_second();
  std::vector<TickHistogram> histograms(static_cast<std::size_t>(threads));
  std::vector<std::uint64_t> first(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  const std::uint64_t wall0 = monotonic_ns();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      TickHistogram& h = histograms[static_cast<std::size_t>(t)];
      begin(t);
      std::uint64_t a = __rdtsc();
      zone(t);
      first[static_cast<std::size_t>(t)] = __rdtsc() - a;
      for (int i = 0; i < kZones; ++i) {
        a = __rdtsc();
        zone(t);
        h.add(__rdtsc() - a);
      }
      end(t);
    });
  }
  for (std::thread& w : workers) w.join();
  const double wall_ms = static_cast<double>(monotonic_ns() - wall0) / 1e6;
  TickHistogram all;
  for (const TickHistogram& h : histograms) all.merge(h);
  const double ns = 1e9 / ticks_per_second;
  std::printf("ROW %s %.1f %.1f %.1f %.1f %.2f %llu %llu %.2f %.0f %.1f\n", label,
              static_cast<double>(all.quantile(0.5)) * ns, static_cast<double>(all.quantile(0.99)) * ns,
              static_cast<double>(all.quantile(0.999)) * ns, static_cast<double>(all.quantile(0.9999)) * ns,
              static_cast<double>(all.max()) * ns / 1000,
              static_cast<unsigned long long>(all.above(static_cast<std::uint64_t>(1000 / ns))),
              static_cast<unsigned long long>(all.above(static_cast<std::uint64_t>(10000 / ns))),
              static_cast<double>(*std::max_element(first.begin(), first.end())) * ns / 1000, wall_ms, all.mean() * ns);
  std::fflush(stdout);
}

}  // namespace peers
