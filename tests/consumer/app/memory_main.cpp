// A consumer of ringtrace::memory (pkg-config ringtrace-memory): the allocations it makes
// in a zone are that zone's in the session's heap (the stats), as docs/memory.md says.
#include <cstdio>
#include <cstdlib>

#include "ringtrace/ringtrace.hpp"

void* volatile g_sink;

int main() {
  ringtrace::Config config;
  config.memory = true;
  ringtrace::Session session(config);
  session.start();
  void* kept = nullptr;
  {
    RINGTRACE_ZONE("consumer");
    kept = std::malloc(31337);
    g_sink = kept;
  }
  session.stop();
  const ringtrace::MemoryStats& m = session.stats().memory;
  std::free(kept);
  for (const auto& leak : m.leaks) {
    if (leak.stack == "consumer" && leak.bytes == 31337) {
      std::printf("memory consumer: %llu allocations, the leak of 31337 bytes in its zone\n",
                  static_cast<unsigned long long>(m.allocations));
      return 0;
    }
  }
  std::printf("memory consumer: the 31337-byte block is not among the %zu leaks\n", m.leaks.size());
  return 1;
}
