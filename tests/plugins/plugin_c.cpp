// A plugin that links ringtrace's static library and records from its own code.
#include "ringtrace/instrument.hpp"

extern "C" __attribute__((visibility("default"))) void plugin_c_work(int n) {
  for (int i = 0; i < n; ++i) {
    RINGTRACE_ZONE("plugin_c_zone");
    RINGTRACE_INSTANT("plugin_c_instant");
    RINGTRACE_COUNTER("plugin_c_counter", i);
  }
}
