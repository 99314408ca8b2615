// `ringtrace diff`'s comparison: one row per zone (per benchmark and zone), computed by
// diff.cpp and written as text, CSV or JSON by diff_output.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff_samples.hpp"
#include "diff_stats.hpp"

namespace ringtrace::tool {

struct DiffSettings {
  double threshold = 0.05;  // a change of the median beyond it (a fraction) is flagged, when significant
  double alpha = stats::kDefaultAlpha;
  double confidence = 0.95;         // of the intervals
  std::size_t resamples = 2000;     // of the bootstrap
  std::size_t cap = 20000;          // durations kept per zone and side
  std::size_t rows = 40;            // text rows shown (0: all); CSV and JSON hold every row
  std::string base_name, new_name;  // BASE and NEW as given
};

// What a row says, in the order rows are sorted by.
enum class Verdict {
  regression,       // significant, and the median grew more than the threshold: fails the job
  improvement,      // significant, and the median shrank more than the threshold
  below_threshold,  // significant, the median's change within the threshold
  not_significant,  // p >= alpha
  too_few_calls,    // fewer than 2 calls on a side: no test (compare.py's minimum)
  only_base,        // the zone is in BASE only
  only_new,         // in NEW only
};
const char* verdict_key(Verdict v);   // regression, improvement, below_threshold, ... (CSV, JSON)
const char* verdict_text(Verdict v);  // slower, faster, within threshold, ... (text)

struct Side {
  std::size_t runs = 0;  // files with calls of the zone
  std::uint64_t calls = 0;
  std::size_t kept = 0;  // durations the statistics are of (calls, or the sample's size)
  std::uint64_t median_ns = 0;
  std::uint64_t p99_ns = 0;
};

struct Change {
  double estimate = 0;                   // NEW / BASE - 1, compare.py's calculate_change
  std::optional<stats::Interval> range;  // the bootstrap interval, when both sides have enough calls
};

struct DiffRow {
  ZoneKey key;
  Verdict verdict = Verdict::not_significant;
  Side base, next;
  Change median, p99;
  std::optional<stats::UTest> test;  // both sides with at least 2 calls
  bool reliable = false;             // both sides with at least 9 calls (compare.py's warning below)
  // Both sides with at least 2 runs (files): the same test over the runs' medians, as
  // compare.py tests repetitions; a change must be significant run by run too.
  std::optional<stats::UTest> runs_test;
  // The p the verdict rests on: the larger of the two tests' (2 without a test).
  double p() const { return !test ? 2 : runs_test ? std::max(test->p, runs_test->p) : test->p; }
};

struct DiffResult {
  std::vector<DiffRow> rows;  // sorted: verdict, then p, then the median's change largest first
  std::size_t regressions = 0, improvements = 0, sampled = 0;
  SideCalls base, next;  // the files read (their zones emptied once compared)
};

// The text table and its notes; the CSV file; the JSON document.
std::string diff_text(const DiffResult& result, const DiffSettings& settings);
std::string diff_csv(const DiffResult& result, const DiffSettings& settings);
std::string diff_json(const DiffResult& result, const DiffSettings& settings);

}  // namespace ringtrace::tool
