// Live symbolization: the test program's own functions and those of libraries it opened
// with dlopen (as built, and a stripped copy), from loaded_modules().
#include <atomic>
#include <thread>

#include "symbols_test_support.hpp"

namespace {

using namespace symbols_test;
using ringtrace::symbols::loaded_modules;
using ringtrace::symbols::Symbolizer;

std::string executable() { return fs::canonical("/proc/self/exe").string(); }

TEST(Symbolizer, NamesTheProgramsOwnFunctions) {
  Symbolizer symbolizer(loaded_modules());
  for (const auto& function : fixture::main_program_functions()) {
    expect_function(symbolizer.resolve(address_of(function.address)), function, executable());
  }
  EXPECT_TRUE(symbolizer.problems().empty()) << testing::PrintToString(symbolizer.problems());
}

// An address in code inlined into a function (a return address right after a call the
// inlined callee makes) names the function the code is in, with its definition's line.
TEST(Symbolizer, CodeInlinedIntoACallerNamesTheCaller) {
  Symbolizer symbolizer(loaded_modules());
  expect_function(symbolizer.resolve(address_of(fixture::address_inside_inlined_code())), fixture::kCallerWithInlined,
                  executable());
}

TEST(Symbolizer, NamesFunctionsOfALibraryOpenedWithDlopen) {
  FixtureLibrary library(SYMBOLS_FIXTURE_LIB);
  ASSERT_TRUE(library.ok());
  Symbolizer symbolizer(loaded_modules());
  const auto functions = library.functions();
  ASSERT_EQ(functions.size(), 4u);
  for (const auto& function : functions) {
    expect_function(symbolizer.resolve(address_of(function.address)), function, SYMBOLS_FIXTURE_LIB);
  }
  expect_function(symbolizer.resolve(address_of(library.internal_function().address)), library.internal_function(),
                  SYMBOLS_FIXTURE_LIB);
}

TEST(Symbolizer, AnAddressInNoModuleIsShownInHex) {
  Symbolizer symbolizer(loaded_modules());
  for (std::uint64_t address :
       {std::uint64_t{0}, std::uint64_t{0x10}, std::uint64_t{0x7f12deadbeef}, ~std::uint64_t{0}}) {
    const auto& symbol = symbolizer.resolve(address);
    EXPECT_EQ(symbol.function, hex(address));
    EXPECT_FALSE(symbol.resolved);
    EXPECT_TRUE(symbol.module.empty());
    EXPECT_TRUE(symbol.file.empty());
    EXPECT_EQ(symbol.line, 0u);
  }
}

TEST(Symbolizer, EachAddressIsResolvedOnceAndStaysValid) {
  Symbolizer symbolizer(loaded_modules());
  const auto functions = fixture::main_program_functions();
  const auto& first = symbolizer.resolve(address_of(functions.front().address));
  const std::string name = first.function;
  for (const auto& function : functions) symbolizer.resolve(address_of(function.address));
  for (std::uint64_t address = 0; address < 5000; ++address) symbolizer.resolve(address);  // rehashes
  EXPECT_EQ(&symbolizer.resolve(address_of(functions.front().address)), &first);
  EXPECT_EQ(first.function, name);
}

TEST(Symbolizer, AnEmptyModuleListKnowsNothing) {
  Symbolizer symbolizer({});
  const std::uint64_t address = address_of(fixture::main_program_functions().front().address);
  EXPECT_EQ(symbolizer.resolve(address).function, hex(address));
  EXPECT_FALSE(symbolizer.resolve(address).resolved);
  EXPECT_TRUE(symbolizer.problems().empty());
}

// One Symbolizer per thread: separate libdwfl sessions, nothing shared but libelf's
// process-wide setup.
TEST(Symbolizer, SeparateSymbolizersMayRunOnSeparateThreads) {
  FixtureLibrary library(SYMBOLS_FIXTURE_LIB);
  ASSERT_TRUE(library.ok());
  const auto modules = loaded_modules();
  auto functions = fixture::main_program_functions();
  for (const auto& function : library.functions()) functions.push_back(function);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        Symbolizer symbolizer(modules);
        for (const auto& function : functions) {
          const auto& symbol = symbolizer.resolve(address_of(function.address));
          if (symbol.function != function.name || symbol.line != static_cast<std::uint32_t>(function.line)) ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A stripped library (no .symtab, no DWARF): its exported functions are still named from
// .dynsym (without file and line); the others are "<module>+0x<offset from base>".
TEST(Symbolizer, AStrippedLibraryGivesDynamicSymbolsOrModulePlusOffset) {
  FixtureLibrary library(SYMBOLS_FIXTURE_STRIPPED);
  ASSERT_TRUE(library.ok());
  const auto module = library.module();
  Symbolizer symbolizer(loaded_modules());
  for (const auto& function : library.functions()) {
    const auto& symbol = symbolizer.resolve(address_of(function.address));
    SCOPED_TRACE(function.name);
    EXPECT_TRUE(symbol.resolved);
    EXPECT_EQ(symbol.function, function.name);
    EXPECT_EQ(symbol.file, "");
    EXPECT_EQ(symbol.line, 0u);
    EXPECT_EQ(symbol.module, SYMBOLS_FIXTURE_STRIPPED);
  }
  const std::uint64_t internal = address_of(library.internal_function().address);
  const auto& symbol = symbolizer.resolve(internal);
  EXPECT_FALSE(symbol.resolved);
  EXPECT_EQ(symbol.function, "libsymbols_fixture_lib.stripped.so+" + hex(internal - module.base));
  EXPECT_EQ(symbol.module, SYMBOLS_FIXTURE_STRIPPED);
  EXPECT_TRUE(has_problem(symbolizer.problems(), {SYMBOLS_FIXTURE_STRIPPED, "no DWARF"}))
      << testing::PrintToString(symbolizer.problems());
}

}  // namespace
