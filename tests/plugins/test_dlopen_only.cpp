// A program that links ringtrace's static library and only dlopens its plugin: the
// plugin's events reach the program's session.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

TEST(Plugins, APluginOpenedWithDlopenOnlyRecordsIntoTheProgramsSession) {
  void* c = dlopen(RINGTRACE_PLUGIN_C, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(c, nullptr) << dlerror();
  auto work = reinterpret_cast<void (*)(int)>(dlsym(c, "plugin_c_work"));
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  { RINGTRACE_ZONE("main_zone"); }
  work(7);
  session.stop();
  int zones = 0;
  const auto trace = memory->trace();
  for (const auto& e : trace.events)
    zones += e.kind == ringtrace::EventKind::zone_begin && trace.sites.at(e.site).name == std::string("plugin_c_zone");
  EXPECT_EQ(zones, 7);
  dlclose(c);
}
