// What `ringtrace diff` compares: each zone's calls, read from one side's files (the
// recordings of BASE, or of NEW) as the reader streams them (diff_samples.cpp).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ringtrace::tool {

// A row of the comparison: a zone name, within a Google Benchmark benchmark when the
// file is the trace of one (ringtrace::benchmark writes its name in the file's metadata,
// "benchmark"); "" otherwise.
struct ZoneKey {
  std::string benchmark;
  std::string zone;
  auto operator<=>(const ZoneKey&) const = default;
};

// One side's calls of one zone: each call's duration (inclusive, ns, as the key-averages
// table's), every one up to `cap` calls, beyond that a uniform random sample of `cap` of
// them (reservoir sampling, Vitter's algorithm R: every call equally likely to be kept),
// so the memory per zone is bounded whatever the recording's length. Unsorted while read.
struct ZoneCalls {
  std::vector<std::uint64_t> kept;
  std::uint64_t calls = 0;  // every call read
  // The median of each file's calls of the zone (a file is a run: a side of repeated
  // runs can be compared run by run, as compare.py compares repetitions), each from at
  // most `cap` of that file's calls sampled the same way.
  std::vector<std::uint64_t> run_medians;
  bool sampled() const { return calls > kept.size(); }
};

// Calls kept by reservoir sampling: every value up to `cap`, then each later one replaces
// a kept one with probability cap / (values seen), so the kept ones are a uniform sample.
template <typename Random>
void keep_sampled(std::vector<std::uint64_t>& kept, std::uint64_t seen_before, std::uint64_t value, std::size_t cap,
                  Random& random) {
  if (kept.size() < cap) {
    kept.push_back(value);
    return;
  }
  const std::uint64_t slot = random() % (seen_before + 1);
  if (slot < cap) kept[slot] = value;
}

struct SideCalls {
  std::map<ZoneKey, ZoneCalls> zones;
  std::vector<std::string> files;
  std::uint64_t events = 0;
  // Zones the recording did not end (left open at its end: a program killed, a file cut
  // short): closed by the reader at the file's last time, so not calls; left out, counted.
  std::uint64_t unfinished = 0;
  std::vector<std::string> problems;  // "<file>: <problem>" of files read in part
};

// Reads `files` in their order into one side, at most `cap` durations kept per zone.
// Throws (naming the file) when one cannot be read at all; a file cut short or damaged is
// read up to its problem, said in `problems`. The sample is the same for the same files.
SideCalls read_side(const std::vector<std::string>& files, std::size_t cap, bool rings, std::uint64_t seed);

}  // namespace ringtrace::tool
