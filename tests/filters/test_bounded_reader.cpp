// The file reader holds a bounded number of events between pass frames (Section::
// bound_pending): a file whose one pass frame comes after 5 million events (a stream
// written in one batch: one pass frame, no merge grace) is delivered before its end is
// read, in the same order, every event once.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace {
namespace {

TEST(BoundedReader, EventsBetweenPassFramesAreDeliveredPastFourMillion) {
  constexpr std::uint64_t kZones = 2'500'000;  // 5 million events, one pass frame after them
  RecordedTrace trace;
  trace.process_name = "bounded";
  for (const char* name : {"ringtrace: dropped events", "z"}) {
    RecordedSite site;
    site.name = name;
    trace.sites.push_back(site);
  }
  ThreadInfo thread;
  thread.os_tid = 7;
  thread.name = "only";
  trace.threads.push_back(thread);
  trace.clock.start_ns = 1000;
  trace.events.reserve(2 * kZones);
  for (std::uint64_t i = 0; i < kZones; ++i) {
    trace.events.push_back(Event{1000 + 4 * i, 1, 0, EventKind::zone_begin, 0, 0, 0, {}});
    trace.events.push_back(Event{1002 + 4 * i, 1, 0, EventKind::zone_end, 0, 0, 0, {}});
  }
  trace.clock.stop_ns = 1000 + 4 * kZones;
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "ringtrace_bounded_reader.rtrace";
  replay(trace, *binary_trace_exporter(file), trace.events.size());  // one batch: one pass frame
  trace.events = {};

  class Count final : public Exporter {
   public:
    void on_events(std::span<const Event> events, const TraceContext&) override {
      for (const Event& e : events) {
        if (e.time_ns < last || (e.flags & EventFlags::late) != 0) ++disorder;
        last = e.time_ns;
      }
      seen += events.size();
    }
    std::uint64_t seen = 0, last = 0, disorder = 0;
  } count;
  // Where the reader was in the file when the first events had been delivered: without a
  // bound, past the pass frame, at the file's very end (its last frames are a few hundred
  // bytes); with it, once the 4,194,304th event was read, about 84% of the way.
  double first_delivery = 1;
  ReplayOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    if (count.seen != 0 && first_delivery == 1) first_delivery = static_cast<double>(done) / static_cast<double>(total);
  };
  Exporter* const one[] = {&count};
  const ReplayResult r = replay_file(file, one, options);
  std::filesystem::remove(file);
  EXPECT_TRUE(r.complete) << r.problem;
  EXPECT_EQ(count.seen, 2 * kZones);
  EXPECT_EQ(count.disorder, 0u);
  EXPECT_LT(first_delivery, 0.97) << "nothing delivered before the pass frame: the first at " << first_delivery;
}

}  // namespace
}  // namespace ringtrace
