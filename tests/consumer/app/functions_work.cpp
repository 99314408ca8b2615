// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// Built with -finstrument-functions -g and linked with ringtrace::functions (CMake) or
// `pkg-config --libs ringtrace-functions`: its calls are recorded with no macro.
namespace consumer {
volatile int g_sink = 0;
// Where each function starts, for functions_main.cpp to check the recorded lines against.
extern const int kTwiceLine = __LINE__ + 1;
[[gnu::noinline]] int twice(int v) { g_sink = v; return g_sink * 2; }
extern const int kWorkLine = __LINE__ + 1;
[[gnu::noinline]] int work(int n) { int t = 0; for (int i = 0; i < n; ++i) t += twice(i); return t; }
}  // namespace consumer
// clang-format on
