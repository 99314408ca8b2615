#include <dlfcn.h>

#include <cstdio>

#include <ringtrace/recorded_trace.hpp>
#include <ringtrace/ringtrace.hpp>

int main() {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  void* plugin = dlopen(CONSUMER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  auto work = plugin != nullptr ? reinterpret_cast<void (*)()>(dlsym(plugin, "consumer_plugin_work")) : nullptr;
  if (work == nullptr) {
    std::printf("consumer: cannot load the plugin: %s\n", dlerror());
    return 1;
  }
  session.start();
  { RINGTRACE_ZONE("consumer zone"); }
  work();  // the plugin's copy of the hot path records into this session
  session.stop();
  const auto trace = memory->trace();
  if (trace.events.size() != 4 || trace.sites.at(trace.events[0].site).name != "consumer zone" ||
      trace.sites.at(trace.events[2].site).name != "plugin zone") {
    std::printf("consumer: expected the program's zone and the plugin's, got %zu events\n", trace.events.size());
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
