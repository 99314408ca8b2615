// The straggler view: per step, each process's step time and the slowest process
// (include/ringtrace/exporters/stragglers.hpp).
#include "ringtrace/exporters/stragglers.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "report_text.hpp"
#include "step_zones.hpp"

namespace ringtrace {
namespace {

namespace report = detail::report;

class Stragglers final : public StragglerExporter {
 public:
  Stragglers(std::ostream& out, StragglerOptions options) : out_(out), options_(options) {}

  void on_start(const TraceContext&) override { run_ = Run{}; }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) {
      if ((e.kind != EventKind::zone_begin && e.kind != EventKind::zone_end) ||
          !run_.step_sites.is_step(e.site, context))
        continue;
      Process& p = process_of(e.thread, context);
      if (e.kind == EventKind::zone_begin) {
        p.open = true;
        p.open_step = e.value.u;
        p.begin_ns = e.time_ns;
        continue;
      }
      if (!p.open || p.open_step != e.value.u) continue;
      p.open = false;
      if ((e.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0) {
        ++run_.result.unfinished;
        continue;
      }
      p.steps[e.value.u] = {e.time_ns - p.begin_ns, e.time_ns};
    }
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    StepTimes& r = run_.result;
    std::map<std::uint64_t, std::size_t> row_of;
    for (const Process& p : run_.processes) {
      for (const auto& [step, times] : p.steps) row_of.emplace(step, 0);
    }
    r.processes.clear();
    for (const Process& p : run_.processes) r.processes.push_back({p.pid, context.process_name_of(p.pid), 0});
    std::size_t next = 0;
    for (auto& [step, row] : row_of) {
      row = next++;
      StepRow& s = r.steps.emplace_back();
      s.step = step;
      s.duration_ns.assign(run_.processes.size(), kNoStep);
      s.end_ns.assign(run_.processes.size(), kNoStep);
    }
    for (std::size_t i = 0; i < run_.processes.size(); ++i) {
      for (const auto& [step, times] : run_.processes[i].steps) {
        StepRow& s = r.steps[row_of[step]];
        s.duration_ns[i] = times.first;
        s.end_ns[i] = times.second;
      }
    }
    for (StepRow& s : r.steps) {
      std::uint64_t shortest = kNoStep, earliest = kNoStep, latest = 0;
      std::size_t present = 0;
      for (std::size_t i = 0; i < s.duration_ns.size(); ++i) {
        if (s.duration_ns[i] == kNoStep) continue;
        ++present;
        if (s.duration_ns[s.slowest] == kNoStep || s.duration_ns[i] > s.duration_ns[s.slowest]) s.slowest = i;
        shortest = std::min(shortest, s.duration_ns[i]);
        earliest = std::min(earliest, s.end_ns[i]);
        latest = std::max(latest, s.end_ns[i]);
      }
      s.spread_ns = s.duration_ns[s.slowest] - shortest;
      s.ends_apart_ns = latest - earliest;
      if (present > 1) ++r.processes[s.slowest].slowest;
    }
    write(r);
  }

  const StepTimes& steps() const override { return run_.result; }

 private:
  struct Process {
    std::uint32_t pid = 0;
    bool open = false;
    std::uint64_t open_step = 0, begin_ns = 0;
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> steps;  // step: duration, end
  };
  struct Run {
    detail::StepSites step_sites;
    std::vector<Process> processes;
    std::map<std::uint32_t, std::size_t> index;  // by pid
    StepTimes result;
  };

  Process& process_of(ThreadId thread, const TraceContext& context) {
    std::uint32_t pid = context.thread(thread).pid;
    if (pid == 0) pid = context.process_id();
    const auto [it, added] = run_.index.emplace(pid, run_.processes.size());
    if (added) {
      run_.processes.emplace_back();
      run_.processes.back().pid = pid;
    }
    return run_.processes[it->second];
  }

  static std::string time(std::uint64_t ns) {
    return ns == kNoStep ? std::string("--") : report::format_time(ns, report::Unit::automatic);
  }
  // Built by appending: g++ 12 warns falsely (-Wrestrict) on "[" + string + "]".
  static std::string label(std::size_t i) {
    std::string text = "[";
    text.append(std::to_string(i + 1));
    text.push_back(']');
    return text;
  }

  void write(const StepTimes& r) const {
    std::string text = "Steps of " + std::to_string(r.processes.size()) +
                       " processes: each process's step time (its step zone), the slowest process, the spread\n"
                       "(slowest minus fastest) and how far apart the steps ended on the timeline\n";
    for (std::size_t i = 0; i < r.processes.size(); ++i) {
      text += "  " + label(i) + " " + report::terminal_text(r.processes[i].name) + " (pid " +
              std::to_string(r.processes[i].pid) + ")\n";
    }
    std::vector<const StepRow*> shown;
    for (const StepRow& s : r.steps) shown.push_back(&s);
    if (options_.rows != 0 && shown.size() > options_.rows) {
      std::stable_sort(shown.begin(), shown.end(),
                       [](const StepRow* a, const StepRow* b) { return a->spread_ns > b->spread_ns; });
      shown.resize(options_.rows);
      std::sort(shown.begin(), shown.end(), [](const StepRow* a, const StepRow* b) { return a->step < b->step; });
      text += "The " + std::to_string(options_.rows) + " steps of largest spread, of " +
              std::to_string(r.steps.size()) + "\n";
    }
    std::vector<report::TextColumn> columns{{"Step", false}};
    for (std::size_t i = 0; i < r.processes.size(); ++i) columns.push_back({label(i), false});
    columns.push_back({"Slowest", true});
    columns.push_back({"Spread", false});
    columns.push_back({"Ends apart", false});
    std::vector<std::vector<std::string>> rows;
    for (const StepRow* s : shown) {
      std::vector<std::string> row{std::to_string(s->step)};
      for (std::uint64_t d : s->duration_ns) row.push_back(time(d));
      row.push_back(label(s->slowest));
      row.push_back(time(s->spread_ns));
      row.push_back(time(s->ends_apart_ns));
      rows.push_back(std::move(row));
    }
    text += report::render_table(columns, rows);
    std::vector<std::vector<std::string>> totals;
    for (std::size_t i = 0; i < r.processes.size(); ++i) {
      std::uint64_t sum = 0, n = 0;
      for (const StepRow& s : r.steps) {
        if (s.duration_ns[i] == kNoStep) continue;
        sum += s.duration_ns[i];
        ++n;
      }
      totals.push_back(
          {label(i), std::to_string(r.processes[i].slowest), std::to_string(n), time(n == 0 ? kNoStep : sum / n)});
    }
    text += report::render_table({{"Process", true}, {"Slowest in", false}, {"Steps", false}, {"Mean step", false}},
                                 totals);
    if (r.unfinished != 0) {
      text += std::to_string(r.unfinished) + " unfinished step(s) left out (closed at the end of the recording)\n";
    }
    out_ << text;
    out_.flush();
  }

  std::ostream& out_;
  StragglerOptions options_;
  Run run_;
};

}  // namespace

std::shared_ptr<StragglerExporter> straggler_exporter(std::ostream& out, StragglerOptions options) {
  return std::make_shared<Stragglers>(out, options);
}

}  // namespace ringtrace
