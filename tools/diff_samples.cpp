// `ringtrace diff`'s reading: each zone's durations, streamed from the reader, bounded per
// zone (diff_samples.hpp).
#include "diff_samples.hpp"

#include <algorithm>
#include <functional>  // std::ref
#include <map>
#include <optional>
#include <random>
#include <span>
#include <variant>

#include "commands.hpp"
#include "diff_stats.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "zone_tracker.hpp"  // exporters/common: the zone stacks every exporter shares

namespace ringtrace::tool {
namespace {

// The benchmark a file is the trace of: ringtrace::benchmark's metadata "benchmark".
std::string benchmark_of(const TraceContext& context) {
  for (const TraceMetadata& m : context.metadata()) {
    if (m.key == "benchmark" && std::holds_alternative<std::string>(m.value)) return std::get<std::string>(m.value);
  }
  return {};
}

// One file's zones into a side's: each closed zone's duration into its name's calls.
class CallCollector final : public Exporter {
 public:
  CallCollector(SideCalls& side, std::size_t cap, std::mt19937_64& random) : side_(side), cap_(cap), random_(random) {}

  void on_start(const TraceContext&) override {
    tracker_ = detail::ZoneTracker{};
    by_site_.clear();
    benchmark_.reset();
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) {
      if (e.kind != EventKind::zone_begin && e.kind != EventKind::zone_end) continue;
      tracker_.feed(e, [&](const detail::ClosedZone& z, std::span<const detail::OpenZone>) { add(z, context); });
    }
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    tracker_.close_open(context.clock().stop_ns,
                        [&](const detail::ClosedZone& z, std::span<const detail::OpenZone>) { add(z, context); });
    for (auto& [calls, run] : runs_) {
      std::sort(run.kept.begin(), run.kept.end());
      calls->run_medians.push_back(stats::quantile(run.kept, 0.5));
    }
    runs_.clear();
  }

 private:
  void add(const detail::ClosedZone& z, const TraceContext& context) {
    if ((z.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0) {
      ++side_.unfinished;
      return;
    }
    Site& site = of_site(z.site, context);
    keep_sampled(site.calls->kept, site.calls->calls, z.total_ns, cap_, random_);
    ++site.calls->calls;
    keep_sampled(site.run->kept, site.run->calls, z.total_ns, cap_, random_);
    ++site.run->calls;
  }

  // A zone's calls in this file alone, for its median.
  struct RunCalls {
    std::vector<std::uint64_t> kept;
    std::uint64_t calls = 0;
  };
  struct Site {
    ZoneCalls* calls = nullptr;
    RunCalls* run = nullptr;
  };

  Site& of_site(SiteId site, const TraceContext& context) {
    if (site >= by_site_.size()) by_site_.resize(std::max<std::size_t>(site + 1, context.site_count()));
    if (by_site_[site].calls == nullptr) {
      // The metadata frames precede the first events (the reader has them once events come).
      if (!benchmark_) benchmark_ = benchmark_of(context);
      const SiteInfo& info = context.site(site);
      // Session::step()'s zones, one per step: one row for them all, as report --fold-steps.
      std::string name = (info.options & SiteOptions::step) != 0 ? "step #*" : std::string(info.name);
      ZoneCalls* calls = &side_.zones[ZoneKey{*benchmark_, std::move(name)}];  // std::map: a node's address stays
      by_site_[site] = Site{calls, &runs_[calls]};
    }
    return by_site_[site];
  }

  SideCalls& side_;
  std::size_t cap_;
  std::mt19937_64& random_;
  detail::ZoneTracker tracker_;
  std::vector<Site> by_site_;
  std::map<ZoneCalls*, RunCalls> runs_;   // this file's calls of each zone
  std::optional<std::string> benchmark_;  // looked up at the file's first zone
};

}  // namespace

SideCalls read_side(const std::vector<std::string>& files, std::size_t cap, bool rings, std::uint64_t seed) {
  SideCalls side;
  std::mt19937_64 random(seed);
  for (const std::string& file : files) {
    check_input(file, rings);
    CallCollector collector(side, cap, random);
    ProgressBar bar("ringtrace diff");
    ReplayOptions options;
    options.progress = std::ref(bar);
    options.recover_rings = rings;
    if (rings) options.rings = ring_file_of(file);
    Exporter* const one[] = {&collector};
    const ReplayResult result = replay_file(file, one, options);
    side.files.push_back(file);
    side.events += result.events;
    if (!result.problem.empty()) side.problems.push_back(file + ": " + result.problem);
  }
  return side;
}

}  // namespace ringtrace::tool
