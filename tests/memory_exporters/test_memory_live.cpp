// A live session with allocations the test makes itself and counts (Config::memory,
// ringtrace::memory linked): the table's columns and the Chrome trace's zone args are
// those bytes; the heap counter's highest sample is the session's peak, at its time.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

void* volatile g_sink;  // opaque to the optimizer: keeps every allocation

const ringtrace::TableRow& row(const ringtrace::KeyAverages& table, const std::string& name) {
  for (const ringtrace::TableRow& r : table.rows) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no row " + name);
}

TEST(MemoryLive, ZonesGetTheBytesTheProgramAllocatedAndFreed) {
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  std::ostringstream table_text, chrome_text;
  const std::shared_ptr<ringtrace::Exporter> table = ringtrace::table_exporter(table_text);
  ringtrace::ChromeTraceOptions chrome_options;
  chrome_options.heap_interval_ns = 0;
  session.add_exporter(table);
  session.add_exporter(ringtrace::chrome_trace_exporter(chrome_text, chrome_options));
  // The test's own bookkeeping of what each zone does.
  constexpr std::size_t kOuterBlock = 1000, kInnerBlock = 3000, kVectorInts = 250;
  session.start();
  void* outer_block = nullptr;
  {
    RINGTRACE_ZONE("outer");
    outer_block = std::malloc(kOuterBlock);
    g_sink = outer_block;
    char* inner_block = nullptr;
    {
      RINGTRACE_ZONE("inner");
      inner_block = new char[kInnerBlock];  // freed by outer
      g_sink = inner_block;
      std::vector<int> v(kVectorInts);  // allocated and freed in inner
      g_sink = v.data();
    }
    delete[] inner_block;
  }
  session.stop();
  std::free(outer_block);  // after the session: a block still live at its end

  const ringtrace::KeyAverages& t = dynamic_cast<const ringtrace::TableExporter&>(*table).table();
  ASSERT_TRUE(t.memory);
  const auto vector_bytes = static_cast<std::int64_t>(kVectorInts * sizeof(int));
  // inner: its block (freed outside it) and the vector (allocated and freed inside).
  EXPECT_EQ(row(t, "inner").cpu_memory_usage, static_cast<std::int64_t>(kInnerBlock) + vector_bytes - vector_bytes);
  EXPECT_EQ(row(t, "inner").self_cpu_memory_usage, row(t, "inner").cpu_memory_usage);
  // outer: its block, inner's, and the free of inner's block.
  EXPECT_EQ(row(t, "outer").cpu_memory_usage, static_cast<std::int64_t>(kOuterBlock));
  EXPECT_EQ(row(t, "outer").self_cpu_memory_usage,
            static_cast<std::int64_t>(kOuterBlock) - static_cast<std::int64_t>(kInnerBlock));
  EXPECT_NE(table_text.str().find("Self CPU Mem"), std::string::npos);

  const std::string json = chrome_text.str();
  const auto args_of = [&](const std::string& name) {
    const std::size_t at = json.find("\"name\":\"" + name + "\"");
    return at == std::string::npos ? std::string() : json.substr(at, json.find('\n', at) - at);
  };
  EXPECT_NE(args_of("outer").find("\"alloc_bytes\":" + std::to_string(kOuterBlock + kInnerBlock + vector_bytes) +
                                  ",\"allocs\":3"),
            std::string::npos)
      << args_of("outer");
  EXPECT_NE(args_of("inner").find("\"alloc_bytes\":" + std::to_string(kInnerBlock + vector_bytes) + ",\"allocs\":2"),
            std::string::npos)
      << args_of("inner");

  // Every heap sample: the highest is the session's peak, at the time it was reached.
  const ringtrace::MemoryStats& m = session.stats().memory;
  std::uint64_t highest = 0;
  std::string highest_ts;
  for (std::size_t at = json.find("\"ringtrace: heap (bytes)\""); at != std::string::npos;
       at = json.find("\"ringtrace: heap (bytes)\"", at + 1)) {
    const std::size_t ts = json.find("\"ts\":", at) + 5;
    const std::size_t value = json.find("\"value\":", at) + 8;
    const std::uint64_t v = std::stoull(json.substr(value, json.find('}', value) - value));
    if (v > highest) {
      highest = v;
      highest_ts = json.substr(ts, json.find(',', ts) - ts);
    }
  }
  EXPECT_EQ(highest, m.peak_live_bytes);
  std::string peak_us = std::to_string(m.peak_time_ns / 1000) + ".";
  const std::string frac = std::to_string(m.peak_time_ns % 1000);
  peak_us += std::string(3 - frac.size(), '0') + frac;
  EXPECT_EQ(highest_ts, peak_us);
  EXPECT_GE(m.peak_live_bytes, kOuterBlock + kInnerBlock + vector_bytes);
}

}  // namespace

// mimalloc's names, in a program without mimalloc (this test links none): ringtrace::memory
// defines them, gives the C allocator's blocks, and records each once, in its zone.
extern "C" void* mi_malloc(std::size_t size) noexcept;
extern "C" void* mi_zalloc(std::size_t size) noexcept;
extern "C" void* mi_calloc(std::size_t n, std::size_t size) noexcept;
extern "C" void* mi_realloc(void* p, std::size_t size) noexcept;
extern "C" void mi_free(void* p) noexcept;

namespace {

TEST(MemoryLive, MimallocNamesWithoutMimallocAreTheCAllocatorsRecordedOnce) {
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  std::ostringstream table_text, chrome_text;
  const std::shared_ptr<ringtrace::Exporter> table = ringtrace::table_exporter(table_text);
  session.add_exporter(table);
  session.add_exporter(ringtrace::chrome_trace_exporter(chrome_text));
  session.start();
  {
    RINGTRACE_ZONE("mi");
    void* a = mi_malloc(100);
    auto* z = static_cast<unsigned char*>(mi_zalloc(200));
    auto* c = static_cast<unsigned char*>(mi_calloc(3, 100));
    g_sink = a;
    ASSERT_NE(z, nullptr);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(z[0] | z[199] | c[0] | c[299], 0) << "mi_zalloc and mi_calloc give zeroed blocks";
    void* r = mi_realloc(a, 1000);  // the free of a's 100 bytes, then 1000
    g_sink = r;
    std::free(z);  // a mimalloc name's block freed by the C name
    mi_free(c);
    mi_free(r);
  }
  session.stop();
  const ringtrace::KeyAverages& t = dynamic_cast<const ringtrace::TableExporter&>(*table).table();
  ASSERT_TRUE(t.memory);
  // 100 + 200 + 300 + 1000 allocated; 100 + 200 + 300 + 1000 freed: net 0, each once.
  EXPECT_EQ(row(t, "mi").cpu_memory_usage, 0);
  const std::string json = chrome_text.str();
  const std::size_t at = json.find("\"name\":\"mi\"");
  ASSERT_NE(at, std::string::npos) << json;
  const std::string args = json.substr(at, json.find('\n', at) - at);
  EXPECT_NE(args.find("\"alloc_bytes\":1600,\"allocs\":4"), std::string::npos) << args;
  EXPECT_EQ(session.stats().memory.frees_unmatched, 0u) << "a free whose allocation was not seen";
}

}  // namespace
