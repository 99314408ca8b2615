// The addresses -finstrument-functions hands to __cyg_profile_func_enter (the automatic
// instrumentation's raw records) symbolize to the functions entered.
#include <atomic>

#include "instrumented.hpp"
#include "symbols_test_support.hpp"

namespace {

constexpr int kMaxCalls = 64;
std::atomic<bool> g_recording{false};
std::atomic<int> g_calls{0};
void* g_entered[kMaxCalls];

}  // namespace

extern "C" {
// Only instrumented.cpp is compiled with -finstrument-functions; these run for its functions.
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* function, void*) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  const int i = g_calls.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxCalls) g_entered[i] = function;
}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void*, void*) {}
}

namespace {

using namespace symbols_test;

TEST(Instrumented, EnteredFunctionAddressesSymbolizeToTheirFunctions) {
  const instrumented::Expected expected = instrumented::expected();
  g_calls.store(0);
  g_recording.store(true);
  const int result = instrumented::root(4);
  g_recording.store(false);
  EXPECT_EQ(result, 5);

  ringtrace::symbols::Symbolizer symbolizer(ringtrace::symbols::loaded_modules());
  const std::string program = fs::canonical("/proc/self/exe").string();
  ASSERT_EQ(g_calls.load(), static_cast<int>(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    expect_function(symbolizer.resolve(address_of(g_entered[i])), expected[i].name, "instrumented.cpp",
                    expected[i].line, program);
  }
}

}  // namespace
