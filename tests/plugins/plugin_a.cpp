// A plugin that links ringtrace's static library and records from its own code.
#include "ringtrace/instrument.hpp"

extern "C" __attribute__((visibility("default"))) void plugin_a_work(int n) {
  for (int i = 0; i < n; ++i) {
    RINGTRACE_ZONE("plugin_a_zone");
    RINGTRACE_INSTANT("plugin_a_instant");
    RINGTRACE_COUNTER("plugin_a_counter", i);
  }
}
