// The flight recorder: the last `keep` of the stream in bounded memory, snapshots on
// request and on a slow zone (the trigger), rate-limited and counted, each a complete
// stream (zones open at its start come first, zones open at its end are closed there).
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "flight_recorder.hpp"  // runtime/streams: the recorder alone
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace ringtrace {
namespace {

using namespace std::chrono_literals;

struct Snapshots {
  std::mutex mutex;
  std::vector<WindowInfo> infos;
  std::vector<std::shared_ptr<MemoryExporter>> traces;
  std::vector<std::shared_ptr<testing::ValidatingExporter>> checks;
  WindowExporterFactory factory() {
    return [this](const WindowInfo& info) {
      std::lock_guard<std::mutex> lock(mutex);
      infos.push_back(info);
      traces.push_back(std::make_shared<MemoryExporter>());
      return traces.back();
    };
  }
};

struct Zone {
  std::string name;
  std::uint64_t begin_ns, end_ns;
  std::uint8_t end_flags;
};

// Every zone of a recorded stream, with its begin and end; nesting checked on the way.
std::vector<Zone> zones_of(const RecordedTrace& t) {
  std::vector<Zone> out;
  std::map<ThreadId, std::vector<const Event*>> open;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) {
      EXPECT_EQ(e.depth, open[e.thread].size()) << t.sites[e.site].name;
      open[e.thread].push_back(&e);
    } else if (e.kind == EventKind::zone_end) {
      EXPECT_FALSE(open[e.thread].empty()) << "an end with no begin";
      if (open[e.thread].empty()) continue;
      const Event* b = open[e.thread].back();
      open[e.thread].pop_back();
      EXPECT_EQ(b->site, e.site);
      out.push_back(Zone{t.sites[b->site].name, b->time_ns, e.time_ns, e.flags});
    }
  }
  for (const auto& [thread, stack] : open) EXPECT_TRUE(stack.empty()) << "zones left open in a snapshot";
  return out;
}

void request(std::chrono::microseconds work, int i) {
  RINGTRACE_ZONE("request");
  RINGTRACE_ZONE_VALUE("i", i);
  const std::string text = "item " + std::to_string(i);
  RINGTRACE_ZONE_TEXT("label", text.data(), text.size());
  RINGTRACE_ZONE("work");
  std::this_thread::sleep_for(work);
}

// A slow request triggers one snapshot holding it and the `keep` before it; a second
// slow one within min_interval is counted, not written.
TEST(FlightRecorder, ASlowZoneWritesOneSnapshotOfWhatLedToIt) {
  Config config;
  config.flight_recorder.keep = 40ms;
  config.flight_recorder.min_interval = 60s;
  config.trigger = {.zone = "request", .longer_than = 8ms};
  Session session(config);
  Snapshots snapshots;
  auto live = std::make_shared<MemoryExporter>();
  session.add_exporter(live);
  session.add_window_exporter(snapshots.factory());
  session.start();
  {
    RINGTRACE_ZONE("outer");  // open across the whole run: the snapshot starts inside it
    int i = 0;
    for (; i < 150; ++i) request(500us, i);
    request(20ms, i++);  // the outlier
    for (; i < 300; ++i) request(500us, i);
    request(20ms, i++);  // a second one, within min_interval
    for (; i < 320; ++i) request(500us, i);
  }
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_EQ(stats.snapshots, 1u);
  // The second outlier is suppressed; on a loaded machine a 500 us sleep may also
  // overrun 8 ms and trigger (the first of them is then the outlier the snapshot holds).
  EXPECT_GE(stats.snapshots_suppressed, 1u);
  ASSERT_EQ(snapshots.infos.size(), 1u);
  EXPECT_EQ(snapshots.infos[0].reason.rfind("zone 'request' took ", 0), 0u) << snapshots.infos[0].reason;

  const std::vector<Zone> all = zones_of(live->trace());
  const Zone* outlier = nullptr;
  int outlier_index = 0;  // its `i`: requests run one after the other, ending in order
  for (const Zone& z : all) {
    if (z.name != "request") continue;
    if (z.end_ns - z.begin_ns > 8'000'000) {
      outlier = &z;
      break;
    }
    ++outlier_index;
  }
  ASSERT_NE(outlier, nullptr);
  const RecordedTrace snap = snapshots.traces[0]->trace();
  const std::vector<Zone> kept = zones_of(snap);
  // The outlier, whole, and every request that ended in the 40 ms before it.
  std::map<std::uint64_t, const Zone*> by_begin;
  for (const Zone& z : kept) by_begin[z.begin_ns] = &z;
  ASSERT_TRUE(by_begin.count(outlier->begin_ns));
  EXPECT_EQ(by_begin[outlier->begin_ns]->end_ns, outlier->end_ns);
  int before = 0;
  for (const Zone& z : all) {
    if (z.name != "request" || z.end_ns > outlier->end_ns || z.begin_ns + 40'000'000 < outlier->end_ns) continue;
    EXPECT_TRUE(by_begin.count(z.begin_ns)) << "a request " << (outlier->end_ns - z.end_ns) << " ns before the outlier";
    ++before;
  }
  // At least the two requests before it, when there were two (on a loaded machine the
  // first or second request may be the outlier itself).
  EXPECT_GE(before, std::min(outlier_index, 2)) << "the outlier was request " << outlier_index;
  // Nothing after the trigger (after = 0); "outer", open at both ends, is there whole
  // from its real begin and closed at the snapshot's end, flagged.
  for (const Zone& z : kept) {
    EXPECT_LE(z.end_ns, outlier->end_ns) << z.name;
    if (z.name == "outer") {
      EXPECT_NE(z.end_flags & EventFlags::closed_at_window_end, 0);
      EXPECT_EQ(z.end_ns, outlier->end_ns);
    }
  }
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [](const Zone& z) { return z.name == "outer"; }), 1);
  // Texts of the requests kept come with them (the outlier's: "item 150", unless a loaded
  // machine made an earlier request the outlier).
  EXPECT_NE(snap.texts.find("item " + std::to_string(outlier_index)), std::string::npos) << outlier_index;
}

// snapshot() from the program: what the recorder holds up to the call and the next
// `after`, named by its reason; without a recorder it returns false.
TEST(FlightRecorder, SnapshotOnRequestTakesTheNextAfterToo) {
  {
    Session plain;
    plain.start();
    EXPECT_FALSE(plain.snapshot("no recorder"));
    plain.stop();
  }
  Config config;
  config.flight_recorder.keep = 30ms;
  config.flight_recorder.after = 30ms;
  config.flight_recorder.min_interval = 0ms;
  Session session(config);
  Snapshots snapshots;
  session.add_window_exporter(snapshots.factory());
  session.start();
  std::uint64_t asked_ns = 0;
  for (int i = 0; i < 200; ++i) {
    request(300us, i);
    if (i == 100) {
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      asked_ns = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
      EXPECT_TRUE(session.snapshot("manual"));
    }
  }
  session.stop();
  ASSERT_EQ(snapshots.infos.size(), 1u);
  EXPECT_EQ(session.stats().snapshots, 1u);
  const WindowInfo& info = snapshots.infos[0];
  EXPECT_EQ(info.reason, "manual");
  const RecordedTrace snap = snapshots.traces[0]->trace();
  const std::vector<Zone> kept = zones_of(snap);
  ASSERT_FALSE(kept.empty());
  std::uint64_t first = ~std::uint64_t{0}, last = 0;
  for (const Zone& z : kept) {
    first = std::min(first, z.begin_ns);
    last = std::max(last, z.end_ns);
  }
  EXPECT_LE(first, asked_ns - 25'000'000);  // about `keep` before the request
  EXPECT_GE(last, asked_ns + 25'000'000);   // about `after` after it
  EXPECT_LE(last, asked_ns + 31'000'000);
  // It ends `after` past the request (snapshot() read the clock just after asked_ns).
  EXPECT_GE(snap.stats.clock.stop_ns, asked_ns + 30'000'000u);
  EXPECT_LE(snap.stats.clock.stop_ns, asked_ns + 31'000'000u);
}

// Hours of recording in a few seconds' worth: the recorder's memory is bounded by its
// setting, not by the length of the run.
TEST(FlightRecorder, MemoryStaysFlatOverALongRun) {
  Config config;
  config.flight_recorder.keep = 20ms;
  config.flight_recorder.max_bytes = 1 << 20;
  Session session(config);
  Snapshots snapshots;
  session.add_window_exporter(snapshots.factory());
  session.start();
  const double seconds = std::max(0.6, 2.0 * testing::test_scale());
  const auto run = [&](double s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([until] {
        while (std::chrono::steady_clock::now() < until) {
          for (int i = 0; i < 1000; ++i) {
            RINGTRACE_ZONE("busy");
            RINGTRACE_COUNTER("n", i);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  };
  run(seconds / 3);
  const std::int64_t early = static_cast<std::int64_t>(mallinfo2().uordblks);
  run(2 * seconds / 3);
  const std::int64_t late = static_cast<std::int64_t>(mallinfo2().uordblks);
  EXPECT_TRUE(session.snapshot("end"));
  session.stop();
  EXPECT_LT(late - early, 512 << 10) << "heap grew " << (late - early) << " bytes";
  ASSERT_EQ(snapshots.traces.size(), 1u);
  const RecordedTrace snap = snapshots.traces[0]->trace();
  EXPECT_GT(snap.events.size(), 100u);
  EXPECT_LE(snap.events.size() * sizeof(Event), std::size_t{2} << 20);
  zones_of(snap);
}

// snapshot() in a loop (Config::flight_recorder.min_interval): 100,000 requests while
// nothing records hold no memory, since a request that can never be served is counted as
// suppressed when it is made (before, each waited in a queue until the stream reached its
// time: 104 MB); 100,000 more while a thread records leave the drainer's work per event
// as it was (it partitioned the whole queue for every event: stop() took seconds, 45 s
// after 200,000 requests): the requests waiting, counted every 100 requests, stay at two.
// Every request is a snapshot or counted as suppressed.
TEST(FlightRecorder, RequestsInALoopCostAConstantAndHoldNoMemory) {
  Config config;
  config.flight_recorder.keep = 20ms;
  config.flight_recorder.min_interval = 60s;
  Session session(config);
  Snapshots snapshots;
  session.add_window_exporter(snapshots.factory());
  session.start();
  constexpr std::uint64_t kRequests = 100000;
  const std::string reason(64, 'r');  // longer than a string keeps inline: a waiting request holds heap
  const std::int64_t before = static_cast<std::int64_t>(mallinfo2().uordblks);
  for (std::uint64_t i = 0; i < kRequests; ++i) ASSERT_TRUE(session.snapshot(reason));
  const std::int64_t grown = static_cast<std::int64_t>(mallinfo2().uordblks) - before;
  EXPECT_LT(grown, 1 << 20) << "heap grew " << grown << " bytes";  // 10 bytes a request (it was 1 KB)
  // Nothing recorded since the requests: none could be served yet, two wait at most.
  EXPECT_GE(session.stats().snapshots_suppressed, kRequests - 2);

  std::atomic<bool> done{false};
  std::thread worker([&] {
    while (!done.load(std::memory_order_relaxed)) {
      RINGTRACE_ZONE("busy");
    }
  });
  // The drainer's work per event is the requests waiting (each event is checked against
  // them): counted after every 100th request, it never passes the bound of two, while the
  // stream moves on. Read snapshots before suppressed: a request served between the two
  // reads counts once more, never less.
  std::uint64_t most_waiting = 0;
  for (std::uint64_t i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(session.snapshot(reason));
    if (i % 100 != 0) continue;
    const std::uint64_t served = session.stats().snapshots;
    const std::uint64_t suppressed = session.stats().snapshots_suppressed;
    most_waiting = std::max(most_waiting, kRequests + i + 1 - served - suppressed);
  }
  done.store(true);
  worker.join();
  EXPECT_LE(most_waiting, 3u) << "two waiting, and one served between the two reads";
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_EQ(stats.snapshots + stats.snapshots_suppressed, 2 * kRequests);
  EXPECT_GE(stats.snapshots, 1u);
  EXPECT_EQ(stats.snapshots, snapshots.infos.size());
  EXPECT_TRUE(stats.exporter_errors.empty());
}

// A recorder and its window exporter in a program that never calls step() (issue 48,
// point 7): no step zone in the stream, so no "step #0" row in the table holding the
// whole run's time beside the zones; the zones' rows hold the whole self time. A
// step() makes its step's row, as in a session without a recorder.
TEST(FlightRecorder, AloneMakesNoStepZone) {
  for (const bool stepped : {false, true}) {
    Config config;
    config.flight_recorder.keep = 40ms;
    Session session(config);
    auto live = std::make_shared<MemoryExporter>();
    session.add_exporter(live);
    std::ostringstream unprinted;
    auto table = table_exporter(unprinted);
    session.add_exporter(table);
    Snapshots snapshots;
    session.add_window_exporter(snapshots.factory());
    session.start();
    for (int i = 0; i < 20; ++i) request(100us, i);
    if (stepped) session.step();
    for (int i = 20; i < 40; ++i) request(100us, i);
    session.stop();
    const RecordedTrace trace = live->trace();
    const RecordedTraceContext context(trace);
    std::vector<std::uint64_t> steps;  // the step numbers of the step zones begun
    for (const Event& e : trace.events) {
      if (e.kind == EventKind::zone_begin && is_step_site(context.site(e.site))) steps.push_back(e.value.u);
    }
    const KeyAverages& averages = dynamic_cast<const TableExporter&>(*table).table();
    std::vector<std::string> names;
    std::uint64_t self_ns = 0;
    for (const TableRow& r : averages.rows) {
      names.push_back(r.name);
      self_ns += r.self_ns;
    }
    std::sort(names.begin(), names.end());
    if (stepped) {
      EXPECT_EQ(steps, std::vector<std::uint64_t>{1});
      EXPECT_EQ(names, (std::vector<std::string>{"request", "step #1", "work"}));
    } else {
      EXPECT_TRUE(steps.empty()) << steps.size() << " step zones, the first of step " << steps.front();
      EXPECT_EQ(names, (std::vector<std::string>{"request", "work"}));
      EXPECT_EQ(self_ns, averages.self_total_ns);
    }
    EXPECT_TRUE(snapshots.infos.empty());
  }
}

// The bound itself, on the recorder alone: with a rate limit two requests wait at most
// (the oldest, and the newest standing for those after the second), without one
// (min_interval 0) 64; every other request is counted as suppressed when it is made.
TEST(FlightRecorder, WaitingRequestsAreBounded) {
  for (const std::chrono::milliseconds interval : {std::chrono::milliseconds(std::chrono::hours(1)), 0ms}) {
    Config config;
    config.flight_recorder.keep = 10ms;
    config.flight_recorder.min_interval = interval;
    detail::FlightRecorderHandle recorder =
        detail::make_flight_recorder(config, {[](const WindowInfo&) { return std::make_shared<MemoryExporter>(); }});
    constexpr std::size_t kRequests = 100000;
    for (std::size_t i = 0; i < kRequests; ++i) ASSERT_TRUE(recorder.request("again"));
    const std::size_t bound = interval.count() > 0 ? 2 : 64;
    EXPECT_EQ(recorder.waiting(), bound) << interval.count();
    EXPECT_EQ(recorder.suppressed(), kRequests - bound) << interval.count();
    EXPECT_EQ(recorder.snapshots(), 0u);
  }
}

}  // namespace
}  // namespace ringtrace
