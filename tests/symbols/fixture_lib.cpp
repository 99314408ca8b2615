// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// The library the tests open with dlopen. Built twice: as is, with a fixed build id, and
// with FIXTURE_SHIFTED (4 KB of padding ahead of the functions, another build id), the
// "other build" a recorded path may hold; plus a stripped copy and a separate debug file
// (see CMakeLists.txt). Exported (default visibility) so that the stripped copy keeps
// their names in .dynsym.
#include <cstddef>
#include <string_view>

#include "fixture.hpp"

#define FIXTURE_EXPORT __attribute__((visibility("default")))

namespace {
volatile int g_lib_sink = 0;
}

#ifdef FIXTURE_SHIFTED
// Moves every function by 4 KB: the wrong build at the recorded path names other code.
// In a .text.hot section, which the linker places ahead of .text (the compiler does not
// keep the source order of functions).
extern "C" FIXTURE_EXPORT __attribute__((section(".text.hot.fixture_padding"))) void fixture_lib_padding() {
  asm volatile(".skip 4096, 0x90");
}
#endif

namespace plugin::codec {

class FIXTURE_EXPORT Codec {
 public:
  int encode(std::string_view text);
  int decode(int value) const;
};

int Codec::encode(std::string_view text) { g_lib_sink = 41; return static_cast<int>(text.size()) + 40; } constexpr int kEncodeLine = __LINE__;
int Codec::decode(int value) const { g_lib_sink = 42; return value - 40; } constexpr int kDecodeLine = __LINE__;

FIXTURE_EXPORT int checksum(const char* data, std::size_t size) { g_lib_sink = 43; int sum = 0; for (std::size_t i = 0; i < size; ++i) sum += data[i]; return sum; } constexpr int kChecksumLine = __LINE__;

// Internal linkage: in .symtab and DWARF, never in .dynsym.
static int internal_helper(int value) { g_lib_sink = 44; return value * 3 + 1; } constexpr int kInternalLine = __LINE__;

}  // namespace plugin::codec

extern "C" FIXTURE_EXPORT int fixture_lib_c_function(int value) { g_lib_sink = 45; return value + 45; } constexpr int kCFunctionLine = __LINE__;

namespace {

using fixture::FixtureFunction;
using fixture::function_address;
using fixture::member_address;
using plugin::codec::Codec;

const FixtureFunction kFunctions[] = {
    {member_address(&Codec::encode), "plugin::codec::Codec::encode(std::string_view)", "fixture_lib.cpp",
     plugin::codec::kEncodeLine},
    {member_address(&Codec::decode), "plugin::codec::Codec::decode(int) const", "fixture_lib.cpp",
     plugin::codec::kDecodeLine},
    {function_address(&plugin::codec::checksum), "plugin::codec::checksum(char const*, unsigned long)",
     "fixture_lib.cpp", plugin::codec::kChecksumLine},
    {function_address(&fixture_lib_c_function), "fixture_lib_c_function", "fixture_lib.cpp", kCFunctionLine},
};

const FixtureFunction kInternal{function_address(&plugin::codec::internal_helper), "plugin::codec::internal_helper(int)",
                                "fixture_lib.cpp", plugin::codec::kInternalLine};

}  // namespace

extern "C" FIXTURE_EXPORT std::size_t fixture_lib_functions(const FixtureFunction** functions) {
  *functions = kFunctions;
  return sizeof kFunctions / sizeof kFunctions[0];
}

extern "C" FIXTURE_EXPORT const FixtureFunction* fixture_lib_internal_function() { return &kInternal; }
// clang-format on
