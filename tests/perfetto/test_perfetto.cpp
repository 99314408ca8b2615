// The Perfetto exporter's protobuf, read back field by field with a small decoder
// written from the wire format (not from the exporter's code).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chrome_folded_streams.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::testing {
namespace {

// A decoded message: field number -> values (varints and fixed as integers, the others
// as bytes).
struct Message {
  std::multimap<unsigned, std::uint64_t> ints;
  std::multimap<unsigned, std::string> bytes;
  std::uint64_t get(unsigned field, std::uint64_t missing = ~0ull) const {
    const auto it = ints.find(field);
    return it == ints.end() ? missing : it->second;
  }
  std::vector<std::uint64_t> all(unsigned field) const {
    std::vector<std::uint64_t> out;
    for (auto [it, end] = ints.equal_range(field); it != end; ++it) out.push_back(it->second);
    return out;
  }
  std::vector<std::string> all_bytes(unsigned field) const {
    std::vector<std::string> out;
    for (auto [it, end] = bytes.equal_range(field); it != end; ++it) out.push_back(it->second);
    return out;
  }
  std::string one(unsigned field) const {
    const auto it = bytes.find(field);
    return it == bytes.end() ? std::string() : it->second;
  }
};

Message decode(std::string_view in) {
  Message m;
  std::size_t i = 0;
  const auto varint = [&] {
    std::uint64_t v = 0;
    for (unsigned shift = 0; i < in.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(in[i++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ADD_FAILURE() << "truncated varint";
    return v;
  };
  while (i < in.size()) {
    const std::uint64_t tag = varint();
    const auto field = static_cast<unsigned>(tag >> 3);
    switch (tag & 7) {
      case 0:
        m.ints.emplace(field, varint());
        break;
      case 1: {
        std::uint64_t v;
        std::memcpy(&v, in.data() + i, 8);
        i += 8;
        m.ints.emplace(field, v);
        break;
      }
      case 2: {
        const std::uint64_t n = varint();
        m.bytes.emplace(field, std::string(in.substr(i, n)));
        i += n;
        break;
      }
      default:
        ADD_FAILURE() << "wire type " << (tag & 7);
        return m;
    }
  }
  return m;
}

std::string perfetto(const RecordedTrace& trace, PerfettoOptions options = {}) {
  std::ostringstream out;
  options.pid = 99;
  replay(trace, *perfetto_exporter(out, options));
  return out.str();
}

// The trace's packets with interned names, times and tracks resolved: times as
// trace_processor computes them from a sequence's ClockSnapshot (clock ids 64 and up are
// the sequence's own; an incremental one adds each value to its last), the default
// clock and track from its TracePacketDefaults.
struct Decoded {
  std::vector<Message> packets;
  std::vector<std::uint64_t> times;   // by packet: its time on the trace clock, ~0 for none
  std::vector<std::uint64_t> tracks;  // by packet: its TrackEvent's track uuid, given or default
  std::map<std::uint64_t, std::string> names, categories, keys;
};
Decoded decode_trace(const std::string& bytes) {
  Decoded d;
  struct Clock {
    std::uint64_t value = 0, trace_value = 0;  // a pair of the snapshot
    bool incremental = false;
    std::uint64_t last = 0;  // an incremental clock's value so far
  };
  struct SequenceState {
    std::uint64_t clock = 6, track = ~0ull;
    std::map<std::uint64_t, Clock> clocks;
  };
  std::map<std::uint64_t, SequenceState> sequences;
  const Message trace = decode(bytes);
  for (const std::string& p : trace.all_bytes(1)) {
    d.packets.push_back(decode(p));
    const Message& packet = d.packets.back();
    SequenceState& seq = sequences[packet.get(10)];
    if (packet.bytes.count(59) != 0) {
      const Message defaults = decode(packet.one(59));
      seq.clock = defaults.get(58, 6);
      if (defaults.bytes.count(11) != 0) seq.track = decode(defaults.one(11)).get(11);
    }
    if (packet.bytes.count(6) != 0) {
      std::uint64_t trace_value = ~0ull;
      std::vector<Message> clocks;
      for (const std::string& c : decode(packet.one(6)).all_bytes(1)) clocks.push_back(decode(c));
      for (const Message& c : clocks) {
        if (c.get(1) == 6) trace_value = c.get(2);
      }
      EXPECT_NE(trace_value, ~0ull) << "a snapshot without the trace clock";
      for (const Message& c : clocks) {
        if (c.get(1) >= 64) seq.clocks[c.get(1)] = Clock{c.get(2), trace_value, c.get(3, 0) == 1, c.get(2)};
      }
    }
    std::uint64_t time = ~0ull;
    if (packet.ints.count(8) != 0) {
      const std::uint64_t clock = packet.get(58, seq.clock), t = packet.get(8);
      if (clock == 6) {
        time = t;
      } else {
        EXPECT_EQ(seq.clocks.count(clock), 1u) << "clock " << clock << " undefined on sequence " << packet.get(10);
        Clock& c = seq.clocks[clock];
        if (c.incremental) c.last += t;
        time = c.trace_value + ((c.incremental ? c.last : t) - c.value);
      }
    }
    d.times.push_back(time);
    d.tracks.push_back(packet.bytes.count(11) != 0 ? decode(packet.one(11)).get(11, seq.track) : ~0ull);
    for (const std::string& interned : d.packets.back().all_bytes(12)) {
      const Message i = decode(interned);
      for (const std::string& e : i.all_bytes(1)) d.categories[decode(e).get(1)] = decode(e).one(2);
      for (const std::string& e : i.all_bytes(2)) d.names[decode(e).get(1)] = decode(e).one(2);
      for (const std::string& e : i.all_bytes(3)) d.keys[decode(e).get(1)] = decode(e).one(2);
    }
  }
  return d;
}

void check_slices_threads_and_interning(const Decoded& d, bool delta);

// Both timestamp encodings: absolute on the trace clock (the default), and deltas on
// clocks defined per sequence; the decoded times are the same.
TEST(Perfetto, SlicesThreadsAndInterning) {
  for (const bool delta : {false, true}) {
    SCOPED_TRACE(delta ? "delta timestamps" : "absolute timestamps");
    PerfettoOptions options;
    options.delta_timestamps = delta;
    check_slices_threads_and_interning(decode_trace(perfetto(golden_trace(), options)), delta);
  }
}

void check_slices_threads_and_interning(const Decoded& d, bool delta) {
  ASSERT_FALSE(d.packets.empty());
  EXPECT_EQ(d.packets[0].get(41), 1u);  // incremental_state_cleared on the first packet
  EXPECT_EQ(d.packets[0].get(13), 1u);
  std::map<std::uint64_t, std::string> thread_names;         // track uuid -> name
  std::map<std::string, std::vector<std::uint64_t>> begins;  // name -> timestamps
  int ends = 0;
  std::set<std::pair<std::uint64_t, std::uint64_t>> defined_names;   // (sequence, iid)
  std::set<std::uint64_t> cleared;                                   // sequences whose incremental state was cleared
  std::map<std::uint64_t, std::set<std::uint64_t>> sequence_tracks;  // sequence -> slice tracks
  for (std::size_t i = 0; i < d.packets.size(); ++i) {
    const Message& p = d.packets[i];
    const std::uint64_t sequence = p.get(10);
    // sequence_flags as Perfetto's own producers write them: the first packet of a
    // sequence clears its incremental state (1); every later packet of a thread's
    // sequence, which uses its interned names, defaults and clocks, says it needs that
    // state (2); the descriptors' and counts' sequence (1) uses none.
    if (p.get(41, 0) == 1) {
      EXPECT_EQ(p.get(13), 1u);
      cleared.insert(sequence);
    } else {
      EXPECT_EQ(p.get(13, 0), sequence == 1 ? 0u : 2u) << "packet " << i << " of sequence " << sequence;
    }
    EXPECT_TRUE(cleared.count(sequence)) << "a packet before its sequence's state was cleared";
    if (p.bytes.count(60) != 0) {
      const Message track = decode(p.one(60));
      if (track.bytes.count(4) != 0) {
        const Message thread = decode(track.one(4));
        EXPECT_EQ(thread.get(1), 99u);  // pid
        thread_names[track.get(1)] = thread.one(5);
      }
      if (track.bytes.count(3) != 0) {
        EXPECT_EQ(decode(track.one(3)).one(6), "golden \"proc\"");
      }
    }
    for (const std::string& interned : p.all_bytes(12)) {
      for (const std::string& e : decode(interned).all_bytes(2)) defined_names.emplace(sequence, decode(e).get(1));
    }
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    if (event.get(9) == 1) {  // slice begin
      ASSERT_TRUE(defined_names.count({sequence, event.get(10)})) << "name used before its sequence interned it";
      begins[d.names.at(event.get(10))].push_back(d.times[i]);
      EXPECT_TRUE(thread_names.count(d.tracks[i])) << "slice on an undescribed track";
      sequence_tracks[sequence].insert(d.tracks[i]);
    }
    ends += event.get(9) == 2;
  }
  EXPECT_EQ(thread_names.size(), 2u);
  // A thread's slices are on sequences of its own (two at most), whose defaults name its track.
  std::map<std::uint64_t, int> sequences_of_track;
  for (const auto& [sequence, tracks] : sequence_tracks) {
    EXPECT_EQ(tracks.size(), 1u) << sequence;
    ++sequences_of_track[*tracks.begin()];
  }
  EXPECT_EQ(sequences_of_track.size(), 2u);
  for (const auto& [track, n] : sequences_of_track) EXPECT_LE(n, delta ? 2 : 1) << track;
  // Names are repaired to UTF-8, everything else kept.
  bool weird = false;
  for (const auto& [uuid, name] : thread_names) weird = weird || name.find("worker \"1\"") == 0;
  EXPECT_TRUE(weird);
  EXPECT_EQ(begins["parse"], (std::vector<std::uint64_t>{1300, 1500, 5100}));
  EXPECT_EQ(begins["lex"], (std::vector<std::uint64_t>{2000, 7000}));
  EXPECT_EQ(begins["graph"], (std::vector<std::uint64_t>{5000}));
  EXPECT_EQ(ends, 9);
}

TEST(Perfetto, ArgsFlowsCountersAndAsync) {
  const Decoded d = decode_trace(perfetto(rich_trace()));
  std::map<std::string, Message> first_begin;
  std::vector<std::uint64_t> flows_old, flows_new, ends_old, ends_new;
  int async_begins = 0, async_ends = 0;
  for (std::size_t i = 0; i < d.packets.size(); ++i) {
    const Message& p = d.packets[i];
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    if (event.get(9) == 1 && event.get(10) != ~0ull) {
      const std::string name = d.names.at(event.get(10));
      first_begin.emplace(name, event);
      if (name == "upload") ++async_begins;
    }
    if (event.get(9) == 2 && event.get(10) == ~0ull && d.times[i] == 2600) ++async_ends;
    for (auto v : event.all(36)) flows_old.push_back(v);
    for (auto v : event.all(47)) flows_new.push_back(v);
    for (auto v : event.all(42)) ends_old.push_back(v);
    for (auto v : event.all(48)) ends_new.push_back(v);
  }
  const std::vector<std::uint64_t> id = {0xABCDEF0123456789ull};
  EXPECT_EQ(flows_old, id);
  EXPECT_EQ(flows_new, id);
  EXPECT_EQ(ends_old, id);
  EXPECT_EQ(ends_new, id);
  EXPECT_EQ(async_begins, 1);
  EXPECT_EQ(async_ends, 1);
  // "request": bytes 4096, ratio 0.5 then NaN, the weird key's text, cut.
  const Message& request = first_begin.at("request");
  std::map<std::string, std::vector<std::string>> args;
  for (const std::string& a : request.all_bytes(4)) {
    const Message m = decode(a);
    std::string v;
    if (m.ints.count(4)) v = "int " + std::to_string(static_cast<std::int64_t>(m.get(4)));
    if (m.ints.count(5)) {
      double x;
      const std::uint64_t bits = m.get(5);
      std::memcpy(&x, &bits, 8);
      v = "double " + std::to_string(x);
    }
    if (m.bytes.count(6)) v = "text " + m.one(6);
    if (m.ints.count(2)) v = "bool " + std::to_string(m.get(2));
    args[d.keys.at(m.get(1))].push_back(v);
  }
  EXPECT_EQ(args["bytes"], (std::vector<std::string>{"int 4096"}));
  ASSERT_EQ(args["ratio"].size(), 2u);
  EXPECT_EQ(args["ratio"][0], "double 0.500000");
  EXPECT_EQ(args[kWeirdZone.substr(0, kWeirdZone.find('\xFF')) + "\xEF\xBF\xBD end 7"],
            (std::vector<std::string>{"text cut here"}));
  EXPECT_EQ(args[kWeirdZone.substr(0, kWeirdZone.find('\xFF')) + "\xEF\xBF\xBD end 7.truncated"],
            (std::vector<std::string>{"bool 1"}));
  const Message& recv = first_begin.at("recv");
  EXPECT_EQ(d.categories.at(recv.get(3)), "net");
  ASSERT_EQ(recv.all_bytes(4).size(), 1u);
  EXPECT_EQ(decode(recv.all_bytes(4)[0]).one(6), "/tmp/a \"b\"\n\x01\xEF\xBF\xBD");  // repaired UTF-8
}

TEST(Perfetto, CountersOnCounterTracks) {
  const Decoded d = decode_trace(perfetto(golden_trace()));
  std::map<std::uint64_t, std::string> counter_tracks;
  std::vector<std::pair<std::string, std::string>> samples;
  for (std::size_t i = 0; i < d.packets.size(); ++i) {
    const Message& p = d.packets[i];
    if (p.bytes.count(60) != 0) {
      const Message track = decode(p.one(60));
      if (track.bytes.count(8) != 0) counter_tracks[track.get(1)] = track.one(2);
    }
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    if (event.get(9) != 4) continue;
    std::string value;
    if (event.ints.count(30)) value = std::to_string(static_cast<std::int64_t>(event.get(30)));
    if (event.ints.count(44)) {
      double x;
      const std::uint64_t bits = event.get(44);
      std::memcpy(&x, &bits, 8);
      value = std::to_string(x);
    }
    samples.emplace_back(counter_tracks.at(d.tracks[i]), value);
  }
  EXPECT_EQ(samples, (std::vector<std::pair<std::string, std::string>>{
                         {"queue_depth", "-2"}, {"queue_depth", "5"}, {"load", "0.250000"}}));
}

// Messages of 128 bytes or more get longer length varints: texts up to the longest a
// zone may carry (65,535 bytes: a 3-byte length, in messages with one too) decode whole.
TEST(Perfetto, LongMessagesKeepEveryByte) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10);
  const SiteId zone = b.site("z"), key = b.site("path", SiteKind::value);
  const std::vector<std::size_t> lengths = {0, 1, 100, 113, 114, 115, 127, 128, 129, 200, 16383, 16384, 65535};
  std::uint64_t now = 1000;
  for (const std::size_t n : lengths) {
    std::string text(n, 'x');
    for (std::size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + i % 26);
    b.begin(t, zone, now).text(t, key, now, text).end(t, now + 10);
    now += 100;
  }
  const Decoded d = decode_trace(perfetto(b.build()));
  std::vector<std::size_t> got;
  for (const Message& p : d.packets) {
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    for (const std::string& a : event.all_bytes(4)) {
      const Message annotation = decode(a);
      if (annotation.bytes.count(6) == 0) continue;  // not a text
      const std::string text = annotation.one(6);
      for (std::size_t i = 0; i < text.size(); ++i) {
        ASSERT_EQ(text[i], static_cast<char>('a' + i % 26)) << text.size() << " at " << i;
      }
      got.push_back(text.size());
    }
  }
  EXPECT_EQ(got, lengths);
}

// Perfetto UI draws each ClockSnapshot as a "Snapshot" marker of a "Clock Snapshots"
// track: none by default; with delta timestamps one per thread sequence, each pairing
// the sequence's clocks with the trace clock.
TEST(Perfetto, ClockSnapshotsOnlyWithDeltaTimestamps) {
  for (const bool delta : {false, true}) {
    SCOPED_TRACE(delta ? "delta timestamps" : "absolute timestamps");
    PerfettoOptions options;
    options.delta_timestamps = delta;
    const Decoded d = decode_trace(perfetto(golden_trace(), options));
    std::set<std::uint64_t> timed, snapshots;  // sequences
    std::size_t snapshot_packets = 0;
    for (const Message& p : d.packets) {
      if (p.bytes.count(6) != 0) {
        ++snapshot_packets;
        snapshots.insert(p.get(10));
      }
      if (p.ints.count(8) != 0) {
        timed.insert(p.get(10));
        EXPECT_EQ(p.get(58, 6), delta ? p.get(58, 6) : 6u) << "absolute times are on the trace clock";
      }
    }
    EXPECT_EQ(snapshot_packets, delta ? snapshots.size() : 0u);
    EXPECT_EQ(snapshots, delta ? timed : std::set<std::uint64_t>{});
    if (delta) {
      EXPECT_GE(snapshots.size(), 2u);  // two threads
    }
  }
}

// The session's counts, and what the context says about the trace, as trace metadata
// (a ChromeEventBundle's entries: trace_processor's `metadata` table), in the last packet,
// which has no time; no event of the session's own (it would be a slice).
TEST(Perfetto, SessionCountsAndMetadataAreTraceMetadata) {
  const RecordedTrace trace = golden_trace();
  std::ostringstream out;
  PerfettoOptions options;
  options.pid = 99;
  auto exporter = perfetto_exporter(out, options);
  replay_with_metadata(trace, *exporter, {{"max_ms", std::int64_t{100}}, {"benchmark", std::string("BM_x/8")}});
  const Decoded d = decode_trace(out.str());
  const Message& last = d.packets.back();
  EXPECT_EQ(last.ints.count(8), 0u) << "a time";
  ASSERT_EQ(last.bytes.count(5), 1u);
  std::map<std::string, std::string> entries;  // name -> "int N" or "text T"
  for (const std::string& e : decode(last.one(5)).all_bytes(2)) {
    const Message m = decode(e);
    entries[m.one(1)] =
        m.ints.count(4) ? "int " + std::to_string(static_cast<std::int64_t>(m.get(4))) : "text " + m.one(2);
  }
  EXPECT_EQ(entries["ringtrace_session.recorded_events"], "int " + std::to_string(trace.stats.recorded));
  EXPECT_EQ(entries["ringtrace_session.dropped_events"], "int " + std::to_string(trace.stats.dropped));
  EXPECT_EQ(entries["ringtrace_session.closed_at_stop"], "int " + std::to_string(trace.stats.closed_at_stop));
  EXPECT_EQ(entries["ringtrace_metadata.max_ms"], "int 100");
  EXPECT_EQ(entries["ringtrace_metadata.benchmark"], "text BM_x/8");
  EXPECT_EQ(entries.size(), 11u);
  for (const auto& [iid, name] : d.names) EXPECT_NE(name, "ringtrace_session");
  std::size_t bundles = 0;
  for (const Message& p : d.packets) bundles += p.bytes.count(5);
  EXPECT_EQ(bundles, 1u);
}

// Smaller than the Chrome trace of the same stream: names interned, no text numbers;
// delta timestamps smaller again. Times of a machine up for ten days (8.6e14 ns, a
// 7-byte varint when absolute).
TEST(Perfetto, SizeAgainstTheChromeTrace) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10);
  const SiteId outer = b.site("request_handler"), inner = b.site("parse_headers");
  std::uint64_t now = 864'000'000'000'000;
  for (int i = 0; i < 20000; ++i) {
    b.begin(t, outer, now + 1000).begin(t, inner, now + 1250).end(t, now + 1750).end(t, now + 2050);
    now += 2050;
  }
  const RecordedTrace trace = b.build();
  std::ostringstream chrome;
  replay(trace, *chrome_trace_exporter(chrome));
  PerfettoOptions delta;
  delta.delta_timestamps = true;
  const std::size_t proto = perfetto(trace).size(), proto_delta = perfetto(trace, delta).size();
  const std::size_t json = chrome.str().size();
  RecordProperty("perfetto_bytes", std::to_string(proto));
  RecordProperty("perfetto_delta_bytes", std::to_string(proto_delta));
  RecordProperty("chrome_bytes", std::to_string(json));
  // Each packet of a thread's sequence carries its sequence_flags (2 bytes): 4 bytes a zone.
  EXPECT_LE(proto * 5, json * 2) << proto << " vs " << json;                 // at most 40%
  EXPECT_LE(proto_delta * 100, json * 28) << proto_delta << " vs " << json;  // at most 28%
  EXPECT_LT(proto_delta, proto);
}

}  // namespace
}  // namespace ringtrace::testing
