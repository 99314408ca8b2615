#include <ringtrace/instrument.hpp>

extern "C" __attribute__((visibility("default"))) void consumer_plugin_work() { RINGTRACE_ZONE("plugin zone"); }
