// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// A library the function tests open with dlopen and close before the session stops: built
// with -finstrument-functions and linked with ringtrace::functions (so that, like any
// plugin that links ringtrace, unloading it waits for the drainer to have read its calls).
// plugin_entry() calls plugin_step() `n` times.
namespace plugin {
volatile int g_sink = 0;
[[gnu::noinline]] int plugin_step(int v) { g_sink = v; return g_sink * 2; } constexpr int kStepLine = __LINE__;
}  // namespace plugin

extern "C" [[gnu::noinline]] int plugin_entry(int n) { int t = 0; for (int i = 0; i < n; ++i) t += plugin::plugin_step(i); return t; } constexpr int kEntryLine = __LINE__;

// Not instrumented: what the test expects.
extern "C" __attribute__((no_instrument_function)) int plugin_step_line() { return plugin::kStepLine; }
extern "C" __attribute__((no_instrument_function)) int plugin_entry_line() { return kEntryLine; }
extern "C" __attribute__((no_instrument_function)) const char* plugin_source_file() { return __FILE__; }
// clang-format on
