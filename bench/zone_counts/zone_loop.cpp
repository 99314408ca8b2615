// A zone in a loop, and the same loop without it, for bench/zone_counts/zone_counts.sh:
// callgrind counts the instructions and data writes of each loop function, and the
// difference per iteration is what one enabled zone (begin and end) executes.
#include <cstdlib>
#include <memory>
#include <span>

#include "ringtrace/exporter.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {
class NullExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event>, const ringtrace::TraceContext&) override {}
};
}  // namespace

// The loops' bodies are a compiler barrier (as benchmark::ClobberMemory()), so that
// nothing is hoisted out of them or merged across iterations.
extern "C" __attribute__((noinline)) void loop_empty(long n) {
  for (long i = 0; i < n; ++i) asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void loop_zone(long n) {
  for (long i = 0; i < n; ++i) {
    RINGTRACE_ZONE("zone");
    asm volatile("" ::: "memory");
  }
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  ringtrace::Config config;
  config.buffer_records = std::size_t{1} << 22;  // 64 MiB: the loop never meets a full ring
  ringtrace::Session session(config);
  session.add_exporter(std::make_shared<NullExporter>());
  session.start();
  for (int i = 0; i < 1000; ++i) {
    RINGTRACE_ZONE("warm");  // the thread's first event binds its ring: not counted
  }
  loop_empty(n);
  loop_zone(n);
  session.stop();
}
