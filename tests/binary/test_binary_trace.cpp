// The binary trace file, written live and read back with replay_file().
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "crc32c.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass
#include "trace_file_format.hpp"

namespace ringtrace {
namespace {

namespace fs = std::filesystem;
namespace tf = detail::trace_file;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-binary-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_file(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Every event of a stream as text that names its site and thread (ids differ between
// a live session and a replay), without the `late` flag (a judgement of the merge), and
// without the time of values, texts and flows (they carry none: they take their
// thread's previous time, raised as the merge needs).
std::vector<std::string> describe(const RecordedTrace& t) {
  const RecordedTraceContext context(t);
  std::vector<std::string> out;
  for (const Event& e : t.events) {
    std::ostringstream s;
    s << t.threads[e.thread].os_tid << ' ' << static_cast<int>(e.kind) << ' ' << t.sites[e.site].name << ' '
      << t.sites[e.site].category << ' '
      << (e.kind == EventKind::arg || e.kind == EventKind::flow_out || e.kind == EventKind::flow_in ? 0 : e.time_ns)
      << ' ' << static_cast<int>(e.flags & ~EventFlags::late) << ' ' << e.depth << ' ';
    if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) {
      s << "text:" << context.text(e);
    } else {
      s << e.value.u;
    }
    out.push_back(s.str());
  }
  return out;
}

RecordedTrace replay_to_memory(const fs::path& file, ReplayResult* result = nullptr) {
  MemoryExporter memory;
  const ReplayResult r = replay_file(file, memory);
  if (result != nullptr) *result = r;
  return memory.trace();
}

// A workload with every kind of event, on three threads.
void workload(int scale) {
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([w, scale] {
      set_thread_name("worker-" + std::to_string(w));
      for (int i = 0; i < 300 * scale; ++i) {
        RINGTRACE_ZONE("step");
        RINGTRACE_ZONE_VALUE("i", i);
        if (i % 7 == 0) {
          const std::string text = "text \"" + std::to_string(i) + "\"\n\xFF";
          RINGTRACE_ZONE_TEXT("label", text.data(), text.size());
        }
        {
          RINGTRACE_REGION("graph", i % 3);
          RINGTRACE_ZONE_IN("cat", "op");
          RINGTRACE_ZONE_VALUE("x", i * 0.5);
        }
        if (w == 0) RINGTRACE_FLOW_OUT(i + 1);
        if (w == 1) RINGTRACE_FLOW_IN(i + 1);
        RINGTRACE_COUNTER("depth", i % 10);
        RINGTRACE_INSTANT("tick");
        if (i % 50 == 0) RINGTRACE_ASYNC_BEGIN("job", i);
        if (i % 50 == 25) RINGTRACE_ASYNC_END("job", i - 25);
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(BinaryTrace, ReplayGivesTheLiveStream) {
  const fs::path dir = temp_dir("roundtrip");
  Config config;
  config.overflow = OverflowPolicy::block;
  config.buffer_records = 256;  // many passes, wrapped rings, records split across chunks
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  workload(3);
  session.stop();
  ASSERT_TRUE(session.stats().exporter_errors.empty());
  ReplayResult result;
  const RecordedTrace live = memory->trace();
  const RecordedTrace back = replay_to_memory(dir / "run.rtrace", &result);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.problem, "");
  EXPECT_EQ(result.pid, static_cast<std::uint32_t>(::getpid()));
  std::vector<std::string> a = describe(live), b = describe(back);
  ASSERT_GT(a.size(), 10000u);
  EXPECT_EQ(a.size(), b.size());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_TRUE(a == b);
  for (std::size_t i = 0, shown = 0; i < std::min(a.size(), b.size()) && shown < 5; ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << "live: " << a[i] << "\nfile: " << b[i];
      ++shown;
    }
  }
  // Per thread, the order is the live order.
  std::map<std::uint64_t, std::vector<std::string>> la, lb;
  for (const std::string& s : describe(live)) la[std::stoull(s)].push_back(s);
  for (const std::string& s : describe(back)) lb[std::stoull(s)].push_back(s);
  EXPECT_TRUE(la == lb);
  EXPECT_EQ(back.stats.recorded, live.stats.recorded);
  EXPECT_EQ(back.process_name, live.process_name);
  ASSERT_EQ(back.threads.size(), live.threads.size());
  for (const ThreadInfo& t : back.threads) {
    const auto same = std::find_if(live.threads.begin(), live.threads.end(),
                                   [&](const ThreadInfo& l) { return l.os_tid == t.os_tid; });
    ASSERT_NE(same, live.threads.end());
    EXPECT_EQ(t.name, same->name);
    EXPECT_EQ(t.sort_index, same->sort_index);
  }
  EXPECT_TRUE(fs::exists(dir / "run.rtrace"));
  EXPECT_TRUE(partial_files(dir / "run.rtrace").empty());
}

// Config::self_drain: with the file as the session's only exporter, a thread that finds
// its ring full packs its own records into the file instead of waiting for the drainer,
// and then keeps packing at the 128 KiB mark for a while. A drainer that never wakes on
// its own nor at a high-water mark (high_water 1: only a full ring wakes it): the file
// holds every event, per thread in the order a live session decodes them (every kind of
// record, texts included).
// - Three threads, 4 KiB rings: they pack at every full ring (some of them: a thread's
//   first full ring goes to the drainer, which has not taken its ring yet, and a thread
//   preempted while it packs leaves the others' full rings to the drainer).
// - One thread, 512 KiB rings, its ring and call sites taken by the drainer before it
//   floods it: it packs its first full ring, then at the mark, and the drainer runs only
//   when the file's buffer is full.
// Under the drop policy a thread never packs its own ring (issue 36): a full ring drops,
// counted, and the drainer alone empties the rings; every event is in the file or counted.
TEST(BinaryTrace, DropModeThreadsNeverPackTheirOwnRings) {
  const fs::path dir = temp_dir("self_drain_drop");
  Config config;
  config.overflow = OverflowPolicy::drop;
  config.buffer_records = 256;  // 4 KiB rings: full at once
  config.high_water = 1.0;      // only a full ring wakes the drainer
  config.drain_interval = std::chrono::seconds(10);
  config.self_drain = true;  // allowed, and still not done under drop
  Session session(config);
  session.add_exporter(binary_trace_exporter(dir / "drop.rtrace"));
  session.start();
  constexpr int kZones = 200000;
  std::thread([] {
    for (int i = 0; i < kZones; ++i) {
      RINGTRACE_ZONE("flood");
    }
  }).join();
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_EQ(stats.self_drained, 0u);
  EXPECT_GT(stats.dropped, 0u);
  EXPECT_EQ(stats.recorded + stats.dropped, 2u * kZones);
  const RecordedTrace file = replay_to_memory(dir / "drop.rtrace");
  std::uint64_t boundaries = 0;
  for (const Event& e : file.events) boundaries += e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end;
  EXPECT_EQ(boundaries, stats.recorded);
}

TEST(BinaryTrace, ThreadsEmptyTheirOwnRingsIntoTheFile) {
  const fs::path dir = temp_dir("self_drain");
  // Per thread (by name), its events without their times: the same workload in a live
  // session and in the file.
  const auto by_thread = [](const RecordedTrace& t) {
    std::map<std::string, std::vector<std::string>> out;
    const RecordedTraceContext context(t);
    for (const Event& e : t.events) {
      std::ostringstream s;
      s << static_cast<int>(e.kind) << ' ' << t.sites[e.site].name << ' '
        << static_cast<int>(e.flags & ~EventFlags::late) << ' ' << e.depth << ' ';
      if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) {
        s << context.text(e);
      } else {
        s << e.value.u;
      }
      out[t.threads[e.thread].name].push_back(s.str());
    }
    return out;
  };
  // One thread: 40,000 loops of a zone with a value, a text now and then, an instant and a
  // counter: about 3 MB of ring records, six 512 KiB rings' worth.
  const auto one_thread = [] {
    std::thread t([] {
      set_thread_name("flood");
      const auto loop = [](int from, int to) {
        for (int i = from; i < to; ++i) {
          RINGTRACE_ZONE("flood");
          RINGTRACE_ZONE_VALUE("i", i);
          if (i % 100 == 0) RINGTRACE_ZONE_TEXT("label", "some text");
          RINGTRACE_INSTANT("tick");
          RINGTRACE_COUNTER("count", i);
        }
      };
      // The drainer takes the ring and describes every call site: a thread packs only
      // records of sites the file has (describing one allocates), and the drainer runs
      // no pass that could hold its lock when the ring fills.
      loop(0, 1);
      EXPECT_TRUE(detail::run_drainer_pass());
      loop(1, 40000);
    });
    t.join();
  };
  for (const std::size_t records : {std::size_t{256}, std::size_t{1} << 15}) {
    SCOPED_TRACE("buffer_records " + std::to_string(records));
    const auto record = [&](bool self_drain, const std::shared_ptr<Exporter>& exporter) {
      Config config;
      config.overflow = OverflowPolicy::block;
      config.buffer_records = records;
      config.high_water = 1.0;
      config.drain_interval = std::chrono::seconds(10);  // the drainer runs only when woken
      config.self_drain = self_drain;
      Session session(config);
      session.add_exporter(exporter);
      session.start();
      if (records == 256) {
        workload(20);  // about 1 MB of ring records per thread
      } else {
        one_thread();
      }
      session.stop();
      return session.stats();
    };
    auto memory = std::make_shared<MemoryExporter>();
    const SessionStats live = record(true, memory);  // decoded live: no thread packs (no file)
    const SessionStats own = record(true, binary_trace_exporter(dir / "own.rtrace"));
    const SessionStats drainer = record(false, binary_trace_exporter(dir / "drainer.rtrace"));
    for (const SessionStats* s : {&live, &own, &drainer}) {
      EXPECT_TRUE(s->exporter_errors.empty());
      EXPECT_EQ(s->dropped, 0u);
      EXPECT_EQ(s->recorded, live.recorded);
    }
    EXPECT_EQ(live.self_drained, 0u);
    EXPECT_EQ(drainer.self_drained, 0u);
    if (records == 256) {
      EXPECT_GT(own.self_drained, 0u);  // Release 75 to 95%, ThreadSanitizer 20 to 30%
    } else {
      // All but what the drainer took at the stop, and when the file's buffer was full.
      EXPECT_GT(own.self_drained, own.recorded / 2);
      EXPECT_LT(own.drain_passes, 20u);  // the drainer alone: one per full ring at least
      EXPECT_GE(drainer.drain_passes, 6u);
    }
    const auto expected = by_thread(memory->trace());
    ASSERT_EQ(expected.size(), records == 256 ? 3u : 1u);
    for (const char* name : {"own.rtrace", "drainer.rtrace"}) {
      ReplayResult r;
      const RecordedTrace back = replay_to_memory(dir / name, &r);
      EXPECT_TRUE(r.complete) << name << ": " << r.problem;
      EXPECT_EQ(back.stats.recorded, live.recorded) << name;
      EXPECT_TRUE(by_thread(back) == expected) << name;
      for (std::size_t i = 1; i < back.events.size(); ++i) {
        ASSERT_LE(back.events[i - 1].time_ns, back.events[i].time_ns) << name << ": event " << i;
      }
    }
  }
}

// Config::per_thread_counters gives every counter one track per thread, as
// RINGTRACE_COUNTER_PER_THREAD gives its own site: in the live Chrome trace, in the
// stream the exporters see, and in the file (a replay keeps the option).
TEST(BinaryTrace, PerThreadCountersLiveAndInTheFile) {
  const fs::path dir = temp_dir("per_thread_counters");
  for (const bool per_thread : {false, true}) {
    SCOPED_TRACE(per_thread);
    Config config;
    config.overflow = OverflowPolicy::block;
    config.per_thread_counters = per_thread;
    std::ostringstream json;
    std::vector<std::uint64_t> tids(2);
    {
      Session session(config);
      auto memory = std::make_shared<MemoryExporter>();
      session.add_exporter(memory);
      session.add_exporter(chrome_trace_exporter(json));
      session.add_exporter(binary_trace_exporter(dir / "run.rtrace"));
      session.start();
      std::vector<std::thread> threads;
      for (int w = 0; w < 2; ++w) {
        threads.emplace_back([w, &tids] {
          tids[static_cast<std::size_t>(w)] = static_cast<std::uint64_t>(::gettid());
          for (int i = 0; i < 10; ++i) {
            RINGTRACE_COUNTER("queue", i + 100 * w);
            RINGTRACE_COUNTER_PER_THREAD("own", i);
          }
        });
      }
      for (auto& t : threads) t.join();
      session.stop();
      ASSERT_TRUE(session.stats().exporter_errors.empty());
      ReplayResult result;
      const RecordedTrace back = replay_to_memory(dir / "run.rtrace", &result);
      EXPECT_TRUE(result.complete) << result.problem;
      const RecordedTrace live = memory->trace();
      for (const RecordedTrace* t : {&live, &back}) {
        int counters = 0;
        for (const RecordedSite& site : t->sites) {
          if (site.kind != SiteKind::counter) continue;
          ++counters;
          const bool own = site.name == "own";
          EXPECT_EQ((site.options & SiteOptions::per_thread_track) != 0, per_thread || own) << site.name;
        }
        EXPECT_EQ(counters, 2);
      }
    }
    const std::string text = json.str();
    const auto count = [&](const std::string& needle) {
      std::size_t n = 0;
      for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
      return n;
    };
    for (const std::uint64_t tid : tids) {
      const std::string t = std::to_string(tid);
      EXPECT_EQ(count("\"name\":\"own (tid " + t + ")\",\"pid\":"), 10u) << text;
      EXPECT_EQ(count("\"name\":\"queue (tid " + t + ")\",\"pid\":"), per_thread ? 10u : 0u);
    }
    EXPECT_EQ(count("\"name\":\"queue\",\"pid\":"), per_thread ? 0u : 20u);
  }
}

// Alone, the file exporter makes the drainer copy records only; the file then holds
// exactly what the program produced, and the aggregating exporters, run on the file,
// print what they print live.
TEST(BinaryTrace, AloneAndConvertedLikeLiveExporters) {
  const fs::path dir = temp_dir("alone");
  Config config;
  config.overflow = OverflowPolicy::block;
  {
    Session session(config);
    session.add_exporter(binary_trace_exporter(dir / "alone.rtrace"));
    session.start();
    workload(2);
    session.stop();
    const SessionStats stats = session.stats();
    EXPECT_EQ(stats.dropped, 0u);
    // Per zone "step": begin, end, value i; "graph"+"op": 4 + value x; counter, instant.
    EXPECT_GE(stats.recorded, 3u * 600 * 10);
  }
  ReplayResult result;
  const RecordedTrace back = replay_to_memory(dir / "alone.rtrace", &result);
  EXPECT_TRUE(result.complete) << result.problem;
  std::map<std::string, std::uint64_t> begins;
  for (const Event& e : back.events) {
    if (e.kind == EventKind::zone_begin) begins[back.sites[e.site].name] += 1;
  }
  // The file is ordered by drainer pass, not by time: the reader must hold events back
  // until a pass says nothing older can follow. Done wrong, most events come out late
  // (raised to a later time: zones of zero length).
  EXPECT_LT(back.stats.late_events * 100, back.events.size()) << back.stats.late_events;
  EXPECT_EQ(begins["step"], 1800u);
  EXPECT_EQ(begins["graph"], 1800u);
  EXPECT_EQ(begins["op"], 1800u);

  // The same session's live exporters and the file converted.
  Session session(config);
  std::ostringstream folded_live, table_live;
  auto pstats_live = pstats_exporter(dir / "live.prof");
  session.add_exporter(folded_stacks_exporter(folded_live));
  session.add_exporter(table_exporter(table_live));
  session.add_exporter(pstats_live);
  session.add_exporter(binary_trace_exporter(dir / "both.rtrace"));
  session.start();
  workload(1);
  session.stop();
  std::ostringstream folded_file, table_file;
  auto pstats_file = pstats_exporter(dir / "file.prof");
  auto folded = folded_stacks_exporter(folded_file);
  auto table = table_exporter(table_file);
  Exporter* const all[] = {folded.get(), table.get(), pstats_file.get()};
  EXPECT_TRUE(replay_file(dir / "both.rtrace", all).complete);
  EXPECT_EQ(folded_file.str(), folded_live.str());
  EXPECT_EQ(table_file.str(), table_live.str());
  EXPECT_EQ(read_file(dir / "file.prof"), read_file(dir / "live.prof"));
}

// Frame offsets of a file, from its headers.
std::vector<std::size_t> frame_offsets(const std::string& bytes) {
  std::vector<std::size_t> at;
  for (std::size_t o = tf::kHeaderBytes; o + tf::kFrameHeaderBytes <= bytes.size();) {
    at.push_back(o);
    std::uint32_t len;
    std::memcpy(&len, bytes.data() + o + 4, 4);
    o += tf::kFrameHeaderBytes + len;
  }
  return at;
}

fs::path small_file(const std::string& name) {
  const fs::path dir = temp_dir(name);
  Config config;
  config.overflow = OverflowPolicy::block;
  config.buffer_records = 128;
  config.drain_interval = std::chrono::microseconds(200);
  Session session(config);
  session.add_exporter(binary_trace_exporter(dir / "t.rtrace"));
  session.start();
  std::thread other([] {
    for (int i = 0; i < 400; ++i) {
      RINGTRACE_ZONE("b");
      RINGTRACE_ZONE_VALUE("v", i);
    }
  });
  for (int i = 0; i < 400; ++i) {
    RINGTRACE_ZONE("a");
    RINGTRACE_ZONE("inner");
  }
  other.join();
  session.stop();
  return dir / "t.rtrace";
}

// Cut at every frame boundary, and inside every frame: what is complete converts, the
// result says where the file ends, zones left open are closed, nothing throws.
TEST(BinaryTrace, CutFilesConvertWhatIsComplete) {
  const fs::path file = small_file("cut");
  const std::string bytes = read_file(file);
  const std::vector<std::size_t> frames = frame_offsets(bytes);
  ASSERT_GT(frames.size(), 10u);
  const RecordedTrace whole = replay_to_memory(file);
  std::vector<std::size_t> cuts;
  for (std::size_t f : frames) {
    cuts.push_back(f);
    cuts.push_back(f + 7);
    cuts.push_back(f + tf::kFrameHeaderBytes + 5);
  }
  const fs::path cut = file.parent_path() / "cut.rtrace";
  std::size_t previous = 0;
  for (std::size_t at : cuts) {
    if (at >= bytes.size()) continue;
    write_file(cut, bytes.substr(0, at));
    ReplayResult r;
    RecordedTrace t;
    ASSERT_NO_THROW(t = replay_to_memory(cut, &r)) << at;
    EXPECT_FALSE(r.complete) << at;
    EXPECT_FALSE(r.problem.empty()) << at;
    if (at > frames[1]) {
      EXPECT_NE(r.problem.find("cut short"), std::string::npos) << r.problem;
    }
    EXPECT_LE(t.events.size(), whole.events.size() + 64);
    int depth = 0;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::zone_begin) ++depth;
      if (e.kind == EventKind::zone_end) --depth;
    }
    EXPECT_EQ(depth, 0) << "zones left open at a cut at byte " << at;
    if (at >= frames.back()) continue;
    EXPECT_GE(t.stats.recorded + 64, previous) << "a longer prefix gives at least as much";
    previous = std::max(previous, static_cast<std::size_t>(t.stats.recorded));
  }
}

TEST(BinaryTrace, DamagedFramesAreNamedByOffset) {
  const fs::path file = small_file("damaged");
  std::string bytes = read_file(file);
  const std::vector<std::size_t> frames = frame_offsets(bytes);
  // A chunk in the middle, with records in it (packed chunks can be a few bytes long):
  // flip one byte in the middle of its payload.
  std::size_t chunk = 0;
  std::uint32_t length = 0;
  for (std::size_t f : frames) {
    std::uint32_t type;
    std::memcpy(&type, bytes.data() + f, 4);
    std::memcpy(&length, bytes.data() + f + 4, 4);
    if (type == tf::frame_chunk && f > bytes.size() / 2 && length >= 24) {
      chunk = f;
      break;
    }
  }
  ASSERT_NE(chunk, 0u);
  bytes[chunk + tf::kFrameHeaderBytes + length / 2] ^= 0x40;
  const fs::path bad = file.parent_path() / "flipped.rtrace";
  write_file(bad, bytes);
  ReplayResult r;
  const RecordedTrace t = replay_to_memory(bad, &r);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.problem.find("checksum mismatch in the frame at byte " + std::to_string(chunk)), std::string::npos)
      << r.problem;
  EXPECT_GT(t.events.size(), 0u);                             // what came before converts
  bytes[chunk + tf::kFrameHeaderBytes + length / 2] ^= 0x40;  // whole again

  // The CRC32C covers the frame's header and payload: any bit of either flipped is seen
  // (computed here as docs/file-format.md says, on the bytes of the file).
  std::string frame = bytes.substr(chunk, tf::kFrameHeaderBytes + length);
  std::uint32_t stored;
  std::memcpy(&stored, frame.data() + 8, 4);
  const auto crc_of = [](std::string f) {
    std::memset(f.data() + 8, 0, 4);
    return ringtrace::detail::crc32c(f.data(), f.size());
  };
  ASSERT_EQ(crc_of(frame), stored);
  for (std::size_t at = 0; at < frame.size(); ++at) {
    if (at >= 8 && at < 12) continue;  // the CRC itself
    for (int bit = 0; bit < 8; ++bit) {
      frame[at] = static_cast<char>(frame[at] ^ (1 << bit));
      EXPECT_NE(crc_of(frame), stored) << "byte " << at << " bit " << bit;
      frame[at] = static_cast<char>(frame[at] ^ (1 << bit));
    }
  }
}

// Every bit of a frame's header flipped, one at a time (type, length, checksum, flags),
// in the file: never a frame skipped as "unknown" nor a silently shorter stream; the
// reader stops there and names the frame's offset (issue 22, point 7).
TEST(BinaryTrace, EveryBitOfAFrameHeaderFlippedIsNamed) {
  const fs::path file = small_file("header_bits");
  std::string bytes = read_file(file);
  const std::vector<std::size_t> frames = frame_offsets(bytes);
  ASSERT_GT(frames.size(), 4u);
  const RecordedTrace whole = replay_to_memory(file);
  const std::size_t at = frames[frames.size() / 2];  // a frame in the middle
  const fs::path bad = file.parent_path() / "bit.rtrace";
  for (int bit = 0; bit < 128; ++bit) {
    std::string flipped = bytes;
    flipped[at + static_cast<std::size_t>(bit / 8)] ^= static_cast<char>(1 << (bit % 8));
    write_file(bad, flipped);
    ReplayResult r;
    RecordedTrace t;
    ASSERT_NO_THROW(t = replay_to_memory(bad, &r)) << "bit " << bit;
    EXPECT_FALSE(r.complete) << "bit " << bit;
    EXPECT_NE(r.problem.find("byte " + std::to_string(at)), std::string::npos) << "bit " << bit << ": " << r.problem;
    EXPECT_LT(t.stats.recorded, whole.stats.recorded) << "bit " << bit;
  }
}

// Files written in format 1 (by ringtrace before format 2; tests/binary/fixtures/format1)
// read as that version read them: the same events, times, flags and counts, whole, cut
// short and merged.
TEST(BinaryTrace, FormatOneFilesStillReadTheSame) {
  const fs::path dir = fs::path(RINGTRACE_TEST_FIXTURES) / "format1";
  for (const char* name : {"one", "merged", "cut"}) {
    std::ifstream expected_file(dir / (std::string(name) + ".expected"));
    std::vector<std::string> expected;
    for (std::string line; std::getline(expected_file, line);) expected.push_back(line);
    ASSERT_GT(expected.size(), 4u) << name;
    auto memory = std::make_shared<MemoryExporter>();
    const ReplayResult r = replay_file(dir / (std::string(name) + ".rtrace"), *memory);
    const RecordedTrace t = memory->trace();
    EXPECT_EQ(r.version, 1u) << name;
    EXPECT_EQ("complete " + std::to_string(r.complete ? 1 : 0), expected[0]) << name;
    EXPECT_EQ("problem " + r.problem, expected[1]) << name;
    EXPECT_EQ("events " + std::to_string(r.events), expected[2]) << name;
    EXPECT_EQ("recorded " + std::to_string(t.stats.recorded) + " dropped " + std::to_string(t.stats.dropped) +
                  " closed " + std::to_string(t.stats.closed_at_stop),
              expected[3])
        << name;
    const RecordedTraceContext context(t);
    std::vector<std::string> got;
    for (const Event& e : t.events) {
      std::ostringstream line;
      line << t.threads[e.thread].name << ' ' << static_cast<int>(e.kind) << ' ' << t.sites[e.site].name << ' '
           << t.sites[e.site].category << ' ' << e.time_ns << ' ' << static_cast<int>(e.flags) << ' ' << e.depth << ' ';
      if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) {
        line << "text:" << context.text(e);
      } else {
        line << e.value.u;
      }
      got.push_back(line.str());
    }
    EXPECT_EQ(got, std::vector<std::string>(expected.begin() + 4, expected.end())) << name;
  }
}

// Fed a stream instead of a live session's rings (a window, a snapshot, replay()), the
// file holds that stream: read back, it is the same events, times to the nanosecond
// included (no spacing of boundaries: the stream's times are kept).
TEST(BinaryTrace, AStreamIsWrittenAndReadBackAsItWas) {
  const fs::path dir = temp_dir("stream");
  Config config;
  config.buffer_records = 256;
  Session session(config);
  auto live = std::make_shared<MemoryExporter>();
  session.add_exporter(live);
  session.start();
  workload(2);
  session.stop();
  const RecordedTrace recorded = live->trace();
  auto exporter = binary_trace_exporter(dir / "stream.rtrace");
  replay(recorded, *exporter, 1000);
  exporter.reset();
  ReplayResult r;
  const RecordedTrace back = replay_to_memory(dir / "stream.rtrace", &r);
  EXPECT_TRUE(r.complete) << r.problem;
  const std::vector<std::string> a = describe(recorded), b = describe(back);
  ASSERT_EQ(a.size(), b.size());
  std::vector<std::string> sa = a, sb = b;  // same-time events of two threads may swap
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  EXPECT_EQ(sa, sb);
  for (const Event& e : back.events) EXPECT_EQ(e.flags & EventFlags::late, 0);
  EXPECT_EQ(back.stats.recorded, recorded.stats.recorded);
  EXPECT_EQ(back.stats.dropped, recorded.stats.dropped);
  std::map<std::uint64_t, std::string> names;
  for (const ThreadInfo& info : back.threads) names[info.os_tid] = info.name;
  for (const ThreadInfo& info : recorded.threads) EXPECT_EQ(names[info.os_tid], info.name);

  // Hand-built: a region, a zone and a text at time 0, a zone left open (closed at the
  // stop, flagged, in both), a drop marker, counters of both kinds.
  TraceBuilder builder("built");
  const ThreadId t = builder.thread("main", 77);
  const SiteId zone = builder.site("z"), region = builder.site("r", SiteKind::region);
  const SiteId label = builder.site("label", SiteKind::value), c = builder.site("c", SiteKind::counter);
  builder.begin(t, zone, 0).text(t, label, 0, std::string("a \"text\"\n\xFF", 10)).end(t, 5);
  builder.begin(t, region, 10, -3).counter(t, c, 11, std::int64_t{-7}).counter(t, c, 12, 2.5).end(t, 20);
  builder.dropped(t, 30, 4).begin(t, zone, 40);
  const RecordedTrace built = builder.build(100);
  auto second = binary_trace_exporter(dir / "built.rtrace");
  replay(built, *second);
  second.reset();
  const RecordedTrace built_back = replay_to_memory(dir / "built.rtrace", &r);
  EXPECT_TRUE(r.complete) << r.problem;
  EXPECT_EQ(describe(built), describe(built_back));
  EXPECT_EQ(built_back.process_name, "built");
}

TEST(BinaryTrace, HostileFilesGetOneClearError) {
  const fs::path dir = temp_dir("hostile");
  const auto error_of = [&](const std::string& bytes) -> std::string {
    write_file(dir / "f.rtrace", bytes);
    MemoryExporter memory;
    try {
      const ReplayResult r = replay_file(dir / "f.rtrace", memory);
      return "ok:" + r.problem;
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  };
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\":[]}").find("not a ringtrace trace file"), std::string::npos);
  std::string future(tf::kMagic, 8);
  future += std::string("\x00\x00\x03\x00\x00\x00\x00\x00", 8);  // format 3.0
  EXPECT_NE(error_of(future).find("file format 3.0"), std::string::npos) << error_of(future);
  std::string old_number(tf::kMagic, 8);
  old_number += std::string("\x03\x00\x00\x00\x00\x00\x00\x00", 8);  // neither format 1 nor 2
  EXPECT_NE(error_of(old_number).find("file format 0.3"), std::string::npos) << error_of(old_number);
  // A frame claiming 4 GB: refused, no allocation.
  const std::uint32_t version = tf::kVersionWord;
  std::string huge(tf::kMagic, 8);
  huge.append(reinterpret_cast<const char*>(&version), 4).append(4, '\0');
  huge += std::string("\x01\x00\x00\x00\xFF\xFF\xFF\xFF\x00\x00\x00\x00\x00\x00\x00\x00", 16);
  EXPECT_NE(error_of(huge).find("claims 4294967295 bytes"), std::string::npos) << error_of(huge);
  // A chunk before any session frame, and random bytes after a valid header.
  std::string early(tf::kMagic, 8);
  early.append(reinterpret_cast<const char*>(&version), 4).append(4, '\0');
  std::string chunk_frame("\x05\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 16);
  chunk_frame.append(8, '\0');
  const std::uint32_t crc = ringtrace::detail::crc32c(chunk_frame.data(), chunk_frame.size());
  std::memcpy(chunk_frame.data() + 8, &crc, 4);
  early += chunk_frame;
  EXPECT_NE(error_of(early).find("is not the session's"), std::string::npos) << error_of(early);
  // A merged file whose first frame is no process frame, or with junk.
  std::string merged(tf::kMagic, 8);
  const std::uint32_t merged_feature = tf::kFeatureMerged;
  merged.append(reinterpret_cast<const char*>(&version), 4).append(reinterpret_cast<const char*>(&merged_feature), 4);
  EXPECT_NE(error_of(merged + early.substr(16)).find("no process frame at byte 16"), std::string::npos)
      << error_of(merged + early.substr(16));
  // 200 headers followed by 64 random bytes, each as a file of one process and as a
  // merged file: one clear error each, never a crash, a hang or a file read as whole.
  // Either a runtime_error naming the file, or (the reader keeps what comes before the
  // damage) the file not complete and one problem line at a byte offset inside the file
  // (the caller names the file: `ringtrace dump` says "<file>: <problem>").
  const auto expect_one_clear_error = [&](const std::string& bytes, int i) {
    write_file(dir / "f.rtrace", bytes);
    MemoryExporter memory;
    try {
      const ReplayResult r = replay_file(dir / "f.rtrace", memory);
      EXPECT_FALSE(r.complete) << "junk " << i;
      EXPECT_FALSE(r.problem.empty()) << "junk " << i;
      EXPECT_EQ(r.problem.find('\n'), std::string::npos) << "junk " << i << ": " << r.problem;
      const std::size_t at = r.problem.find("at byte ");
      ASSERT_NE(at, std::string::npos) << "junk " << i << ": " << r.problem;
      EXPECT_LE(std::stoull(r.problem.substr(at + 8)), bytes.size()) << "junk " << i << ": " << r.problem;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("f.rtrace"), std::string::npos) << "junk " << i << ": " << e.what();
    }
  };
  std::mt19937 random(7);
  for (int i = 0; i < 200; ++i) {
    std::string junk(tf::kMagic, 8);
    junk.append(reinterpret_cast<const char*>(&version), 4).append(4, '\0');
    for (int j = 0; j < 64; ++j) junk.push_back(static_cast<char>(random()));
    expect_one_clear_error(junk, i);
    junk[12] = 1;  // the same junk as a merged file
    expect_one_clear_error(junk, i);
  }
  EXPECT_THROW(replay_to_memory(dir / "missing.rtrace"), std::runtime_error);
}

// Drop mode with tiny rings, file exporter alone: recorded + dropped is exactly what
// the program produced, in the live stats and in the file read back.
TEST(BinaryTrace, DropAccountingSurvivesTheFile) {
  const fs::path dir = temp_dir("drops");
  Config config;
  config.buffer_records = 64;
  config.drain_interval = std::chrono::microseconds(20000);
  config.yield_to_drainer = false;  // drops must happen: no yield to let the drainer keep up
  config.self_drain = false;        // nor threads that empty their own rings
  std::atomic<std::uint64_t> produced{0};
  SessionStats live;
  {
    Session session(config);
    session.add_exporter(binary_trace_exporter(dir / "d.rtrace"));
    session.start();
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
      threads.emplace_back([&] {
        for (int i = 0; i < 20000; ++i) {
          RINGTRACE_ZONE("z");
          RINGTRACE_INSTANT("i");
        }
        produced += 20000 * 3;
      });
    }
    for (auto& t : threads) t.join();
    session.stop();
    live = session.stats();
  }
  EXPECT_GT(live.dropped, 0u);
  EXPECT_EQ(live.recorded + live.dropped, produced.load());
  ReplayResult r;
  const RecordedTrace back = replay_to_memory(dir / "d.rtrace", &r);
  EXPECT_TRUE(r.complete) << r.problem;
  EXPECT_EQ(back.stats.recorded, live.recorded);
  EXPECT_EQ(back.stats.dropped, live.dropped);
  std::uint64_t dropped_events = 0, others = 0;
  for (const Event& e : back.events) {
    if (e.kind == EventKind::dropped) {
      dropped_events += e.value.u;
    } else {
      ++others;
    }
  }
  EXPECT_EQ(dropped_events, live.dropped);
  EXPECT_EQ(others, live.recorded);
}

// A child process records flat out into the file, alone, and is killed with SIGKILL at
// a random moment: its temporary (run.rtrace.partial.XXXXXXXX) always converts, every
// zone balanced.
TEST(BinaryTrace, KilledProcessesLeaveReadableFiles) {
  const fs::path dir = temp_dir("killed");
  std::mt19937 random(12345);
  int with_events = 0;
  for (int run = 0; run < 20; ++run) {
    const fs::path file = dir / ("k" + std::to_string(run) + ".rtrace");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Session session;
      session.add_exporter(binary_trace_exporter(file));
      session.start();
      { RINGTRACE_ZONE("first"); }
      if (!ringtrace::detail::run_drainer_pass()) ::_exit(3);  // a drainer pass has written the file
      (void)!::write(ready[1], "r", 1);
      for (std::uint64_t i = 0;; ++i) {
        RINGTRACE_ZONE("outer");
        RINGTRACE_ZONE_VALUE("i", i);
        RINGTRACE_ZONE("inner");
      }
    }
    char byte;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 60000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const std::vector<fs::path> partials = partial_files(file);  // the killed run's temporary
    ASSERT_EQ(partials.size(), 1u) << run;
    const fs::path partial = partials[0];
    ReplayResult r;
    RecordedTrace t;
    ASSERT_NO_THROW(t = replay_to_memory(partial, &r)) << run;
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.pid, static_cast<std::uint32_t>(child));
    int depth = 0;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::zone_begin) ++depth;
      if (e.kind == EventKind::zone_end) --depth;
      ASSERT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    with_events += !t.events.empty();
  }
  EXPECT_GT(with_events, 10);
}

// ---- ringtrace merge: several processes' files on one timeline ---------------------

// What a replay delivers, per event: its process, thread, site, kind and time; and the
// processes' names.
class ProcessCensus final : public Exporter {
 public:
  struct Row {
    std::uint32_t pid;
    std::uint64_t tid;
    std::string site;
    EventKind kind;
    std::uint64_t time;
    bool operator==(const Row&) const = default;
  };
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) {
      const ThreadInfo& t = context.thread(e.thread);
      rows.push_back(
          Row{t.pid == 0 ? context.process_id() : t.pid, t.os_tid, context.site(e.site).name, e.kind, e.time_ns});
      names[rows.back().pid] = context.process_name_of(rows.back().pid);
    }
  }
  void on_finish(const TraceContext&, const SessionStats& s) override { stats = s; }
  std::vector<Row> rows;
  std::map<std::uint32_t, std::string> names;
  SessionStats stats;
};

// Records `zones` zones named `name` on two threads of this process into `file`: half of
// them on each thread, then `midway()` (when given) once both are halfway, then the rest.
void record_zones(const fs::path& file, const std::string& process, const std::string& name, int zones,
                  const std::function<void()>& midway = {}) {
  Config config;
  config.process_name = process;
  config.overflow = OverflowPolicy::block;
  Session session(config);
  session.add_exporter(binary_trace_exporter(file));
  const SiteInfo site{name.c_str(), "record_zones", "test_binary_trace.cpp", 1, SiteKind::zone, 0, ""};
  session.start();
  std::barrier halfway(2, [&]() noexcept {
    if (midway) midway();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < zones; ++i) {
        if (i == zones / 2) halfway.arrive_and_wait();
        RINGTRACE_ZONE_SITE(&site);
        RINGTRACE_ZONE("inner");
        std::this_thread::sleep_for(std::chrono::microseconds(i % 50 == 0 ? 100 : 0));
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
}

ProcessCensus census_of(const fs::path& file, ReplayResult* result = nullptr) {
  ProcessCensus c;
  const ReplayResult r = replay_file(file, c);
  if (result != nullptr) *result = r;
  return c;
}

// The rows of one process, in stream order.
std::vector<ProcessCensus::Row> rows_of(const ProcessCensus& c, std::uint32_t pid) {
  std::vector<ProcessCensus::Row> out;
  for (const auto& r : c.rows) {
    if (r.pid == pid) out.push_back(r);
  }
  return out;
}

// Two processes recording at the same time, merged: one stream ordered by time, each
// process's events exactly as its own file gives them (same host and boot: no offset),
// under its own pid and name. Each records half its zones, waits for the other to have
// done so, then records the rest: the two overlap in time whatever the scheduler does.
TEST(Merge, TwoProcessesRecordingTogetherShareOneTimeline) {
  const fs::path dir = temp_dir("merge_two");
  int go[2], to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  // Says it is halfway on `tell`, then waits to hear it from the other on `hear` (an end
  // of file if the other is gone: each process closes the ends it does not use).
  const auto meet = [](int tell, int hear) {
    return [tell, hear] {
      char byte = 'h';
      (void)!::write(tell, &byte, 1);
      (void)!::read(hear, &byte, 1);
    };
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(to_child[1]);
    ::close(to_parent[0]);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(2);
    record_zones(dir / "child.rtrace", "the child", "child_zone", 3000, meet(to_parent[1], to_child[0]));
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);
  (void)!::write(go[1], "g", 1);
  record_zones(dir / "parent.rtrace", "the parent", "parent_zone", 3000, meet(to_child[1], to_parent[0]));
  ::close(to_child[1]);
  ::close(to_parent[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  const std::vector<fs::path> inputs = {dir / "child.rtrace", dir / "parent.rtrace"};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> copied;
  const MergeResult merged = merge_files(
      inputs, dir / "both.rtrace", [&](std::uint64_t done, std::uint64_t total) { copied.emplace_back(done, total); });
  ASSERT_FALSE(copied.empty());
  EXPECT_EQ(copied.back().first, copied.back().second);
  EXPECT_EQ(copied.back().second, fs::file_size(inputs[0]) + fs::file_size(inputs[1]) - 32);  // less the headers
  EXPECT_TRUE(merged.problems.empty());
  ASSERT_EQ(merged.processes.size(), 2u);
  for (const ReplayProcess& p : merged.processes) {
    EXPECT_FALSE(p.realtime_aligned);
    EXPECT_EQ(p.offset_ns, 0);
    EXPECT_TRUE(p.complete);
  }
  // Progress of a replay: never backwards, last the whole file.
  ProcessCensus ignored;
  Exporter* const one[] = {&ignored};
  ReplayOptions options;
  std::vector<std::uint64_t> read;
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_EQ(total, fs::file_size(dir / "both.rtrace"));
    read.push_back(done);
  };
  replay_file(dir / "both.rtrace", one, options);
  ASSERT_GT(read.size(), 2u);
  EXPECT_TRUE(std::is_sorted(read.begin(), read.end()));
  EXPECT_EQ(read.back(), fs::file_size(dir / "both.rtrace"));
  ReplayResult r;
  const ProcessCensus both = census_of(dir / "both.rtrace", &r);
  EXPECT_TRUE(r.complete) << r.problem;
  EXPECT_EQ(r.version, 2u);
  ASSERT_EQ(r.processes.size(), 2u);
  const auto child_pid = static_cast<std::uint32_t>(child), parent_pid = static_cast<std::uint32_t>(::getpid());
  EXPECT_EQ(both.names.at(child_pid), "the child");
  EXPECT_EQ(both.names.at(parent_pid), "the parent");
  // Ordered by time across the processes, and the processes overlap in time.
  for (std::size_t i = 1; i < both.rows.size(); ++i) ASSERT_LE(both.rows[i - 1].time, both.rows[i].time) << i;
  const ProcessCensus alone_child = census_of(inputs[0]), alone_parent = census_of(inputs[1]);
  const auto from_child = rows_of(both, child_pid), from_parent = rows_of(both, parent_pid);
  EXPECT_EQ(from_child.size(), 4u * 3000u * 2u);
  EXPECT_TRUE(from_child == alone_child.rows);
  EXPECT_TRUE(from_parent == alone_parent.rows);
  EXPECT_EQ(from_child.size() + from_parent.size(), both.rows.size());
  EXPECT_LT(from_child.front().time, from_parent.back().time);
  EXPECT_LT(from_parent.front().time, from_child.back().time);
  EXPECT_EQ(both.stats.recorded, alone_child.stats.recorded + alone_parent.stats.recorded);
  ASSERT_EQ(both.stats.threads.size(), 4u);
  for (const ThreadStats& t : both.stats.threads) EXPECT_TRUE(t.pid == child_pid || t.pid == parent_pid);
  // A merge of a merged file and another: three processes.
  const std::vector<fs::path> again = {dir / "both.rtrace", inputs[0]};
  const MergeResult three = merge_files(again, dir / "three.rtrace");
  EXPECT_EQ(three.processes.size(), 3u);
  const ProcessCensus all = census_of(dir / "three.rtrace");
  EXPECT_EQ(all.rows.size(), both.rows.size() + alone_child.rows.size());
  EXPECT_EQ(all.names.size(), 3u);  // the child seen twice gets a pid of its own
}

// A copy of `from` whose session says it was recorded on `host`, with its CLOCK_REALTIME
// anchor moved by `shift_ns` (as on a host whose boot was that much later).
void rehost(const fs::path& from, const fs::path& to, const std::string& host, std::int64_t shift_ns) {
  const std::string bytes = read_file(from);
  std::uint32_t length;
  std::memcpy(&length, bytes.data() + 16 + 4, 4);
  std::string payload = bytes.substr(32, length);
  std::uint64_t realtime;
  std::memcpy(&realtime, payload.data() + 24, 8);  // docs/file-format.md: the session frame
  realtime += static_cast<std::uint64_t>(shift_ns);
  std::memcpy(payload.data() + 24, &realtime, 8);
  std::size_t at = 64;  // the process name
  std::uint32_t n;
  std::memcpy(&n, payload.data() + at, 4);
  at += 4 + n;
  std::memcpy(&n, payload.data() + at, 4);
  std::string rebuilt = payload.substr(0, at);
  tf::put_str(rebuilt, host);
  rebuilt += payload.substr(at + 4 + n);
  std::string out = bytes.substr(0, 16);
  std::string frame;
  tf::put_u32(frame, tf::frame_session);
  tf::put_u32(frame, static_cast<std::uint32_t>(rebuilt.size()));
  tf::put_u32(frame, 0);
  tf::put_u32(frame, 0);
  frame += rebuilt;
  const std::uint32_t crc = ringtrace::detail::crc32c(frame.data(), frame.size());  // header and payload
  std::memcpy(frame.data() + 8, &crc, 4);
  out += frame + bytes.substr(32 + length);
  write_file(to, out);
}

// CLOCK_REALTIME minus CLOCK_MONOTONIC at the session's anchor (the session frame).
std::int64_t boot_of(const fs::path& file) {
  const std::string bytes = read_file(file);
  std::uint64_t realtime, monotonic;
  std::memcpy(&realtime, bytes.data() + 32 + 24, 8);
  std::memcpy(&monotonic, bytes.data() + 32 + 32, 8);
  return static_cast<std::int64_t>(realtime - monotonic);
}

// Two recordings of one process (one pid) and one said to be from another host: the pid
// seen twice gets a pid of its own and a name that says where it came from; the other
// host's process is placed through the CLOCK_REALTIME anchors, to the nanosecond of the
// shift given here.
TEST(Merge, SamePidTwiceAndAnotherHost) {
  const fs::path dir = temp_dir("merge_hosts");
  record_zones(dir / "first.rtrace", "proc", "first_zone", 500);
  record_zones(dir / "second.rtrace", "proc", "second_zone", 500);
  const std::int64_t shift = 5000000000;
  rehost(dir / "second.rtrace", dir / "remote.rtrace", "elsewhere", shift);
  ReplayResult rr;
  const ProcessCensus remote_alone = census_of(dir / "remote.rtrace", &rr);
  ASSERT_TRUE(rr.complete) << rr.problem;
  EXPECT_EQ(rr.host, "elsewhere");

  const std::vector<fs::path> inputs = {dir / "first.rtrace", dir / "second.rtrace", dir / "remote.rtrace"};
  const MergeResult m = merge_files(inputs, dir / "all.rtrace");
  ASSERT_EQ(m.processes.size(), 3u);
  EXPECT_FALSE(m.processes[1].realtime_aligned);
  EXPECT_EQ(m.processes[1].offset_ns, 0);
  EXPECT_TRUE(m.processes[2].realtime_aligned);
  // The shift, and the few ns by which the first two sessions' anchor reads disagree.
  const std::int64_t offset = boot_of(dir / "remote.rtrace") - boot_of(dir / "first.rtrace");
  EXPECT_EQ(m.processes[2].offset_ns, offset);
  EXPECT_LT(std::abs(offset - shift), 1000000);
  const ProcessCensus all = census_of(dir / "all.rtrace");
  ASSERT_EQ(all.names.size(), 3u);
  std::vector<std::uint32_t> pids;
  for (const auto& [pid, name] : all.names) pids.push_back(pid);
  const auto self = static_cast<std::uint32_t>(::getpid());
  EXPECT_EQ(all.names.at(self), "proc");
  int renamed = 0;
  for (const auto& [pid, name] : all.names) {
    if (pid == self) continue;
    EXPECT_GT(pid, 4194304u);
    EXPECT_NE(name.find("(pid " + std::to_string(self)), std::string::npos) << name;
    renamed += name.find(" on elsewhere)") != std::string::npos;
  }
  EXPECT_EQ(renamed, 1);
  // The remote process: every event exactly `offset` later than in its own file.
  std::vector<ProcessCensus::Row> remote;
  for (const auto& r : all.rows) {
    if (all.names.at(r.pid).find("elsewhere") != std::string::npos) remote.push_back(r);
  }
  ASSERT_EQ(remote.size(), remote_alone.rows.size());
  for (std::size_t i = 0; i < remote.size(); ++i) {
    ASSERT_EQ(remote[i].time, remote_alone.rows[i].time + static_cast<std::uint64_t>(offset)) << i;
    ASSERT_EQ(remote[i].site, remote_alone.rows[i].site);
  }
  for (std::size_t i = 1; i < all.rows.size(); ++i) ASSERT_LE(all.rows[i - 1].time, all.rows[i].time);
}

// A cut input gives what it holds and is reported; bad inputs and outputs get one clear
// error before anything is written.
TEST(Merge, CutInputsAndBadPaths) {
  const fs::path dir = temp_dir("merge_bad");
  record_zones(dir / "a.rtrace", "a", "a_zone", 2000);
  record_zones(dir / "b.rtrace", "b", "b_zone", 2000);
  const std::string b = read_file(dir / "b.rtrace");
  write_file(dir / "cut.rtrace", b.substr(0, b.size() * 6 / 10));
  const std::vector<fs::path> inputs = {dir / "a.rtrace", dir / "cut.rtrace"};
  const MergeResult m = merge_files(inputs, dir / "m.rtrace");
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_NE(m.problems[0].find("cut.rtrace"), std::string::npos) << m.problems[0];
  ReplayResult r;
  const ProcessCensus c = census_of(dir / "m.rtrace", &r);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.problem.find("cut.rtrace"), std::string::npos) << r.problem;
  // The cut process: under a pid of its own (both inputs are this process), exactly
  // what its file alone gives.
  const auto self = static_cast<std::uint32_t>(::getpid());
  ASSERT_EQ(c.names.size(), 2u);
  const std::uint32_t cut_pid = c.names.begin()->first == self ? c.names.rbegin()->first : c.names.begin()->first;
  const auto from_cut = rows_of(c, cut_pid);
  ReplayResult alone_result;
  const ProcessCensus alone = census_of(dir / "cut.rtrace", &alone_result);
  EXPECT_FALSE(alone_result.complete);
  ASSERT_EQ(from_cut.size(), alone.rows.size());
  EXPECT_GT(from_cut.size(), 100u);
  for (std::size_t i = 0; i < from_cut.size(); ++i) {
    ASSERT_EQ(from_cut[i].time, alone.rows[i].time);
    ASSERT_EQ(from_cut[i].site, alone.rows[i].site);
  }
  EXPECT_EQ(rows_of(c, self).size(), census_of(dir / "a.rtrace").rows.size());

  const auto error_of = [&](std::vector<fs::path> in, const fs::path& out) -> std::string {
    try {
      merge_files(in, out);
      return "no error";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  };
  EXPECT_NE(error_of({dir / "a.rtrace"}, dir / "a.rtrace").find("is also an input"), std::string::npos);
  const std::string unwritable = error_of({dir / "a.rtrace"}, dir / "no" / "such" / "dir.rtrace");
  EXPECT_NE(unwritable.find("cannot open for writing"), std::string::npos) << unwritable;
  EXPECT_NE(unwritable.find("dir.rtrace"), std::string::npos) << unwritable;
  write_file(dir / "text.json", "[{\"ph\":\"X\",\"name\":\"not a recording\",\"ts\":1,\"dur\":2}]");
  const std::string foreign = error_of({dir / "a.rtrace", dir / "text.json"}, dir / "f.rtrace");
  EXPECT_NE(foreign.find("text.json"), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("not a ringtrace trace"), std::string::npos) << foreign;
  EXPECT_FALSE(fs::exists(dir / "f.rtrace"));
  EXPECT_TRUE(partial_files(dir / "f.rtrace").empty()) << "the temporary is removed";
  EXPECT_NE(error_of({dir / "missing.rtrace"}, dir / "g.rtrace").find("missing.rtrace"), std::string::npos);
}

}  // namespace
}  // namespace ringtrace
