#include "windows.hpp"

#include <charconv>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "output_claims.hpp"  // a window never writes the session's files
#include "ringtrace/instrument.hpp"
#include "step_zones.hpp"   // Session::step()'s zones
#include "thread_book.hpp"  // window stats name threads folded meanwhile

namespace ringtrace::detail {

StepPlan plan_step(const std::optional<Schedule>& schedule, std::uint64_t step) {
  StepPlan plan;
  if (!schedule) {
    plan.last = ~std::uint64_t{0};
    return plan;
  }
  const Schedule& s = *schedule;
  const std::uint64_t skip = s.skip_first > 0 ? static_cast<std::uint64_t>(s.skip_first) : 0;
  const std::uint64_t wait = s.wait > 0 ? static_cast<std::uint64_t>(s.wait) : 0;
  const std::uint64_t warmup = s.warmup > 0 ? static_cast<std::uint64_t>(s.warmup) : 0;
  const std::uint64_t active = s.active > 0 ? static_cast<std::uint64_t>(s.active) : 1;
  if (step < skip) {
    plan.phase = StepPhase::skip;
    plan.until = skip;
    return plan;
  }
  const std::uint64_t cycle = wait + warmup + active;
  const std::uint64_t j = step - skip, c = j / cycle, r = j % cycle;
  if (s.repeat > 0 && c >= static_cast<std::uint64_t>(s.repeat)) {
    plan.phase = StepPhase::done;
    return plan;
  }
  const std::uint64_t cycle_start = skip + c * cycle;
  if (r < wait) {
    plan.phase = StepPhase::wait;
    plan.until = cycle_start + wait;
  } else if (r < wait + warmup) {
    plan.phase = StepPhase::warmup;
    plan.until = cycle_start + wait + warmup;
  } else {
    plan.phase = StepPhase::active;
    plan.window = c;
    plan.first = cycle_start + wait + warmup;
    plan.last = plan.first + active - 1;
    plan.until = plan.last + 1;
  }
  return plan;
}

namespace {

class WindowRouter final : public Exporter {
 public:
  WindowRouter(std::optional<Schedule> schedule, std::vector<WindowExporterFactory> factories,
               std::vector<std::filesystem::path> session_outputs)
      : schedule_(std::move(schedule)),
        factories_(std::move(factories)),
        session_outputs_(std::move(session_outputs)) {}

  void on_start(const TraceContext&) override {
    stacks_.clear();
    forwarded_.clear();
    window_.clear();
    in_window_ = false;
    windows_ = 0;
    step_of_site_.clear();
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    out_.clear();
    for (const Event& e : events) {
      book_.see(e.thread, context);
      route(e, context);
    }
    send(context);
  }

  void on_flush(const TraceContext& context) override {
    for (const auto& x : window_) x->on_flush(context);
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    out_.clear();
    if (in_window_) close_window(context.clock().stop_ns, context);
    send(context);
  }

 private:
  struct Open {
    SiteId site;
    std::uint8_t flags;
    std::uint64_t value;
    bool forwarded;
  };

  // The step a zone of `site` with `value` is, or -1: Session::step()'s zones are of the
  // one site "step" with the step number as value (step_zones.hpp); a stream built by
  // hand may name a site "step #N" (SiteOptions::step) instead.
  std::int64_t step_of(SiteId site, std::uint64_t value, const TraceContext& context) {
    if (site >= step_of_site_.size()) step_of_site_.resize(context.site_count(), kUnknown);
    std::int64_t& n = step_of_site_[site];
    if (n == kUnknown) {
      n = -1;
      const SiteInfo& info = context.site(site);
      if (is_step_site(info)) {
        n = kByValue;
      } else if ((info.options & SiteOptions::step) != 0 && std::strncmp(info.name, "step #", 6) == 0) {
        std::uint64_t v = 0;
        const char* end = info.name + std::strlen(info.name);
        if (std::from_chars(info.name + 6, end, v).ec == std::errc{}) n = static_cast<std::int64_t>(v);
      }
    }
    return n == kByValue ? static_cast<std::int64_t>(value & (~std::uint64_t{0} >> 1)) : n;
  }
  static constexpr std::int64_t kUnknown = -2, kByValue = -3;

  // The window's zones open on a thread are the top of its stack (a window forwards
  // what begins in it; what began before is below), so their count is the depth of the
  // next forwarded event: a counter, not a walk down a stack that may be deep.
  std::uint32_t forwarded_depth(ThreadId thread) const { return forwarded_[thread]; }

  void forward(Event e) {
    e.depth = forwarded_depth(e.thread) - (e.kind == EventKind::zone_begin ? 1 : 0);
    out_.push_back(e);
  }

  void route(const Event& e, const TraceContext& context) {
    if (e.thread >= stacks_.size()) {
      stacks_.resize(e.thread + 1);
      forwarded_.resize(e.thread + 1, 0);
    }
    std::vector<Open>& stack = stacks_[e.thread];
    switch (e.kind) {
      case EventKind::zone_begin: {
        const std::int64_t step = step_of(e.site, e.value.u, context);
        if (step >= 0) {
          const StepPlan plan = plan_step(schedule_, static_cast<std::uint64_t>(step));
          if (plan.phase == StepPhase::active && !in_window_) open_window(plan, e.time_ns, context);
        }
        stack.push_back(Open{e.site, e.flags, e.value.u, in_window_});
        if (in_window_) {
          ++forwarded_[e.thread];
          forward(e);
        }
        break;
      }
      case EventKind::zone_end: {
        if (stack.empty()) break;
        const Open open = stack.back();
        if (open.forwarded) {
          Event end = e;
          end.depth = forwarded_depth(e.thread) - 1;
          out_.push_back(end);
          --forwarded_[e.thread];
        }
        stack.pop_back();
        const std::int64_t step = step_of(open.site, open.value, context);
        if (step >= 0 && in_window_ && static_cast<std::uint64_t>(step) >= window_info_.last_step) {
          close_window(e.time_ns, context);
        }
        break;
      }
      case EventKind::arg:
      case EventKind::flow_out:
      case EventKind::flow_in:
        if (!stack.empty() && stack.back().forwarded) forward(e);
        break;
      default:  // instants, counters, drops, async spans: by time
        if (in_window_) forward(e);
        break;
    }
  }

  void open_window(const StepPlan& plan, std::uint64_t time_ns, const TraceContext& context) {
    send(context);
    window_info_ = WindowInfo{windows_++, plan.first, plan.last, time_ns, 0, {}};
    window_.clear();
    std::vector<std::shared_ptr<Exporter>> fresh = make_window_exporters(factories_, window_info_, session_outputs_);
    for (const auto& x : fresh) x->on_start(context);
    window_ = std::move(fresh);
    in_window_ = true;
    window_recorded_.assign(context.thread_count(), 0);
  }

  // Zones of the window still open are closed at `time_ns`, flagged; the exporters finish.
  void close_window(std::uint64_t time_ns, const TraceContext& context) {
    for (ThreadId t = 0; t < stacks_.size(); ++t) {
      std::vector<Open>& stack = stacks_[t];
      // The top forwarded_[t] zones, innermost first; depth counts the window's zones only.
      for (std::uint32_t depth = forwarded_[t]; depth-- > 0;) {
        Open& open = stack[stack.size() - forwarded_[t] + depth];
        Event end{time_ns,
                  open.site,
                  t,
                  EventKind::zone_end,
                  static_cast<std::uint8_t>(open.flags | EventFlags::closed_at_window_end),
                  0,
                  depth,
                  {}};
        end.value.u = open.value;
        out_.push_back(end);
        open.forwarded = false;  // its real end, later, belongs to no window
      }
      forwarded_[t] = 0;
    }
    send(context);
    window_info_.end_ns = time_ns;
    SessionStats stats;
    stats.clock = context.clock();
    stats.clock.start_ns = window_info_.begin_ns;
    stats.clock.stop_ns = time_ns;
    for (ThreadId t = 0; t < window_recorded_.size(); ++t) {
      if (window_recorded_[t] == 0) continue;
      const ThreadInfo& info = book_.info(t, context);
      stats.threads.push_back(ThreadStats{t, info.os_tid, info.name, window_recorded_[t], 0});
      stats.recorded += window_recorded_[t];
    }
    for (const auto& x : window_) x->on_finish(context, stats);
    window_.clear();
    in_window_ = false;
  }

  void send(const TraceContext& context) {
    if (out_.empty()) return;
    for (const Event& e : out_) {
      if (e.thread >= window_recorded_.size()) window_recorded_.resize(e.thread + 1, 0);
      if ((e.flags & EventFlags::closed_at_window_end) == 0 && e.kind != EventKind::dropped)
        ++window_recorded_[e.thread];
    }
    for (const auto& x : window_) x->on_events(out_, context);
    out_.clear();
  }

  std::optional<Schedule> schedule_;
  std::vector<WindowExporterFactory> factories_;
  std::vector<std::filesystem::path> session_outputs_;
  std::vector<std::vector<Open>> stacks_;
  std::vector<std::uint32_t> forwarded_;    // per thread: the window's zones open (the top of its stack)
  std::vector<std::int64_t> step_of_site_;  // -2 unknown, -1 not a step
  std::vector<std::shared_ptr<Exporter>> window_;
  WindowInfo window_info_;
  bool in_window_ = false;
  std::uint64_t windows_ = 0;
  std::vector<Event> out_;
  std::vector<std::uint64_t> window_recorded_;
  detail::ThreadBook book_;
};

}  // namespace

std::shared_ptr<Exporter> make_window_router(std::optional<Schedule> schedule,
                                             std::vector<WindowExporterFactory> factories,
                                             std::vector<std::filesystem::path> session_outputs) {
  return std::make_shared<WindowRouter>(std::move(schedule), std::move(factories), std::move(session_outputs));
}

std::vector<std::shared_ptr<Exporter>> make_window_exporters(
    const std::vector<WindowExporterFactory>& factories, const WindowInfo& info,
    const std::vector<std::filesystem::path>& session_outputs) {
  OutputClaims claims;
  for (const auto& path : session_outputs) claims.claim_path(path);
  std::vector<std::shared_ptr<Exporter>> out;
  for (const auto& factory : factories) {
    std::shared_ptr<Exporter> x = factory(info);
    if (!x) throw std::runtime_error("a window exporter factory returned no exporter");
    // Refused before anything starts: a file sink creates its file at its first write,
    // so a refused exporter leaves nothing behind, and the session's file stays whole.
    if (const std::optional<std::filesystem::path> clash = claims.claim(*x)) {
      throw std::invalid_argument("ringtrace: a window exporter writes " + clash->string() +
                                  ", which another exporter of this session or window writes; windows are off for "
                                  "the rest of the run");
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace ringtrace::detail
