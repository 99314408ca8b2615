// Files for tool_messages_tests.sh, written through the library's own writer (the binary
// trace exporter, fed a hand-built stream by replay()):
//   crafted_files DIR
//     DIR/zones.rtrace          zones "parse" (twice) and "load" inside the first, nothing
//                               else: no FLOPs, allocations or context switches
//     DIR/no_zones.rtrace       three allocations (100, 200 and 300 bytes) and a free of the
//                               first, no zone: what an unmodified program under
//                               `record --memory` records
//     DIR/huge_alloc.rtrace     an allocation of 2^63 bytes after one of 64: no process
//                               allocates that much, so only a crafted (or damaged) file
//                               holds it
//     DIR/huge_free.rtrace      a free of 2^47 bytes (a sized free of a block the stream
//                               never allocated): as much
//     DIR/largest_alloc.rtrace  an allocation of 2^47 - 1 bytes: the largest that can be
//                               real, read as any other
// The stream's file keeps each memory event's size in its record (docs/file-format.md,
// "Files of a stream"), so the sizes above are what the reader meets.
#include <cstdint>
#include <filesystem>
#include <string>

#include "memory_exporters/memory_streams.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

using ringtrace::memory_test::MemoryStream;

void write(const std::filesystem::path& path, const MemoryStream& stream) {
  auto exporter = ringtrace::binary_trace_exporter(path);
  ringtrace::replay(stream.build(1000), *exporter);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  constexpr std::uint64_t kAddressSpace = std::uint64_t{1} << 47;
  {
    ringtrace::TraceBuilder b("zones");
    const ringtrace::ThreadId t = b.thread("main", 10);
    const ringtrace::SiteId parse = b.site("parse"), load = b.site("load");
    b.begin(t, parse, 10).begin(t, load, 20).end(t, 50).end(t, 60).begin(t, parse, 70).end(t, 75);
    auto exporter = ringtrace::binary_trace_exporter(dir / "zones.rtrace");
    ringtrace::replay(b.build(100), *exporter);
  }
  {
    MemoryStream s("no zones");
    const ringtrace::ThreadId t = s.b.thread("main", 11);
    s.alloc(t, 10, 100).alloc(t, 20, 200).alloc(t, 30, 300).free(t, 40, 100);
    write(dir / "no_zones.rtrace", s);
  }
  {
    MemoryStream s("huge alloc");
    const ringtrace::ThreadId t = s.b.thread("main", 12);
    s.b.begin(t, s.b.site("work"), 5);
    s.alloc(t, 10, 64).alloc(t, 20, std::uint64_t{1} << 63);
    s.b.end(t, 30);
    write(dir / "huge_alloc.rtrace", s);
  }
  {
    MemoryStream s("huge free");
    const ringtrace::ThreadId t = s.b.thread("main", 13);
    s.alloc(t, 10, 64).free(t, 20, kAddressSpace);
    write(dir / "huge_free.rtrace", s);
  }
  {
    MemoryStream s("largest alloc");
    const ringtrace::ThreadId t = s.b.thread("main", 14);
    s.alloc(t, 10, kAddressSpace - 1);
    write(dir / "largest_alloc.rtrace", s);
  }
  return 0;
}
