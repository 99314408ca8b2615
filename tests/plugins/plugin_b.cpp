// A plugin that links ringtrace's static library and records from its own code.
#include "ringtrace/instrument.hpp"

extern "C" __attribute__((visibility("default"))) void plugin_b_work(int n) {
  for (int i = 0; i < n; ++i) {
    RINGTRACE_ZONE("plugin_b_zone");
    RINGTRACE_INSTANT("plugin_b_instant");
    RINGTRACE_COUNTER("plugin_b_counter", i);
  }
}
