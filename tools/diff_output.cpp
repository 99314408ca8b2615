// `ringtrace diff`'s outputs: the text table with its notes, CSV and JSON (diff_rows.hpp).
#include <algorithm>
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "diff_rows.hpp"
#include "output.hpp"  // runtime/output: CSV and JSON escaping, numbers

namespace ringtrace::tool {

const char* verdict_key(Verdict v) {
  switch (v) {
    case Verdict::regression:
      return "regression";
    case Verdict::improvement:
      return "improvement";
    case Verdict::below_threshold:
      return "below_threshold";
    case Verdict::not_significant:
      return "not_significant";
    case Verdict::too_few_calls:
      return "too_few_calls";
    case Verdict::only_base:
      return "only_base";
    case Verdict::only_new:
      break;
  }
  return "only_new";
}

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::regression:
      return "SLOWER";
    case Verdict::improvement:
      return "faster";
    case Verdict::below_threshold:
      return "within threshold";
    case Verdict::not_significant:
      return "no significant change";
    case Verdict::too_few_calls:
      return "too few calls";
    case Verdict::only_base:
      return "only in BASE";
    case Verdict::only_new:
      break;
  }
  return "only in NEW";
}

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", fraction * 100);
  return text;
}

std::string change_text(const Change& c) {
  std::string s = percent(c.estimate);
  if (c.range) s += " [" + percent(c.range->low) + ", " + percent(c.range->high) + "]";
  return s;
}

std::string p_text(const DiffRow& r) {
  if (!r.test) return "-";
  char text[32];
  if (r.test->p == 0) return "<1e-300";
  std::snprintf(text, sizeof text, r.test->p >= 1e-4 ? "%.4f" : "%.1e", r.test->p);
  return std::string(text) + (r.reliable ? "" : "?");
}

std::string runs_p_text(const DiffRow& r) {
  if (!r.runs_test) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", r.runs_test->p);
  return std::string(text) + (std::min(r.base.runs, r.next.runs) >= stats::kUTestReliableSamples ? "" : "?");
}

std::string calls_text(const Side& s) { return thousands(s.calls) + (s.kept < s.calls ? "*" : ""); }

std::string side_summary(const char* label, const std::string& name, const SideCalls& side) {
  return std::string(label) + " " + name + ": " + thousands(side.files.size()) +
         (side.files.size() == 1 ? " file, " : " files, ") + thousands(side.events) + " events";
}

bool any_benchmark(const DiffResult& result) {
  return std::any_of(result.rows.begin(), result.rows.end(), [](const DiffRow& r) { return !r.key.benchmark.empty(); });
}

}  // namespace

std::string diff_text(const DiffResult& result, const DiffSettings& settings) {
  const bool benchmarks = any_benchmark(result);
  const bool runs = std::any_of(result.rows.begin(), result.rows.end(), [](const DiffRow& r) { return r.runs_test; });
  using A = Columns::Align;
  std::vector<Columns::Column> layout;
  if (benchmarks) layout.push_back({A::left, kNameCap});
  for (const Columns::Column& c : {Columns::Column{A::left, kNameCap},
                                   {A::right},
                                   {A::right},
                                   {A::right},
                                   {A::right},
                                   {A::left},
                                   {A::right},
                                   {A::right},
                                   {A::left},
                                   {A::right},
                                   {A::left}}) {
    layout.push_back(c);
  }
  if (runs) layout.insert(layout.end() - 1, {A::right});
  Columns table(layout);
  std::vector<std::string> header = {
      "Zone",     "Calls BASE", "Calls NEW",           "Median BASE", "Median NEW", "Median change [95% CI]",
      "p99 BASE", "p99 NEW",    "p99 change [95% CI]", "p",           "Verdict"};
  if (runs) header.insert(header.end() - 1, "p (runs)");
  if (benchmarks) header.insert(header.begin(), "Benchmark");
  table.add(header);
  const std::size_t shown = settings.rows == 0 ? result.rows.size() : std::min(settings.rows, result.rows.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const DiffRow& r = result.rows[i];
    const bool both = r.verdict != Verdict::only_base && r.verdict != Verdict::only_new;
    std::vector<std::string> cells = {r.key.zone,
                                      r.verdict == Verdict::only_new ? "-" : calls_text(r.base),
                                      r.verdict == Verdict::only_base ? "-" : calls_text(r.next),
                                      r.verdict == Verdict::only_new ? "-" : duration(r.base.median_ns),
                                      r.verdict == Verdict::only_base ? "-" : duration(r.next.median_ns),
                                      both ? change_text(r.median) : "-",
                                      r.verdict == Verdict::only_new ? "-" : duration(r.base.p99_ns),
                                      r.verdict == Verdict::only_base ? "-" : duration(r.next.p99_ns),
                                      both ? change_text(r.p99) : "-",
                                      p_text(r),
                                      verdict_text(r.verdict)};
    if (runs) cells.insert(cells.end() - 1, runs_p_text(r));
    if (benchmarks) cells.insert(cells.begin(), r.key.benchmark);
    table.add(std::move(cells));
  }
  std::string out = side_summary("BASE", settings.base_name, result.base) + "; " +
                    side_summary("NEW", settings.new_name, result.next) + "\n";
  out += table.text("");
  if (shown < result.rows.size()) {
    out += "Rows shown: " + thousands(shown) + " of " + thousands(result.rows.size()) + " (--rows 0: all)\n";
  }
  char line[400];
  std::snprintf(line, sizeof line,
                "p: two-sided Mann-Whitney U test of the calls' durations, significant below %g (compare.py's); "
                "'?': fewer than %zu calls on a side (unreliable). Intervals: %g%% bootstrap, %s resamples.\n",
                settings.alpha, stats::kUTestReliableSamples, settings.confidence * 100,
                thousands(settings.resamples).c_str());
  out += line;
  if (runs) {
    out +=
        "p (runs): the same test over each run's (file's) median, where both sides have 2 runs or more: a change "
        "must be significant run by run too ('?': fewer than 9 runs a side, which compare.py calls unreliable; 4 a "
        "side are "
        "the fewest whose exact test reaches 0.05).\n";
  } else if (std::any_of(result.rows.begin(), result.rows.end(), [](const DiffRow& r) { return r.test; })) {
    out +=
        "One run on a side: the test is over calls and cannot see what changes from run to run (address layout, "
        "CPU frequency, other load); compare folders of 4 runs a side or more (compare.py recommends 9).\n";
  }
  if (result.sampled != 0) {
    out += "*: more than " + thousands(settings.cap) + " calls on that side (" + thousands(result.sampled) +
           (result.sampled == 1 ? " zone" : " zones") + "): its statistics are of a uniform random sample of " +
           thousands(settings.cap) + " of them (reservoir; --samples)\n";
  }
  if (result.base.unfinished + result.next.unfinished != 0) {
    out += "Zones left open at a recording's end, not counted as calls: BASE " + thousands(result.base.unfinished) +
           ", NEW " + thousands(result.next.unfinished) + "\n";
  }
  const std::string threshold = percent(settings.threshold).substr(1);
  if (result.regressions != 0) {
    out += "Slower beyond " + threshold + ": " + thousands(result.regressions) +
           (result.regressions == 1 ? " zone" : " zones") + " (exit status 3)\n";
  } else {
    out += "No zone is significantly slower beyond " + threshold + ".\n";
  }
  return out;
}

namespace {

// The columns of CSV and the fields of JSON, in one order: a name and how a row gives it.
void optional_double(std::string& out, const std::optional<double>& v, bool json) {
  if (v) {
    detail::append_double(out, *v);
  } else if (json) {
    out += "null";
  }
}

struct Field {
  const char* name;
  bool text;  // a string (quoted in JSON, escaped in CSV)
};
constexpr Field kFields[] = {
    {"benchmark", true},
    {"zone", true},
    {"verdict", true},
    {"base_calls", false},
    {"new_calls", false},
    {"base_kept", false},
    {"new_kept", false},
    {"base_median_ns", false},
    {"new_median_ns", false},
    {"median_change", false},
    {"median_change_low", false},
    {"median_change_high", false},
    {"base_p99_ns", false},
    {"new_p99_ns", false},
    {"p99_change", false},
    {"p99_change_low", false},
    {"p99_change_high", false},
    {"u", false},
    {"p_value", false},
    {"exact", false},
    {"reliable", false},
    {"base_runs", false},
    {"new_runs", false},
    {"runs_u", false},
    {"runs_p_value", false},
};

// The row's value of each field, as text ready for the format (numbers; "" for none).
std::vector<std::string> values(const DiffRow& r, bool json) {
  const bool has_base = r.verdict != Verdict::only_new, has_new = r.verdict != Verdict::only_base;
  const bool both = has_base && has_new;
  const auto number = [json](bool present, auto v) {
    std::string s;
    if (!present) return json ? std::string("null") : s;
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      detail::append_double(s, v);
    } else {
      detail::append_uint(s, v);
    }
    return s;
  };
  const auto range = [&](const Change& c, bool low) {
    std::string s;
    optional_double(s, c.range ? std::optional<double>(low ? c.range->low : c.range->high) : std::nullopt, json);
    return s;
  };
  const auto flag = [json](bool present, bool v) {
    return present ? std::string(v ? "true" : "false") : std::string(json ? "null" : "");
  };
  return {r.key.benchmark,
          r.key.zone,
          verdict_key(r.verdict),
          number(has_base, r.base.calls),
          number(has_new, r.next.calls),
          number(has_base, std::uint64_t{r.base.kept}),
          number(has_new, std::uint64_t{r.next.kept}),
          number(has_base, r.base.median_ns),
          number(has_new, r.next.median_ns),
          number(both, r.median.estimate),
          range(r.median, true),
          range(r.median, false),
          number(has_base, r.base.p99_ns),
          number(has_new, r.next.p99_ns),
          number(both, r.p99.estimate),
          range(r.p99, true),
          range(r.p99, false),
          number(r.test.has_value(), r.test ? r.test->u : 0.0),
          number(r.test.has_value(), r.test ? r.test->p : 0.0),
          flag(r.test.has_value(), r.test && r.test->exact),
          flag(r.test.has_value(), r.reliable),
          number(has_base, std::uint64_t{r.base.runs}),
          number(has_new, std::uint64_t{r.next.runs}),
          number(r.runs_test.has_value(), r.runs_test ? r.runs_test->u : 0.0),
          number(r.runs_test.has_value(), r.runs_test ? r.runs_test->p : 0.0)};
}

void json_side(std::string& out, const char* name, const std::string& given, const SideCalls& side) {
  out += "\"";
  out += name;
  out += "\":{\"given\":";
  detail::append_json_string(out, given);
  out += ",\"files\":[";
  for (std::size_t i = 0; i < side.files.size(); ++i) {
    if (i) out += ',';
    detail::append_json_string(out, side.files[i]);
  }
  out += "],\"events\":";
  detail::append_uint(out, side.events);
  out += ",\"unfinished_zones\":";
  detail::append_uint(out, side.unfinished);
  out += ",\"problems\":[";
  for (std::size_t i = 0; i < side.problems.size(); ++i) {
    if (i) out += ',';
    detail::append_json_string(out, side.problems[i]);
  }
  out += "]}";
}

}  // namespace

std::string diff_csv(const DiffResult& result, const DiffSettings&) {
  std::string out;
  for (const Field& f : kFields) {
    if (&f != kFields) out += ',';
    out += f.name;
  }
  out += "\r\n";
  for (const DiffRow& r : result.rows) {
    const std::vector<std::string> cells = values(r, false);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      if (kFields[i].text) {
        detail::append_csv_field(out, cells[i]);
      } else {
        out += cells[i];
      }
    }
    out += "\r\n";
  }
  return out;
}

std::string diff_json(const DiffResult& result, const DiffSettings& settings) {
  std::string out = "{\"format\":\"ringtrace-diff\",\"version\":1,\"threshold\":";
  detail::append_double(out, settings.threshold);
  out += ",\"alpha\":";
  detail::append_double(out, settings.alpha);
  out += ",\"confidence\":";
  detail::append_double(out, settings.confidence);
  out += ",\"resamples\":";
  detail::append_uint(out, settings.resamples);
  out += ",\"sample_cap\":";
  detail::append_uint(out, settings.cap);
  out += ",\"regressions\":";
  detail::append_uint(out, result.regressions);
  out += ",\"improvements\":";
  detail::append_uint(out, result.improvements);
  out += ",\"sampled_zones\":";
  detail::append_uint(out, result.sampled);
  out += ',';
  json_side(out, "base", settings.base_name, result.base);
  out += ',';
  json_side(out, "new", settings.new_name, result.next);
  out += ",\"rows\":[";
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    out += i ? ",{" : "{";
    const std::vector<std::string> cells = values(result.rows[i], true);
    for (std::size_t f = 0; f < cells.size(); ++f) {
      if (f) out += ',';
      detail::append_json_string(out, kFields[f].name);
      out += ':';
      if (kFields[f].text) {
        detail::append_json_string(out, cells[f]);
      } else {
        out += cells[f];
      }
    }
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace ringtrace::tool
