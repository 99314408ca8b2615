// libFuzzer harness for the binary trace file reader: any bytes, read by replay_file()
// into a Chrome exporter and a MemoryExporter, must give a result or a clean
// std::runtime_error: no crash, hang, leak, sanitizer report or huge allocation.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  if (size != 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
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
