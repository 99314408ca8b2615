#include <cstdio>

#include <ringtrace/recorded_trace.hpp>
#include <ringtrace/ringtrace.hpp>

int main() {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  {
    RINGTRACE_ZONE("consumer zone");
  }
  session.stop();
  const auto trace = memory->trace();
  if (trace.events.size() != 2 || trace.sites.at(trace.events[0].site).name != "consumer zone") {
    std::printf("consumer: expected one zone, got %zu events\n", trace.events.size());
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
