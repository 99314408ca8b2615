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
      case 0: m.ints.emplace(field, varint()); break;
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
      default: ADD_FAILURE() << "wire type " << (tag & 7); return m;
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

// The trace as (packet, track event) pairs with interned names resolved.
struct Decoded {
  std::vector<Message> packets;
  std::map<std::uint64_t, std::string> names, categories, keys;
};
Decoded decode_trace(const std::string& bytes) {
  Decoded d;
  const Message trace = decode(bytes);
  for (const std::string& p : trace.all_bytes(1)) {
    d.packets.push_back(decode(p));
    for (const std::string& interned : d.packets.back().all_bytes(12)) {
      const Message i = decode(interned);
      for (const std::string& e : i.all_bytes(1)) d.categories[decode(e).get(1)] = decode(e).one(2);
      for (const std::string& e : i.all_bytes(2)) d.names[decode(e).get(1)] = decode(e).one(2);
      for (const std::string& e : i.all_bytes(3)) d.keys[decode(e).get(1)] = decode(e).one(2);
    }
  }
  return d;
}

TEST(Perfetto, SlicesThreadsAndInterning) {
  const Decoded d = decode_trace(perfetto(golden_trace()));
  ASSERT_FALSE(d.packets.empty());
  EXPECT_EQ(d.packets[0].get(41), 1u);  // incremental_state_cleared on the first packet
  EXPECT_EQ(d.packets[0].get(13), 1u);
  std::map<std::uint64_t, std::string> thread_names;  // track uuid -> name
  std::map<std::string, std::vector<std::uint64_t>> begins;  // name -> timestamps
  int ends = 0;
  std::set<std::uint64_t> defined_names;
  for (const Message& p : d.packets) {
    EXPECT_EQ(p.get(10), 1u);  // one sequence
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
      for (const std::string& e : decode(interned).all_bytes(2)) defined_names.insert(decode(e).get(1));
    }
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    if (event.get(9) == 1) {  // slice begin
      ASSERT_TRUE(defined_names.count(event.get(10))) << "name used before it was interned";
      EXPECT_EQ(p.get(13), 2u);  // needs incremental state
      begins[d.names.at(event.get(10))].push_back(p.get(8));
      EXPECT_TRUE(thread_names.count(event.get(11))) << "slice on an undescribed track";
    }
    ends += event.get(9) == 2;
  }
  EXPECT_EQ(thread_names.size(), 2u);
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
  for (const Message& p : d.packets) {
    if (p.bytes.count(11) == 0) continue;
    const Message event = decode(p.one(11));
    if (event.get(9) == 1 && event.get(10) != ~0ull) {
      const std::string name = d.names.at(event.get(10));
      first_begin.emplace(name, event);
      if (name == "upload") ++async_begins;
    }
    if (event.get(9) == 2 && event.get(10) == ~0ull && p.get(8) == 2600) ++async_ends;
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
  for (const Message& p : d.packets) {
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
    samples.emplace_back(counter_tracks.at(event.get(11)), value);
  }
  EXPECT_EQ(samples, (std::vector<std::pair<std::string, std::string>>{
                         {"queue_depth", "-2"}, {"queue_depth", "5"}, {"load", "0.250000"}}));
}

// Smaller than the Chrome trace of the same stream: names interned, no text numbers.
TEST(Perfetto, SizeAgainstTheChromeTrace) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10);
  const SiteId outer = b.site("request_handler"), inner = b.site("parse_headers");
  std::uint64_t now = 1'000'000'000;
  for (int i = 0; i < 20000; ++i) {
    b.begin(t, outer, now + 1000).begin(t, inner, now + 1250).end(t, now + 1750).end(t, now + 2050);
    now += 2050;
  }
  const RecordedTrace trace = b.build();
  std::ostringstream chrome;
  replay(trace, *chrome_trace_exporter(chrome));
  const std::size_t proto = perfetto(trace).size(), json = chrome.str().size();
  RecordProperty("perfetto_bytes", std::to_string(proto));
  RecordProperty("chrome_bytes", std::to_string(json));
  EXPECT_LT(proto * 2, json) << proto << " vs " << json;
}

}  // namespace
}  // namespace ringtrace::testing
