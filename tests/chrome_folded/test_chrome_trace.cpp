// Chrome trace exporter: golden output of a hand-built stream, streaming, gzip, errors,
// restarts, and the session's stop-time guarantees. The real readers (Python json,
// trace_engine, speedscope) load the files in the `clients` tests (see CMakeLists.txt).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "chrome_folded_streams.hpp"
#include "golden_files.hpp"
#include "output.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace::testing {
namespace {

std::string chrome_text(const RecordedTrace& trace, ChromeTraceOptions options = {}, std::size_t batch = 4096) {
  std::ostringstream out;
  auto exporter = chrome_trace_exporter(out, options);
  replay(trace, *exporter, batch);
  return out.str();
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

std::string gunzip_file(const std::filesystem::path& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("gzopen failed");
  std::string text;
  char chunk[1 << 14];
  int n = 0;
  while ((n = gzread(file, chunk, sizeof(chunk))) > 0) text.append(chunk, static_cast<std::size_t>(n));
  gzclose(file);
  return text;
}

// After its run finished, an exporter on a stream never touches the stream again: a
// stream destroyed before the exporter (declared after the Session) is no use after
// free (AddressSanitizer checks it in the sanitizer build).
TEST(ChromeTrace, AFinishedStreamExporterLeavesTheStreamAlone) {
  std::shared_ptr<Exporter> exporter;
  std::string text;
  {
    std::ostringstream stream;
    exporter = chrome_trace_exporter(stream);
    replay(golden_trace(), *exporter);
    text = stream.str();
  }
  exporter.reset();  // the destructor, with the stream gone
  EXPECT_NE(text.find("ringtrace_session"), std::string::npos);
}

TEST(ChromeTrace, GoldenHandBuiltStream) {
  ChromeTraceOptions options;
  options.source_locations = true;
  options.pid = 4242;
  expect_golden("basic.json", chrome_text(golden_trace(), options));
}

// A zone at the line of the macro's expansion: the macro and __LINE__ see the same line.
#define LOCATED_ZONE(name, line) \
  RINGTRACE_ZONE(name);          \
  line = __LINE__

// The source locations basic.json holds come from a hand-built stream, and the golden file
// from the code itself (RINGTRACE_UPDATE_GOLDEN=1): here they are checked against what the
// test knows of itself, __FILE__ and __LINE__, for zones a live session records.
TEST(ChromeTrace, SourceLocationsAreTheMacrosFileAndLine) {
  std::ostringstream out;
  int first_line = 0, second_line = 0;
  {
    ChromeTraceOptions options;
    options.source_locations = true;
    Session session;
    session.add_exporter(chrome_trace_exporter(out, options));
    session.start();
    { LOCATED_ZONE("located first", first_line); }
    { LOCATED_ZONE("located second", second_line); }
    session.stop();
  }
  ASSERT_GT(second_line, first_line);
  const std::string text = out.str();
  std::string file;
  detail::append_json_string(file, __FILE__);
  for (const auto& [name, line] : {std::pair{"located first", first_line}, std::pair{"located second", second_line}}) {
    const std::size_t at = text.find(std::string("\"name\":\"") + name + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    const std::size_t args = text.find("\"args\":{", at);
    ASSERT_NE(args, std::string::npos) << name;
    const std::string want = "\"args\":{\"file\":" + file + ",\"line\":" + std::to_string(line) + "}";
    EXPECT_EQ(text.substr(args, want.size()), want) << name;
  }
}

TEST(ChromeTrace, GoldenWithoutSourceLocations) {
  ChromeTraceOptions options;
  options.pid = 4242;
  const std::string text = chrome_text(golden_trace(), options);
  expect_golden("basic_nolocations.json", text);
  EXPECT_EQ(count(text, "\"file\""), 0u);
}

TEST(ChromeTrace, KeyFactsOfTheGoldenStream) {
  ChromeTraceOptions options;
  options.pid = 7;
  const std::string text = chrome_text(golden_trace(), options);
  // Zones as X with integer-exact microseconds: lex ran from 2000 to 2750 ns.
  EXPECT_NE(text.find(R"({"ph":"X","cat":"zone","name":"lex","pid":7,"tid":1001,"ts":2.000,"dur":0.750})"),
            std::string::npos);
  // Region with its id.
  EXPECT_NE(text.find(R"("name":"graph","pid":7,"tid":1001,"ts":5.000,"dur":1.000,"args":{"region_id":7}})"),
            std::string::npos);
  // Zones open at stop end at the stop time, marked.
  EXPECT_NE(text.find(R"("name":"main","pid":7,"tid":1001,"ts":1.000,"dur":8.000,"args":{"closed_at_stop":true}})"),
            std::string::npos);
  // Dropped events: a marker on the thread, and the totals in the session's counts.
  EXPECT_NE(
      text.find(
          R"({"ph":"i","s":"t","cat":"ringtrace","name":"ringtrace: dropped events","pid":7,"tid":1001,"ts":6.100,"args":{"count":3}})"),
      std::string::npos);
  EXPECT_NE(text.find(R"("dropped_events":3,)"), std::string::npos);
  EXPECT_NE(text.find(R"("closed_at_stop":3,)"), std::string::npos);
  // Counters: integer and double, the name once (Perfetto's track is "<name> value").
  EXPECT_NE(text.find(R"("name":"queue_depth","pid":7,"tid":1001,"ts":4.200,"args":{"value":5}})"), std::string::npos);
  EXPECT_NE(text.find(R"("name":"queue_depth","pid":7,"tid":1002,"ts":2.600,"args":{"value":-2}})"), std::string::npos);
  EXPECT_NE(text.find(R"("name":"load","pid":7,"tid":1001,"ts":4.300,"args":{"value":0.25}})"), std::string::npos);
  // Names escaped, invalid UTF-8 replaced by U+FFFD, emoji kept.
  EXPECT_NE(text.find("\"name\":\"q\\\"b\\\\s\\nl;x\\u0001 12 \xF0\x9F\x99\x82 \xEF\xBF\xBD end 7\""),
            std::string::npos);
  EXPECT_NE(text.find("\"args\":{\"name\":\"worker \\\"1\\\"\\t\\\\ \xF0\x9F\x9A\x80 \xEF\xBF\xBD(\"}"),
            std::string::npos);
  EXPECT_EQ(text.find('\xFF'), std::string::npos);
  // Metadata for the process and for every thread.
  EXPECT_NE(text.find(R"({"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"golden \"proc\""}})"),
            std::string::npos);
  EXPECT_NE(text.find(R"({"ph":"M","name":"thread_sort_index","pid":7,"tid":1002,"args":{"sort_index":1}})"),
            std::string::npos);
  // The session's counts: in the args of a last process_name that states the name again
  // (no metadata name of its own: Catapult warns about those), then the array's end.
  const std::string last = text.substr(text.rfind("\n{\"ph\""));
  EXPECT_TRUE(last.starts_with(R"(
{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"golden \"proc\"","ringtrace_session":{"producer":"ringtrace",)"))
      << last;
  EXPECT_EQ(count(text, "ringtrace_session"), 1u);
  EXPECT_EQ(count(text, "ringtrace_metadata"), 0u);  // replay() adds none
  EXPECT_EQ(text.rfind("]}}}\n]\n"), text.size() - 7);
}

// What the context says about the trace (ringtrace::benchmark: its bound) rides in the
// last event's args too, after the session's counts: integers as numbers, texts escaped.
TEST(ChromeTrace, ContextMetadataRidesWithTheSessionCounts) {
  std::ostringstream out;
  ChromeTraceOptions options;
  options.pid = 7;
  auto exporter = chrome_trace_exporter(out, options);
  replay_with_metadata(
      golden_trace(), *exporter,
      {{"max_ms", std::int64_t{100}}, {"left_out", std::int64_t{-1}}, {"benchmark", std::string("BM \"x\"/8")}});
  const std::string text = out.str();
  const std::string tail = R"(]},"ringtrace_metadata":{"max_ms":100,"left_out":-1,"benchmark":"BM \"x\"/8"}}}
]
)";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  EXPECT_EQ(count(text, "ringtrace_metadata"), 1u);
}

TEST(ChromeTrace, LargeTimesKeepEveryNanosecond) {
  TraceBuilder b;
  const SiteId zone = b.site("z");
  const ThreadId t = b.thread("t", 9);
  b.begin(t, zone, 123456789012345).end(t, 123456789012345 + 1000000007);
  const std::string text = chrome_text(b.build(), ChromeTraceOptions{false, 1, 1 << 18});
  EXPECT_NE(text.find(R"("ts":123456789012.345,"dur":1000000.007})"), std::string::npos) << text;
}

// Every timestamp is its nanoseconds as microseconds with three decimals, whatever its
// digits: around the second (where the writer changes how it forms the digits), zeros
// inside, the largest values. The text is formed here apart, from the integer's digits.
TEST(ChromeTrace, TimestampsAreTheirMicrosecondsWithThreeDecimalsAtEveryMagnitude) {
  const std::vector<std::uint64_t> times = {0,
                                            1,
                                            999,
                                            1'000,
                                            999'999'999,
                                            1'000'000'000,
                                            1'000'000'001,
                                            1'000'999'999,
                                            1'001'000'000,
                                            9'999'999'999,
                                            10'000'000'000,
                                            10'000'001'000,
                                            123'456'789'012'345,
                                            100'000'000'000'000'007,
                                            std::numeric_limits<std::uint64_t>::max() - 1};
  TraceBuilder b;
  const SiteId mark = b.site("mark", SiteKind::instant);
  const ThreadId t = b.thread("t", 5);
  for (const std::uint64_t ns : times) b.instant(t, mark, ns);
  const std::string text = chrome_text(b.build());
  for (const std::uint64_t ns : times) {
    const std::string frac = std::to_string(ns % 1000);
    const std::string want =
        "\"ts\":" + std::to_string(ns / 1000) + "." + std::string(3 - frac.size(), '0') + frac + "}";
    EXPECT_NE(text.find(want), std::string::npos) << want;
  }
}

// Every duration reads back as its exact nanoseconds both in readers that round the
// double of the text times 1000 and in those that truncate it (Perfetto's
// trace_processor before 2022 does so for "dur"); most are three decimals.
TEST(ChromeTrace, EveryDurationReadsBackExactWhetherRoundedOrTruncated) {
  TraceBuilder b;
  const SiteId zone = b.site("z");
  const ThreadId t = b.thread("t", 9);
  constexpr std::uint64_t kZones = 20000;
  std::uint64_t at = 1'000'000'000'000;
  for (std::uint64_t ns = 0; ns < kZones; ++ns) {
    const std::uint64_t dur = ns < kZones / 2 ? ns : ns * 7919 % 100'000'000;  // small, then spread out
    b.begin(t, zone, at).end(t, at + dur);
    at += dur + 1;
  }
  const RecordedTrace trace = b.build();
  const std::string text = chrome_text(trace);
  std::size_t zones = 0, three_decimals = 0;
  for (std::size_t pos = text.find("\"dur\":"); pos != std::string::npos; pos = text.find("\"dur\":", pos + 1)) {
    const char* begin = text.c_str() + pos + 6;
    char* end = nullptr;
    const double us = std::strtod(begin, &end);
    const std::string_view written(begin, static_cast<std::size_t>(end - begin));
    const Event& e = trace.events[2 * zones + 1];  // the zone's end; begins precede
    const std::uint64_t want = e.time_ns - trace.events[2 * zones].time_ns;
    EXPECT_EQ(static_cast<std::uint64_t>(us * 1000.0), want) << written;
    EXPECT_EQ(std::llround(us * 1000.0), static_cast<long long>(want)) << written;
    const std::size_t dot = written.find('.');
    if (dot != std::string_view::npos && written.size() - dot == 4) ++three_decimals;
    ++zones;
  }
  EXPECT_EQ(zones, kZones);
  // The longer form is the exception (about one duration in a hundred).
  EXPECT_GT(three_decimals, kZones * 95 / 100);
}

// A counter's name appears once; with per_thread_counters each thread has its own
// series, named after its tid.
TEST(ChromeTrace, CountersProcessWideOrPerThread) {
  TraceBuilder b;
  const SiteId c = b.site("depth", SiteKind::counter);
  const ThreadId t1 = b.thread("a", 11);
  const ThreadId t2 = b.thread("", 12);
  b.counter(t1, c, 1000, std::int64_t{1}).counter(t2, c, 2000, std::int64_t{2}).counter(t1, c, 3000, 3.5);
  const RecordedTrace trace = b.build();
  const std::string shared = chrome_text(trace, ChromeTraceOptions{false, 1, 1 << 18, false});
  EXPECT_EQ(count(shared, R"({"ph":"C","cat":"counter","name":"depth","pid":1,)"), 3u);
  EXPECT_NE(shared.find(R"("tid":12,"ts":2.000,"args":{"value":2}})"), std::string::npos);
  const std::string split = chrome_text(trace, ChromeTraceOptions{false, 1, 1 << 18, true});
  EXPECT_EQ(count(split, R"x("name":"depth (tid 11)","pid":1,"tid":11)x"), 2u);
  EXPECT_EQ(count(split, R"x("name":"depth (tid 12)","pid":1,"tid":12,"ts":2.000,"args":{"value":2}})x"), 1u);
  EXPECT_NE(split.find(R"x("name":"depth (tid 11)","pid":1,"tid":11,"ts":3.000,"args":{"value":3.5}})x"),
            std::string::npos);
}

// Thread metadata comes right before the thread's first event (a cut file names every
// thread it has events of), once; a thread without events is named at the end.
TEST(ChromeTrace, ThreadMetadataAtFirstSightOnce) {
  TraceBuilder b;
  const SiteId z = b.site("z");
  const ThreadId t1 = b.thread("first", 11);
  const ThreadId t2 = b.thread("second", 12);
  b.thread("idle", 13);
  b.begin(t2, z, 1000).end(t2, 1500).begin(t1, z, 2000).end(t1, 2500);
  const std::string text = chrome_text(b.build(), ChromeTraceOptions{false, 1, 1 << 18, false});
  for (const char* tid : {"11", "12", "13"}) {
    EXPECT_EQ(count(text, std::string(R"({"ph":"M","name":"thread_name","pid":1,"tid":)") + tid), 1u) << tid;
    EXPECT_EQ(count(text, std::string(R"({"ph":"M","name":"thread_sort_index","pid":1,"tid":)") + tid), 1u) << tid;
  }
  const auto name_at = [&](const char* tid) {
    return text.find(std::string(R"({"ph":"M","name":"thread_name","pid":1,"tid":)") + tid);
  };
  const auto zone_at = [&](const char* tid) { return text.find(std::string(R"("pid":1,"tid":)") + tid + ",\"ts\""); };
  EXPECT_LT(name_at("12"), zone_at("12"));
  EXPECT_LT(zone_at("12"), name_at("11"));
  EXPECT_LT(name_at("11"), zone_at("11"));
  EXPECT_LT(zone_at("11"), name_at("13"));
}

TEST(ChromeTrace, NonFiniteCountersAreSkippedAndCounted) {
  TraceBuilder b;
  const SiteId c = b.site("c", SiteKind::counter);
  const ThreadId t = b.thread("t", 9);
  b.counter(t, c, 10, std::numeric_limits<double>::quiet_NaN())
      .counter(t, c, 20, std::numeric_limits<double>::infinity())
      .counter(t, c, 30, -std::numeric_limits<double>::infinity())
      .counter(t, c, 40, 1.5);
  const std::string text = chrome_text(b.build());
  EXPECT_EQ(count(text, "\"ph\":\"C\""), 1u);
  EXPECT_NE(text.find(R"("args":{"value":1.5}})"), std::string::npos);
  EXPECT_NE(text.find(R"("non_finite_counters_skipped":3,)"), std::string::npos);
  EXPECT_EQ(text.find("null"), std::string::npos);
  EXPECT_EQ(text.find("nan"), std::string::npos);
  EXPECT_EQ(text.find("inf"), std::string::npos);
}

TEST(ChromeTrace, OutputDoesNotDependOnBatchSizeOrSink) {
  const RecordedTrace trace = golden_trace();
  const std::string whole = chrome_text(trace, {}, 4096);
  EXPECT_EQ(chrome_text(trace, {}, 1), whole);
  EXPECT_EQ(chrome_text(trace, {}, 3), whole);

  const std::filesystem::path path = test_out_dir() / "batch.json";
  auto exporter = chrome_trace_exporter(path.string());
  replay(trace, *exporter, 2);
  // The default pid is getpid(): only that differs from a pid-less comparison.
  ChromeTraceOptions same_pid;
  same_pid.pid = static_cast<std::uint32_t>(::getpid());
  EXPECT_EQ(read_text(path), chrome_text(trace, same_pid));
}

TEST(ChromeTrace, WritesAsAStreamWithABoundedBuffer) {
  TraceBuilder b;
  const SiteId zone = b.site("zone");
  const ThreadId t = b.thread("t", 9);
  for (std::uint64_t i = 0; i < 20000; ++i) b.begin(t, zone, i * 10).end(t, i * 10 + 5);
  const RecordedTrace trace = b.build();

  std::ostringstream out;
  ChromeTraceOptions options;
  options.buffer_bytes = 4096;
  auto exporter = chrome_trace_exporter(out, options);
  // Looks at the stream after every batch.
  struct Spy final : Exporter {
    Spy(Exporter& inner, std::ostringstream& out) : inner(inner), out(out) {}
    void on_start(const TraceContext& c) override { inner.on_start(c); }
    void on_events(std::span<const Event> events, const TraceContext& c) override {
      inner.on_events(events, c);
      const auto size = static_cast<std::size_t>(out.tellp());
      largest_gap = std::max(largest_gap, size - last_size);
      last_size = size;
    }
    void on_finish(const TraceContext& c, const SessionStats& s) override { inner.on_finish(c, s); }
    Exporter& inner;
    std::ostringstream& out;
    std::size_t largest_gap = 0, last_size = 0;
  } spy(*exporter, out);
  replay(trace, spy, 100);
  // Output arrived while events came in, in chunks of about the buffer size (a batch of
  // 100 events is about 7 KB of text).
  EXPECT_GT(spy.last_size, 1000000u);
  EXPECT_LT(spy.largest_gap, 4096u + 8000u);
  EXPECT_EQ(count(out.str(), "\"ph\":\"X\""), 20000u);
}

TEST(ChromeTrace, GzipPathWritesGzip) {
  const RecordedTrace trace = golden_trace();
  const std::filesystem::path path = test_out_dir() / "golden.json.gz";
  ChromeTraceOptions options;
  options.pid = 4242;
  auto exporter = chrome_trace_exporter(path.string(), options);
  replay(trace, *exporter);
  const std::string raw = read_text(path);
  ASSERT_GE(raw.size(), 3u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1F);
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8B);
  EXPECT_EQ(gunzip_file(path), chrome_text(trace, options));
}

TEST(ChromeTrace, UnwritablePathThrowsAtTheFactory) {
  const std::string path = "/nonexistent-ringtrace-dir/trace.json";
  try {
    chrome_trace_exporter(path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

RecordedTrace run_session(const std::function<void()>& body, const std::shared_ptr<Exporter>& exporter,
                          Config config = {}) {
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(exporter);
  session.start();
  body();
  session.stop();
  EXPECT_TRUE(session.stats().exporter_errors.empty());
  return memory->trace();
}

TEST(ChromeTrace, ASecondRunRewritesTheFile) {
  const std::filesystem::path path = test_out_dir() / "restart.json";
  auto exporter = chrome_trace_exporter(path.string());
  Session session;
  session.add_exporter(exporter);
  session.start();
  { RINGTRACE_ZONE("first_run_zone"); }
  session.stop();
  const std::string first = read_text(path);
  EXPECT_EQ(count(first, "first_run_zone"), 1u);
  session.start();
  { RINGTRACE_ZONE("second_run_zone"); }
  { RINGTRACE_ZONE("second_run_zone"); }
  session.stop();
  const std::string second = read_text(path);
  EXPECT_EQ(count(second, "first_run_zone"), 0u);
  EXPECT_EQ(count(second, "second_run_zone"), 2u);
  EXPECT_EQ(count(second, "\"ringtrace_session\""), 1u);
  EXPECT_EQ(second.find("[\n"), 0u);
  EXPECT_EQ(second.rfind("]}}}\n]\n"), second.size() - 7);
}

TEST(ChromeTrace, ZoneOpenAtStopIsClosedAtTheStopTimeAndMarked) {
  const std::filesystem::path path = test_out_dir() / "open_at_stop.json";
  Session session;
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(chrome_trace_exporter(path.string(), ChromeTraceOptions{false, 5, 1 << 18}));
  session.start();
  {
    RINGTRACE_ZONE("still_open");
    session.stop();
  }
  const RecordedTrace trace = memory->trace();
  const std::vector<RefZone> zones = reference_zones(trace);
  ASSERT_EQ(zones.size(), 1u);
  ASSERT_TRUE(zones[0].closed_at_stop);
  const std::string text = read_text(path);
  std::string expected = R"({"ph":"X","cat":"zone","name":"still_open","pid":5,"tid":)";
  expected += std::to_string(trace.threads[zones[0].thread].os_tid) + ",\"ts\":";
  detail::append_us(expected, zones[0].begin_ns);
  expected += ",\"dur\":";
  detail::append_us(expected, zones[0].end_ns - zones[0].begin_ns);
  expected += R"(,"args":{"closed_at_stop":true}})";
  EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  EXPECT_NE(text.find(R"("closed_at_stop":1,)"), std::string::npos);
}

TEST(ChromeTrace, DroppedEventsOfALiveSessionAreMarkedWithTheirCount) {
  const std::filesystem::path path = test_out_dir() / "dropped.json";
  Config config;
  config.buffer_records = 64;
  config.overflow = OverflowPolicy::drop;
  config.yield_to_drainer = false;  // drops must happen: no yield to let the drainer keep up
  std::function<void(int)> recurse = [&](int depth) {
    RINGTRACE_ZONE("recurse");
    if (depth > 0) recurse(depth - 1);
  };
  const RecordedTrace trace = run_session([&] { recurse(200); }, chrome_trace_exporter(path.string()), config);
  ASSERT_GT(trace.stats.dropped, 0u);
  const std::string text = read_text(path);
  std::uint64_t marked = 0;
  const std::string key = R"("name":"ringtrace: dropped events")";
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    const std::size_t c = text.find("\"count\":", at);
    marked += std::stoull(text.substr(c + 8));
  }
  EXPECT_EQ(marked, trace.stats.dropped);
  EXPECT_NE(text.find(std::string("\"dropped_events\":") + std::to_string(trace.stats.dropped) + ","),
            std::string::npos);
}

}  // namespace
}  // namespace ringtrace::testing
