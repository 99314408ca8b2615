// The clock's truth apart from the runtime: the program reads CLOCK_MONOTONIC itself,
// each reading inside a zone of its own, and writes its readings to a text file. A
// recording converts the zone's begin and end from ticks; the reading lies between them
// in true time, so a converted begin after the reading, or a converted end before it, is
// the conversion's error (check_calibration.py compares them, reading the recording with
// the independent reader tools/python/rtrace.py).
//
//   calibration_program READINGS_OUT MILLISECONDS COUNT [tsc|monotonic TRACE_OUT]
//
// COUNT readings over MILLISECONDS (a busy wait between them, so that the program stays
// on its core as a short compiler run does). With a clock and TRACE_OUT the
// program records itself (a Session with Config::clock and the binary file); without,
// the session is the environment's (`ringtrace record`).
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::uint64_t monotonic_now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// In bursts of kBurst readings back to back, the bursts spread evenly: the first zone of
// a burst may find its ring's lines in the drainer's cache (a slow, wide zone), the
// others are a few tens of nanoseconds wide and pin the conversion down.
constexpr std::uint64_t kBurst = 8;

std::vector<std::uint64_t> take_readings(std::uint64_t milliseconds, std::uint64_t count) {
  std::vector<std::uint64_t> readings;
  readings.reserve(count);
  const std::uint64_t bursts = (count + kBurst - 1) / kBurst;
  const std::uint64_t gap = milliseconds * 1000000 / bursts;
  std::uint64_t next = monotonic_now();
  while (readings.size() < count) {
    while (monotonic_now() < next) {}
    for (std::uint64_t i = 0; i < kBurst && readings.size() < count; ++i) {
      std::uint64_t reading = 0;
      {
        RINGTRACE_ZONE("reading");
        reading = monotonic_now();
      }
      readings.push_back(reading);
    }
    next += gap;
  }
  return readings;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    std::fprintf(stderr, "usage: %s READINGS_OUT MILLISECONDS COUNT [tsc|monotonic TRACE_OUT]\n", argv[0]);
    return 2;
  }
  const std::uint64_t milliseconds = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t count = std::strtoull(argv[3], nullptr, 10);
  if (count == 0) return 2;
  std::optional<ringtrace::Session> session;
  if (argc == 6) {
    ringtrace::Config config;
    config.clock =
        std::strcmp(argv[4], "monotonic") == 0 ? ringtrace::ClockSource::monotonic : ringtrace::ClockSource::tsc;
    session.emplace(config);
    session->add_exporter(ringtrace::binary_trace_exporter(argv[5]));
    session->start();
  }
  const std::vector<std::uint64_t> readings = take_readings(milliseconds, count);
  if (session) session->stop();
  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) return 1;
  for (const std::uint64_t r : readings) std::fprintf(out, "%llu\n", static_cast<unsigned long long>(r));
  return std::fclose(out) == 0 ? 0 : 1;
}
