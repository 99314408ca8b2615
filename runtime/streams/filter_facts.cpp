// What the filter stage says about itself (the trace metadata its exporters write, the
// line the tool prints), and the Exporter around it (stream_filter.cpp has its steps).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "stream_filter_impl.hpp"

namespace ringtrace {
namespace {

// 1.234 s, 12.345 ms, 123.456 us, 789 ns (as `ringtrace info` writes durations).
std::string duration_text(std::uint64_t ns) {
  char text[64];
  if (ns >= 1000000000u) {
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  } else if (ns >= 1000000u) {
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  } else if (ns >= 1000u) {
    std::snprintf(text, sizeof text, "%.3f us", static_cast<double>(ns) / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  }
  return text;
}

std::string thousands(std::uint64_t n) {
  std::string digits = std::to_string(n);
  for (std::size_t at = digits.size(); at > 3; at -= 3) digits.insert(at - 3, 1, ',');
  return digits;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

std::string bound_text(const TimeBound& b) {
  return b.from_start ? duration_text(b.ns) + " after the start" : std::to_string(b.ns) + " ns";
}

constexpr std::size_t kNamedShort = 20;  // names of short zones in the metadata; the rest summed

}  // namespace

FilterCounts StreamFilter::Impl::current_counts() const {
  FilterCounts n = run.counts;
  if (run.gate) {
    n.by_duration = run.gate->short_zones();
    n.other_events = run.counts.other_events + run.gate->attached_dropped();
    n.forced = run.gate->forced();
  }
  return n;
}

std::string StreamFilter::Impl::settings() const {
  std::vector<std::string> parts;
  const FilterOptions& o = options;
  if (o.from && o.to) {
    parts.push_back("time from " + bound_text(*o.from) + " to " + bound_text(*o.to));
  } else if (o.from) {
    parts.push_back("time from " + bound_text(*o.from));
  } else if (o.to) {
    parts.push_back("time up to " + bound_text(*o.to));
  }
  if (!o.threads.empty()) parts.push_back("threads " + joined(o.threads, ", "));
  if (!o.zones.empty()) parts.push_back("zones matching " + joined(o.zones, " or "));
  if (!o.excludes.empty()) parts.push_back("excluding " + joined(o.excludes, " or "));
  if (o.max_depth != 0) parts.push_back("at most " + std::to_string(o.max_depth) + " deep");
  if (o.min_duration_ns != 0) parts.push_back("zones of at least " + duration_text(o.min_duration_ns));
  return joined(parts, ", ");
}

std::string StreamFilter::Impl::summary() const {
  const FilterCounts n = current_counts();
  std::vector<std::string> why;
  const auto reason = [&](std::uint64_t count, const std::string& text) {
    if (count != 0) why.push_back(thousands(count) + " " + text);
  };
  reason(n.by_thread, "of other threads");
  reason(n.by_time, "outside the time range");
  reason(n.by_exclude, "excluded");
  reason(n.by_zone, "outside the zones asked for");
  reason(n.by_depth, "deeper than " + std::to_string(options.max_depth));
  reason(n.by_duration, "shorter than " + duration_text(options.min_duration_ns));
  reason(n.past_bound, "nested past 65,536 deep");
  std::string text = "filters (" + settings() + "): " + thousands(n.zones_left_out()) + " of " + thousands(n.zones_in) +
                     " zones left out";
  if (!why.empty()) text += " (" + joined(why, ", ") + ")";
  text += ", " + thousands(n.other_events) + " other events left out";
  if (n.cut_at_start != 0 || n.cut_at_end != 0) {
    text += "; zones cut at the time range: " + thousands(n.cut_at_start) + " at its start, " +
            thousands(n.cut_at_end) + " at its end";
  }
  if (n.held_lost != 0) text += "; " + thousands(n.held_lost) + " values of zones cut at its start not kept";
  if (n.forced != 0) {
    text += "; " + thousands(n.forced) + " zones kept undecided (the min-duration hold of " +
            thousands(detail::kMaxHeldEvents) + " events was full)";
  }
  return text;
}

void StreamFilter::Impl::add_facts(std::vector<TraceMetadata>& facts) const {
  const FilterCounts n = current_counts();
  const auto fact = [&](const std::string& key, std::uint64_t value) {
    facts.push_back({"filter." + key, static_cast<std::int64_t>(value)});
  };
  facts.push_back({"filter", summary()});
  if (run.has_from) fact("time_from_ns", run.from_ns);
  if (run.has_to) fact("time_to_ns", run.to_ns);
  if (options.min_duration_ns != 0) fact("min_duration_ns", options.min_duration_ns);
  if (options.max_depth != 0) fact("max_depth", options.max_depth);
  fact("zones_in", n.zones_in);
  fact("zones_out", n.zones_out);
  fact("zones_left_out", n.zones_left_out());
  fact("zones_left_out.thread", n.by_thread);
  fact("zones_left_out.time", n.by_time);
  fact("zones_left_out.exclude", n.by_exclude);
  fact("zones_left_out.zone", n.by_zone);
  fact("zones_left_out.max_depth", n.by_depth);
  fact("zones_left_out.min_duration", n.by_duration);
  fact("zones_left_out.past_bound", n.past_bound);
  fact("other_events_left_out", n.other_events);
  fact("zones_cut_at_start", n.cut_at_start);
  fact("zones_cut_at_end", n.cut_at_end);
  if (n.forced != 0) fact("zones_kept_undecided", n.forced);
  if (n.held_lost != 0) fact("values_not_kept", n.held_lost);
  // The short zones by name, most first: during the run from the gate's counts by site.
  if (!run.gate || base == nullptr) return;
  std::vector<std::pair<std::string, std::uint64_t>> by_name;
  const std::vector<std::uint64_t>& by_site = run.gate->short_by_site();
  for (SiteId s = 0; s < by_site.size(); ++s) {
    if (by_site[s] != 0) by_name.emplace_back(base->site(s).name, by_site[s]);
  }
  std::sort(by_name.begin(), by_name.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::uint64_t rest = 0;
  for (std::size_t i = 0; i < by_name.size(); ++i) {
    if (i < kNamedShort) {
      fact("min_duration." + by_name[i].first, by_name[i].second);
    } else {
      rest += by_name[i].second;
    }
  }
  if (rest != 0) fact("min_duration.(other names)", rest);
}

StreamFilter::StreamFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamFilter::~StreamFilter() = default;

void StreamFilter::on_start(const TraceContext& context) {
  impl_->start(context);
  for (const auto& x : impl_->downstream) x->on_start(impl_->context);
}

void StreamFilter::on_events(std::span<const Event> events, const TraceContext& context) {
  impl_->base = &context;
  for (const Event& e : events) impl_->feed(e);
  impl_->flush();
}

void StreamFilter::on_flush(const TraceContext& context) {
  impl_->base = &context;
  impl_->flush();
  for (const auto& x : impl_->downstream) x->on_flush(impl_->context);
}

void StreamFilter::on_finish(const TraceContext& context, const SessionStats& stats) { impl_->finish(context, stats); }

std::vector<std::filesystem::path> StreamFilter::output_paths() const {
  std::vector<std::filesystem::path> paths;
  for (const auto& x : impl_->downstream) {
    for (auto& p : x->output_paths()) paths.push_back(std::move(p));
  }
  return paths;
}

const FilterCounts& StreamFilter::counts() const {
  impl_->reported = impl_->current_counts();
  return impl_->reported;
}

std::string StreamFilter::summary() const { return impl_->summary(); }

std::shared_ptr<StreamFilter> stream_filter(FilterOptions options, std::vector<std::shared_ptr<Exporter>> downstream) {
  return std::make_shared<StreamFilter>(
      std::make_unique<StreamFilter::Impl>(std::move(options), std::move(downstream)));
}

}  // namespace ringtrace
