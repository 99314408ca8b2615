// A program that allocates blocks of known sizes and keeps its own count of its live
// bytes and their peak, recording with Config::memory (ringtrace::memory linked).
//   memory_heap_program DIR          writes DIR/heap.json, DIR/heap.perfetto-trace (and
//                                    DIR/heap_every.json: a heap sample at every change) and
//                                    DIR/expected.json: its own peak and the bytes and
//                                    allocations of each zone
//   memory_heap_program --leak FILE  records FILE (the binary format) with a leak of 77777
//                                    bytes in zone "leaky" inside "outer", and one of 4000
//                                    bytes in 10 blocks of 400 in zone "kept"
// Everything the program allocates is inside a zone of its own ("work" around the
// sawtooth): what the session itself allocates on the thread is outside them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

void* volatile g_sink;  // opaque to the optimizer: keeps every allocation

// The program's own bookkeeping, in static storage (no allocation of its own).
struct Book {
  std::uint64_t live = 0, peak = 0;
  std::uint64_t allocated = 0, allocations = 0;  // of the zone "grow"
  void add(std::uint64_t n) {
    live += n;
    if (live > peak) peak = live;
  }
};
Book g_book;
constexpr std::size_t kBlocks = 4096;
void* g_blocks[kBlocks];
std::size_t g_sizes[kBlocks];

// Rounds of a sawtooth: grow by blocks of 16 to 16,399 bytes, free half, grow again; the
// highest point is in the middle round, well above the others.
void sawtooth() {
  std::size_t held = 0;
  for (int round = 0; round < 3; ++round) {
    RINGTRACE_ZONE("grow");
    const std::size_t target = round == 1 ? kBlocks : kBlocks / 2;
    while (held < target) {
      const std::size_t size = 16 + (held * 7919) % 16384;
      g_blocks[held] = std::malloc(size);
      g_sink = g_blocks[held];
      g_sizes[held] = size;
      g_book.add(size);
      g_book.allocated += size;
      g_book.allocations += 1;
      ++held;
    }
    RINGTRACE_ZONE("shrink");
    while (held > kBlocks / 4) {
      --held;
      std::free(g_blocks[held]);
      g_book.live -= g_sizes[held];
    }
  }
  while (held > 0) {
    --held;
    std::free(g_blocks[held]);
    g_book.live -= g_sizes[held];
  }
}

int write_traces(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.process_name = "heap_program";
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "heap.json"));
  session.add_exporter(ringtrace::perfetto_exporter(dir / "heap.perfetto-trace"));
  ringtrace::ChromeTraceOptions every;
  every.heap_interval_ns = 0;
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "heap_every.json", every));
  session.start();
  ringtrace::set_thread_name("main");
  {
    RINGTRACE_ZONE("work");
    sawtooth();
  }
  session.stop();
  const ringtrace::MemoryStats& m = session.stats().memory;
  std::ofstream out(dir / "expected.json");
  out << "{\"peak_bytes\":" << g_book.peak << ",\"session_peak_bytes\":" << m.peak_live_bytes
      << ",\"session_peak_time_ns\":" << m.peak_time_ns << ",\"grow_alloc_bytes\":" << g_book.allocated
      << ",\"grow_allocs\":" << g_book.allocations << ",\"allocations\":" << m.allocations << "}\n";
  return out ? 0 : 1;
}

int write_leak(const std::filesystem::path& file) {
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(file));
  session.start();
  void* leaked = nullptr;
  void* outside[10];
  {
    RINGTRACE_ZONE("outer");
    {
      RINGTRACE_ZONE("leaky");
      leaked = std::malloc(77777);
      g_sink = leaked;
      void* freed = std::malloc(5000);  // not a leak
      g_sink = freed;
      std::free(freed);
    }
  }
  {
    RINGTRACE_ZONE("kept");
    for (void*& p : outside) {
      p = std::malloc(400);
      g_sink = p;
    }
  }
  session.stop();
  std::free(leaked);
  for (void* p : outside) std::free(p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--leak") == 0) return write_leak(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: memory_heap_program DIR | --leak FILE\n");
    return 2;
  }
  return write_traces(argv[1]);
}
