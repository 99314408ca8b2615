// libFuzzer harness for the binary trace file reader: any bytes, read by replay_file()
// into a Chrome exporter and a MemoryExporter, must give a result or a clean
// std::runtime_error: no crash, hang, leak, sanitizer report or huge allocation.
// An input that ends with the 8 bytes "\x89RINGS\0\0" and a u32 length L holds a trace
// file followed by L bytes of its ring file (BinaryTraceOptions::rings_in_file), written
// beside it, where the reader looks for it when the trace is cut short.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

std::string scratch_path() {
  const char* dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/ringtrace-fuzz-" + std::to_string(::getpid()) + ".rtrace";
}

// The scratch files go when the fuzzer exits (libFuzzer ends with exit()).
struct Scratch {
  std::string path = scratch_path();
  ~Scratch() {
    std::remove(path.c_str());
    std::remove((path + ".rings").c_str());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Scratch scratch;
  const std::string& path = scratch.path;
  static const std::string rings = path + ".rings";
  static constexpr char kTrailer[8] = {'\x89', 'R', 'I', 'N', 'G', 'S', 0, 0};
  std::size_t trace = size, ring = 0;
  if (size >= 12 && std::memcmp(data + size - 12, kTrailer, 8) == 0) {
    std::uint32_t n = 0;
    std::memcpy(&n, data + size - 4, 4);
    if (n <= size - 12) {
      ring = n;
      trace = size - 12 - n;
    }
  }
  const auto write = [](const std::string& to, const std::uint8_t* bytes, std::size_t n) {
    std::FILE* f = std::fopen(to.c_str(), "wb");
    if (f == nullptr) return false;
    if (n != 0) std::fwrite(bytes, 1, n, f);
    std::fclose(f);
    return true;
  };
  if (!write(path, data, trace)) return 0;
  if (ring != 0) {
    if (!write(rings, data + trace, ring)) return 0;
  } else {
    std::remove(rings.c_str());
  }
  std::ostringstream chrome_text;
  auto chrome = ringtrace::chrome_trace_exporter(chrome_text);
  ringtrace::MemoryExporter memory;
  ringtrace::Exporter* const both[] = {chrome.get(), &memory};
  try {
    (void)ringtrace::replay_file(path, both);
  } catch (const std::runtime_error&) {
    // A clean refusal (not a trace, a newer version): fine.
  }
  return 0;
}
