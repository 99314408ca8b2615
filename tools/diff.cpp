// ringtrace diff BASE NEW: did a change make a zone slower, and is that real? Per zone
// name (and per Google Benchmark benchmark when the files are its traces), the change of
// the median and p99 of the calls' durations with bootstrap intervals, and compare.py's
// Mann-Whitney U test; exit status 3 when a zone is significantly slower beyond the
// threshold. The method: docs/guide.md, "Comparing recordings".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "diff_rows.hpp"
#include "output.hpp"  // runtime/output: OutputSink, the files' rule
#include "ringtrace/files.hpp"

namespace ringtrace::tool {
namespace {

constexpr int kRegressionStatus = 3;

constexpr const char* kHelp =
    "usage: ringtrace diff BASE NEW [--threshold P%] [--alpha A] [--csv FILE] [--json FILE] [--rows N]\n"
    "                               [--samples N] [--no-rings]\n"
    "\n"
    "Compares the zones of two recordings: BASE and NEW are each a .rtrace file or a\n"
    "directory of them (repeated runs, or a Google Benchmark suite's --ringtrace_out\n"
    "folders, read recursively), whose calls are pooled per zone name; the traces of a\n"
    "suite's benchmarks (ringtrace::benchmark, --ringtrace_format=rtrace) make a row per\n"
    "benchmark and zone. For each zone in both: the calls on each side, the median and p99\n"
    "of their durations (inclusive, as report's table), each one's change NEW / BASE - 1\n"
    "with a 95% bootstrap interval from the calls themselves (p99's with 100 calls or more\n"
    "a side), and the two-sided Mann-Whitney U test of the durations as Google Benchmark's\n"
    "compare.py runs it (scipy's mannwhitneyu; no test with fewer than 2 calls a side,\n"
    "unreliable with fewer than 9). Where both sides hold 2 runs (files) or more, the same\n"
    "test runs over the runs' medians too (compare.py's one value per repetition; 4 runs a\n"
    "side at least to reach 0.05), and a change must be significant there as well: calls of\n"
    "one run share what varies between runs. A zone is slower (a regression) when p < A\n"
    "(0.05) and its median grew by more than P% (5%), faster when it shrank by more. Rows are\n"
    "sorted: regressions, improvements, then by p-value and by the median's change,\n"
    "largest first. --rows N shows N rows in the text (default 40, 0: all); --csv and\n"
    "--json write every row ('-': standard output, in place of the text). A zone of more\n"
    "than --samples N calls (default 20,000) on a side keeps a uniform random sample of N\n"
    "of them (reservoir sampling), said in the output: memory is bounded per zone.\n"
    "Zones a recording left open at its end are not calls (counted, said). Exit status:\n"
    "0, or 3 when a zone is slower beyond the threshold (a CI job fails on that only), 1\n"
    "when an input cannot be read whole (what was read is compared), 2 for a command line\n"
    "refused.\n";

// compare.py's calculate_change: (new - old) / old; from 0, relative to their mean.
double relative_change(double old_value, double new_value) {
  if (old_value == 0 && new_value == 0) return 0;
  if (old_value == 0) return (new_value - old_value) / ((old_value + new_value) / 2);
  return (new_value - old_value) / std::abs(old_value);
}

// A fixed seed per row (FNV-1a of its names): the same inputs give the same intervals.
std::uint64_t seed_of(const ZoneKey& key) {
  std::uint64_t h = 1469598103934665603ull;
  for (const std::string* s : {&key.benchmark, &key.zone}) {
    for (const char c : *s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0xFF) * 1099511628211ull;
  }
  return h;
}

Side side_of(const ZoneCalls& calls) {
  return Side{calls.run_medians.size(), calls.calls, calls.kept.size(), stats::quantile(calls.kept, 0.5),
              stats::quantile(calls.kept, 0.99)};
}

// p99's interval: below 100 calls a p99 is the largest call, which no resample can bound.
constexpr std::size_t kP99IntervalCalls = 100;

DiffRow compare(const ZoneKey& key, ZoneCalls* base, ZoneCalls* next, const DiffSettings& settings) {
  DiffRow row;
  row.key = key;
  for (ZoneCalls* c : {base, next}) {
    if (c == nullptr) continue;
    std::sort(c->kept.begin(), c->kept.end());
    std::sort(c->run_medians.begin(), c->run_medians.end());
  }
  if (base != nullptr) row.base = side_of(*base);
  if (next != nullptr) row.next = side_of(*next);
  if (base == nullptr || next == nullptr) {
    row.verdict = base == nullptr ? Verdict::only_new : Verdict::only_base;
    return row;
  }
  const auto median_base = static_cast<double>(row.base.median_ns);
  row.median.estimate = relative_change(median_base, static_cast<double>(row.next.median_ns));
  row.p99.estimate = relative_change(static_cast<double>(row.base.p99_ns), static_cast<double>(row.next.p99_ns));
  const std::size_t fewest = std::min(base->kept.size(), next->kept.size());
  if (fewest < stats::kUTestMinSamples) {
    row.verdict = Verdict::too_few_calls;
    return row;
  }
  const std::uint64_t seed = seed_of(key);
  if (row.base.median_ns > 0) {
    row.median.range =
        stats::bootstrap_change(base->kept, next->kept, 0.5, settings.confidence, settings.resamples, seed);
  }
  if (fewest >= kP99IntervalCalls && row.base.p99_ns > 0) {
    row.p99.range =
        stats::bootstrap_change(base->kept, next->kept, 0.99, settings.confidence, settings.resamples, seed + 1);
  }
  row.test = stats::mann_whitney(base->kept, next->kept);
  row.reliable = fewest >= stats::kUTestReliableSamples;
  if (std::min(base->run_medians.size(), next->run_medians.size()) >= stats::kUTestMinSamples) {
    row.runs_test = stats::mann_whitney(base->run_medians, next->run_medians);
  }
  if (row.p() >= settings.alpha) {
    row.verdict = Verdict::not_significant;
  } else if (row.median.estimate > settings.threshold) {
    row.verdict = Verdict::regression;
  } else if (row.median.estimate < -settings.threshold) {
    row.verdict = Verdict::improvement;
  } else {
    row.verdict = Verdict::below_threshold;
  }
  return row;
}

// Every zone of either side, compared; each zone's durations freed once compared.
DiffResult compare_sides(SideCalls base, SideCalls next, const DiffSettings& settings) {
  DiffResult result;
  for (auto& [key, calls] : base.zones) {
    const auto other = next.zones.find(key);
    result.rows.push_back(compare(key, &calls, other == next.zones.end() ? nullptr : &other->second, settings));
    calls = ZoneCalls{};
    if (other != next.zones.end()) other->second = ZoneCalls{};
  }
  for (auto& [key, calls] : next.zones) {
    if (!base.zones.contains(key)) result.rows.push_back(compare(key, nullptr, &calls, settings));
  }
  for (const DiffRow& r : result.rows) {
    result.sampled += r.base.kept < r.base.calls || r.next.kept < r.next.calls;
    result.regressions += r.verdict == Verdict::regression;
    result.improvements += r.verdict == Verdict::improvement;
  }
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (a.verdict != b.verdict) return a.verdict < b.verdict;
    if (a.p() != b.p()) return a.p() < b.p();
    return std::abs(a.median.estimate) > std::abs(b.median.estimate);
  });
  result.base = std::move(base);
  result.next = std::move(next);
  return result;
}

// "5%", "5" or "2.5%": a percentage, as a fraction.
double parse_percent(const std::string& option, const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(value >= 0 && value < 1e6) || number[0] == ' ') {
    throw UsageError(option + " takes a percentage (5%, 2.5%), not '" + text + "'");
  }
  return value / 100;
}

double parse_alpha(const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !(value > 0 && value < 1)) {
    throw UsageError("--alpha takes a number between 0 and 1 (0.05), not '" + text + "'");
  }
  return value;
}

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::unique_ptr<detail::OutputSink> sink = detail::OutputSink::open_file(path);
  sink->write(text);
  sink->close();
}

}  // namespace

int diff(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  DiffSettings settings;
  std::vector<std::string> inputs;
  std::string csv, json;
  bool rings = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--threshold") {
      settings.threshold = parse_percent("--threshold", option_value(args, i));
    } else if (args[i] == "--alpha") {
      settings.alpha = parse_alpha(option_value(args, i));
    } else if (args[i] == "--csv") {
      csv = option_value(args, i);
    } else if (args[i] == "--json") {
      json = option_value(args, i);
    } else if (args[i] == "--rows") {
      settings.rows = parse_count("--rows", option_value(args, i));
    } else if (args[i] == "--samples") {
      settings.cap = parse_count("--samples", option_value(args, i));
      if (settings.cap < 100) return error("diff", "--samples keeps 100 calls a zone or more, not " + args[i], 2);
    } else if (args[i] == "--no-rings") {
      rings = false;
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      return error("diff", "unknown option '" + args[i] + "' (see ringtrace diff --help)", 2);
    } else {
      inputs.push_back(args[i]);
    }
  }
  if (inputs.size() != 2) return usage({}, kHelp);
  if (csv == "-" && json == "-")
    return error("diff", "--csv and --json both write to standard output: one output there", 2);
  if (!csv.empty() && csv != "-" && csv == json) {
    return error("diff", "--csv and --json both write '" + csv + "': one file per output", 2);
  }
  for (const std::string& out : {csv, json}) {
    if (!out.empty() && out != "-") check_output_file(out);
  }
  settings.base_name = inputs[0];
  settings.new_name = inputs[1];
  // One seed for both sides: a file compared with itself keeps the same sample.
  constexpr std::uint64_t kSeed = 0x9E3779B97F4A7C15ull;
  SideCalls base = read_side(trace_files(inputs[0]), settings.cap, rings, kSeed);
  SideCalls next = read_side(trace_files(inputs[1]), settings.cap, rings, kSeed);
  const DiffResult result = compare_sides(std::move(base), std::move(next), settings);
  if (!csv.empty()) write_output(csv, diff_csv(result, settings));
  if (!json.empty()) write_output(json, diff_json(result, settings));
  if (csv != "-" && json != "-") {
    std::cout << diff_text(result, settings);
    std::cout.flush();
  }
  int status = 0;
  for (const SideCalls* side : {&result.base, &result.next}) {
    for (const std::string& problem : side->problems) status = error("diff", problem);
  }
  const bool any_common = std::any_of(result.rows.begin(), result.rows.end(), [](const DiffRow& r) {
    return r.verdict != Verdict::only_base && r.verdict != Verdict::only_new;
  });
  if (!any_common) return error("diff", "no zone is in both " + inputs[0] + " and " + inputs[1] + ": nothing compared");
  if (status != 0) return status;
  return result.regressions != 0 ? kRegressionStatus : 0;
}

}  // namespace ringtrace::tool
