// One runtime per process: a program and its plugins, each linking ringtrace's static
// library (two linked at build time, one opened with dlopen), record into one session.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

extern "C" void plugin_a_work(int n);
extern "C" void plugin_b_work(int n);

namespace {

std::map<std::string, int> count_by_name(const ringtrace::RecordedTrace& trace) {
  std::map<std::string, int> counts;
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind != ringtrace::EventKind::zone_end) ++counts[trace.sites.at(e.site).name];
  }
  return counts;
}

TEST(Plugins, EveryObjectRecordsIntoTheOneSession) {
  void* c = dlopen(RINGTRACE_PLUGIN_C, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(c, nullptr) << dlerror();
  auto plugin_c_work = reinterpret_cast<void (*)(int)>(dlsym(c, "plugin_c_work"));
  ASSERT_NE(plugin_c_work, nullptr);

  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  for (int i = 0; i < 10; ++i) {
    RINGTRACE_ZONE("main_zone");
  }
  plugin_a_work(20);
  std::thread([&] {  // a thread whose first event comes from a plugin
    plugin_b_work(30);
    plugin_c_work(40);
  })
      .join();
  plugin_c_work(5);
  // Unloaded before stop(): its call sites must still resolve in every exporter.
  ASSERT_EQ(dlclose(c), 0);
  session.stop();

  const auto counts = count_by_name(memory->trace());
  EXPECT_EQ(counts.at("main_zone"), 10);
  for (const auto& [plugin, n] : std::map<std::string, int>{{"a", 20}, {"b", 30}, {"c", 45}}) {
    EXPECT_EQ(counts.at("plugin_" + plugin + "_zone"), n) << plugin;
    EXPECT_EQ(counts.at("plugin_" + plugin + "_instant"), n) << plugin;
    EXPECT_EQ(counts.at("plugin_" + plugin + "_counter"), n) << plugin;
  }
  EXPECT_EQ(session.stats().dropped, 0u);
}

}  // namespace
