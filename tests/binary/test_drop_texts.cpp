// Texts (records of several slots) attached to zones that are not in the ring (their
// begin dropped under the drop policy, or their category switched off), in small rings,
// with a binary file and window files at once: the text is counted with its zone (or
// ignored with it), never written as a record the drainer cannot read; the drainer hands
// the binary file's writer only whole records; every dropped event is counted; and what
// the file holds is what the live stream held. (record_all's `rich` mode with the drop
// policy crashed in pack_record: a text on a dropped zone was written as a 24-byte
// record whose size slot held a time.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "raw_sink.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace ringtrace {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-drop-texts-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct Counts {
  std::uint64_t events = 0;   // events other than drop markers
  std::uint64_t dropped = 0;  // the drop markers' counts
};

Counts count(const RecordedTrace& t) {
  Counts c;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::dropped) {
      c.dropped += e.value.u;
    } else {
      ++c.events;
    }
  }
  return c;
}

// The binary file at `path` against the live stream and stats of the same session.
void expect_file_is_live(const fs::path& path, const RecordedTrace& live_trace, const SessionStats& live) {
  MemoryExporter back;
  const ReplayResult r = replay_file(path, back);
  EXPECT_TRUE(r.complete) << r.problem;
  const RecordedTrace file = back.trace();
  EXPECT_EQ(file.stats.recorded, live.recorded);
  EXPECT_EQ(file.stats.dropped, live.dropped);
  // Every event recorded, and the zones closed at the stop time.
  const Counts in_live = count(live_trace), in_file = count(file);
  EXPECT_EQ(in_live.events, live.recorded + live.closed_at_stop);
  EXPECT_EQ(in_file.events, live.recorded + live.closed_at_stop);
  EXPECT_EQ(in_live.dropped, live.dropped);
  EXPECT_EQ(in_file.dropped, live.dropped);
}

// A text in a zone whose category is off is left out with the zone, whatever the
// policy: the thread's later records are all there.
TEST(DropTexts, TextInASkippedZoneLeavesTheRingReadable) {
  const fs::path dir = temp_dir("skipped");
  Config config;
  config.overflow = OverflowPolicy::block;
  config.disabled_categories = {"off"};
  SessionStats live;
  RecordedTrace live_trace;
  {
    Session session(config);
    auto memory = std::make_shared<MemoryExporter>();
    session.add_exporter(memory);
    session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
    session.start();
    {
      RINGTRACE_ZONE_IN("off", "skipped");
      RINGTRACE_ZONE_TEXT("text", "abc", 3);
      RINGTRACE_ZONE_VALUE("value", 1);
    }
    for (int i = 0; i < 100; ++i) {
      RINGTRACE_ZONE("after");
    }
    session.stop();
    live = session.stats();
    live_trace = memory->trace();
  }
  ASSERT_TRUE(live.exporter_errors.empty()) << live.exporter_errors.front();
  EXPECT_EQ(live.recorded, 200u);
  EXPECT_EQ(live.dropped, 0u);
  expect_file_is_live(dir / "run.rtrace", live_trace, live);
}

// Zones dropped by a full ring under the drop policy, each with a text: the text is
// counted as dropped with its zone, as a value would be. A few times the ring is
// emptied while a dropped zone is open, so that its text finds room.
TEST(DropTexts, TextInADroppedZoneIsCountedWithIt) {
  const fs::path dir = temp_dir("dropped");
  Config config;
  config.buffer_records = 256;  // 4 KiB rings
  config.overflow = OverflowPolicy::drop;
  config.drain_interval = std::chrono::milliseconds(20);
  config.high_water = 1.0;
  config.yield_to_drainer = false;
  constexpr int kLoops = 20000;
  SessionStats live;
  RecordedTrace live_trace;
  {
    Session session(config);
    auto memory = std::make_shared<MemoryExporter>();
    session.add_exporter(memory);
    session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
    session.start();
    std::thread t([] {
      int emptied = 0;
      for (int i = 0; i < kLoops; ++i) {
        RINGTRACE_ZONE("z");
        if (detail::t_writer.hidden != 0 && emptied < 5) {  // this zone's begin was dropped
          EXPECT_TRUE(detail::run_drainer_pass());
          ++emptied;
        }
        RINGTRACE_ZONE_TEXT("text", "abcdefghij", 10);
      }
      EXPECT_EQ(emptied, 5);
    });
    t.join();
    session.stop();
    live = session.stats();
    live_trace = memory->trace();
  }
  ASSERT_TRUE(live.exporter_errors.empty()) << live.exporter_errors.front();
  EXPECT_GT(live.dropped, 0u);
  EXPECT_EQ(live.recorded + live.dropped, 3u * kLoops);  // a begin, a text and an end each
  expect_file_is_live(dir / "run.rtrace", live_trace, live);
}

// A record the drainer cannot read (written here by hand: a text whose size runs past
// what the thread had written) is never handed to the binary file's writer: the file
// gets the whole records before it, as the live stream does, and nothing of the bytes
// the drainer leaves out after it.
TEST(DropTexts, AnUnreadableRecordIsNotHandedToTheFile) {
  const fs::path dir = temp_dir("unreadable");
  Config config;
  config.overflow = OverflowPolicy::block;
  config.drain_interval = std::chrono::seconds(10);  // passes on demand only
  SessionStats live;
  RecordedTrace live_trace;
  {
    Session session(config);
    auto memory = std::make_shared<MemoryExporter>();
    session.add_exporter(memory);
    session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
    session.start();
    for (int i = 0; i < 10; ++i) {
      RINGTRACE_ZONE("before the pass");
    }
    ASSERT_TRUE(detail::run_drainer_pass());
    for (int i = 0; i < 10; ++i) {
      RINGTRACE_ZONE("before the record");
    }
    {
      static const SiteInfo* const site = intern("unreadable", SiteKind::value);
      detail::WriterBlock& block = *detail::t_writer.block;
      const std::uintptr_t at = detail::reserve(block, 24);
      detail::put(at + 8, std::uint64_t{1} << 40);  // the text's size: past anything written
      detail::put(at + 16, 0);
      detail::publish(at, detail::record_header(site, detail::record_arg_text));
    }
    for (int i = 0; i < 10; ++i) {
      RINGTRACE_ZONE("after the record");
    }
    session.stop();
    live = session.stats();
    live_trace = memory->trace();
  }
  ASSERT_TRUE(live.exporter_errors.empty()) << live.exporter_errors.front();
  EXPECT_EQ(live.recorded, 40u);  // the zones before the record; those after it are left out
  expect_file_is_live(dir / "run.rtrace", live_trace, live);
}

// The binary file's writer, handed a record it cannot read (the drainer hands none),
// fails with an error instead of reading past the records it was handed.
TEST(DropTexts, TheFileWriterRefusesARecordItCannotRead) {
  const fs::path dir = temp_dir("writer");
  const std::shared_ptr<Exporter> exporter = binary_trace_exporter(dir / "run.rtrace");
  auto* raw = dynamic_cast<detail::RawSink*>(exporter.get());
  ASSERT_NE(raw, nullptr);
  detail::RawSessionInfo info;
  info.ticks_per_second = 1e9;
  info.ring_bytes = 4096;
  raw->on_raw_start(info);
  static const SiteInfo* const site = intern("text", SiteKind::value);
  const std::uint64_t words[] = {
      detail::end_slot(5),                                   // a zone end: whole
      detail::record_header(site, detail::record_arg_text),  // a text whose size...
      std::uint64_t{1} << 40,                                // ...runs past what was handed
      0,
  };
  const std::span<const std::uint8_t> records(reinterpret_cast<const std::uint8_t*>(words), sizeof words);
  EXPECT_THROW(raw->on_raw_records(0, records), std::runtime_error);
  const std::uint64_t zero[2] = {0, 0};  // a header never written
  EXPECT_THROW(raw->on_raw_records(0, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(zero), 16)),
               std::runtime_error);
}

// What one loop of a worker records: a zone, values, texts (a short one, and a long one
// cut at a quarter of the ring), a region with a nested zone, counters. The worker counts
// the events it makes (`made`) and the loops it has done (`done`).
void worker(int w, int loops, std::uint64_t& made, std::atomic<int>& done) {
  set_thread_name("worker-" + std::to_string(w));
  const std::string long_text(3000, 'x');
  const char odd_bytes[] = {'a', '\0', '"', '\\', '\n', '\x01', '\x7f', '\x80', '\xff', 'z'};
  for (int i = 0; i < loops; ++i) {
    RINGTRACE_ZONE("loop");
    RINGTRACE_ZONE_VALUE("i", static_cast<std::int64_t>(i));
    RINGTRACE_ZONE_VALUE("double", i * 0.5);
    RINGTRACE_ZONE_TEXT("text", odd_bytes, sizeof odd_bytes);
    made += 5;  // the zone's begin and end, two values, a text
    if (i % 7 == 0) {
      RINGTRACE_ZONE_TEXT("long", long_text.data(), long_text.size());
      made += 1;
    }
    {
      RINGTRACE_REGION("region", static_cast<std::uint64_t>(i));
      RINGTRACE_ZONE("inner");
      RINGTRACE_INSTANT("tick");
      made += 5;  // two zones' begins and ends, an instant
    }
    RINGTRACE_COUNTER("ints", i + w);
    made += 1;
    done.store(i + 1, std::memory_order_release);
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Holds the drainer in its first delivery until opened: no ring is read past that pass
// meanwhile, so a thread that writes more than its ring holds drops, for certain.
class Gate final : public Exporter {
 public:
  void on_events(std::span<const Event>, const TraceContext&) override {
    std::unique_lock lock(mutex_);
    opened_.wait_for(lock, std::chrono::seconds(30), [this] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

std::uint64_t run(bool with_schedule, int round) {
  const fs::path dir = temp_dir((with_schedule ? "schedule-" : "plain-") + std::to_string(round));
  Config config;
  config.buffer_records = 256;  // 4 KiB rings
  config.overflow = OverflowPolicy::drop;
  if (with_schedule) config.schedule = Schedule{0, 0, 0, 2, 0};
  SessionStats live;
  RecordedTrace memory_trace;
  constexpr int kLoops = 400, kHeldLoops = 100;  // 100 loops: about 1,100 events, 4 rings' worth
  std::uint64_t made[3] = {};
  {
    Session session(config);
    auto memory = std::make_shared<MemoryExporter>();
    auto gate = std::make_shared<Gate>();
    session.add_exporter(gate);
    session.add_exporter(memory);
    session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
    session.add_window_exporter([dir](const WindowInfo& window) {
      return binary_trace_exporter(dir / ("window-" + std::to_string(window.index) + ".rtrace"));
    });
    session.start();
    std::atomic<int> done[3] = {0, 0, 0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) threads.emplace_back([w, &made, &done] { worker(w, kLoops, made[w], done[w]); });
    for (const std::atomic<int>& d : done) {
      while (d.load(std::memory_order_acquire) < kHeldLoops) std::this_thread::yield();
    }
    gate->open();
    for (int k = 0; k < 5; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      session.step();
    }
    for (auto& t : threads) t.join();
    session.step();
    session.stop();
    live = session.stats();
    memory_trace = memory->trace();
  }
  EXPECT_TRUE(live.exporter_errors.empty()) << live.exporter_errors.front();
  expect_file_is_live(dir / "run.rtrace", memory_trace, live);
  EXPECT_TRUE(fs::exists(dir / "window-0.rtrace"));
  // Every event each worker made is recorded or counted as dropped, and each dropped some.
  for (int w = 0; w < 3; ++w) {
    const std::string name = "worker-" + std::to_string(w);
    const auto row =
        std::find_if(live.threads.begin(), live.threads.end(), [&](const ThreadStats& t) { return t.name == name; });
    EXPECT_NE(row, live.threads.end()) << name;
    if (row == live.threads.end()) continue;
    EXPECT_EQ(made[w], 400u * 11 + 58);  // 11 events a loop, and the long text every 7th of 400
    EXPECT_EQ(row->recorded + row->dropped, made[w]) << name;
    EXPECT_GT(row->dropped, 0u) << name << ": its ring held " << made[w] << " events while the drainer was held";
  }
  return live.dropped;
}

// record_all's `rich` mode under the drop policy: three threads of texts, values,
// regions and counters in 4 KiB rings, steps, window files, with and without a schedule;
// the drainer held until each thread has written four rings' worth, so every thread drops.
TEST(DropTexts, SmallRingsWithWindowsAndABinaryFile) {
  std::uint64_t dropped = 0;
  for (int round = 0; round < 5; ++round) dropped += run(round % 2 == 0, round);
  std::printf("dropped in all: %llu\n", static_cast<unsigned long long>(dropped));
}

}  // namespace
}  // namespace ringtrace
