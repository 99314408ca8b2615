// Which file a recorded module is read from: only one with the recorded build id, at the
// recorded path or found in the search paths; a separate debug file by build id.
#include <fstream>

#include "symbols_test_support.hpp"

namespace {

using namespace symbols_test;
using ringtrace::symbols::Module;
using ringtrace::symbols::Symbolizer;

constexpr const char* kLibName = "libsymbols_fixture_lib.so";

// The fixture library loaded in this process: its addresses are the "recorded" ones,
// symbolized against module records that say where the file is.
class SearchPaths : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(library_.ok());
    loaded_ = library_.module();
    ASSERT_EQ(loaded_.build_id, SYMBOLS_LIB_BUILD_ID);
  }
  // The loaded module as if recorded from `path`, with `build_id`.
  Module recorded(const std::string& path, const std::string& build_id = SYMBOLS_LIB_BUILD_ID) const {
    Module module = loaded_;
    module.path = path;
    module.build_id = build_id;
    return module;
  }
  // Every function named right (in `module`), or every one "<basename>+0x..." unresolved.
  void expect_named(Symbolizer& symbolizer, const std::string& module) {
    for (const auto& function : all_functions()) {
      expect_function(symbolizer.resolve(address_of(function.address)), function, module);
    }
  }
  void expect_unnamed(Symbolizer& symbolizer, const std::string& module) {
    for (const auto& function : all_functions()) {
      const std::uint64_t address = address_of(function.address);
      const auto& symbol = symbolizer.resolve(address);
      EXPECT_FALSE(symbol.resolved) << symbol.function;
      EXPECT_EQ(symbol.function, fs::path(module).filename().string() + "+" + hex(address - loaded_.base));
      EXPECT_EQ(symbol.module, module);
    }
  }
  std::vector<fixture::FixtureFunction> all_functions() const {
    auto functions = library_.functions();
    functions.push_back(library_.internal_function());
    return functions;
  }

  FixtureLibrary library_{SYMBOLS_FIXTURE_LIB};
  Module loaded_;
  TempDir dir_;
};

TEST_F(SearchPaths, AFileWhoseBuildIdDiffersFromTheRecordedOneIsNotUsed) {
  Symbolizer symbolizer({recorded(SYMBOLS_FIXTURE_LIB, SYMBOLS_SHIFTED_BUILD_ID)});
  expect_unnamed(symbolizer, SYMBOLS_FIXTURE_LIB);
  EXPECT_TRUE(has_problem(symbolizer.problems(),
                          {SYMBOLS_FIXTURE_LIB, "build id mismatch", SYMBOLS_LIB_BUILD_ID, SYMBOLS_SHIFTED_BUILD_ID}))
      << testing::PrintToString(symbolizer.problems());
}

// The recorded path now holds another build (shifted by 4 KB); the right one is in a
// search path under its name.
TEST_F(SearchPaths, TheRightBuildIsFoundInASearchPath) {
  const std::string at_path = dir_.put(SYMBOLS_FIXTURE_SHIFTED, fs::path("recorded") / kLibName);
  const std::string copy = dir_.put(SYMBOLS_FIXTURE_LIB, fs::path("search") / kLibName);
  {
    Symbolizer without(std::vector<Module>{recorded(at_path)});
    expect_unnamed(without, at_path);
    EXPECT_TRUE(has_problem(without.problems(), {at_path, "build id mismatch", "no file with build id"}))
        << testing::PrintToString(without.problems());
  }
  Symbolizer symbolizer({recorded(at_path)}, {(dir_.path() / "search").string()});
  expect_named(symbolizer, at_path);
  EXPECT_TRUE(has_problem(symbolizer.problems(), {at_path, "build id mismatch", "using " + copy}))
      << testing::PrintToString(symbolizer.problems());
}

// What the test above guards against: read at the recorded base, the other build names
// other code.
TEST_F(SearchPaths, TheOtherBuildWouldGiveWrongNames) {
  const std::string at_path = dir_.put(SYMBOLS_FIXTURE_SHIFTED, fs::path("recorded") / kLibName);
  Symbolizer trusting({recorded(at_path, SYMBOLS_SHIFTED_BUILD_ID)});
  int wrong = 0;
  for (const auto& function : all_functions()) {
    const auto& symbol = trusting.resolve(address_of(function.address));
    wrong += symbol.function != function.name || symbol.line != static_cast<std::uint32_t>(function.line);
  }
  EXPECT_EQ(wrong, static_cast<int>(all_functions().size()));
}

TEST_F(SearchPaths, AMissingFileIsFoundByBuildIdInASearchPath) {
  const std::string gone = (dir_.path() / "gone" / kLibName).string();
  const std::string copy = dir_.put(SYMBOLS_FIXTURE_LIB, fs::path("ids") / build_id_path(SYMBOLS_LIB_BUILD_ID));
  Symbolizer symbolizer({recorded(gone)}, {(dir_.path() / "ids").string()});
  expect_named(symbolizer, gone);
  EXPECT_TRUE(has_problem(symbolizer.problems(), {gone, "not found", "using " + copy}))
      << testing::PrintToString(symbolizer.problems());
}

TEST_F(SearchPaths, AMissingFileWithNoCopyGivesModulePlusOffset) {
  const std::string gone = (dir_.path() / "gone" / kLibName).string();
  Symbolizer symbolizer({recorded(gone)}, {dir_.path().string()});
  expect_unnamed(symbolizer, gone);
  EXPECT_TRUE(has_problem(symbolizer.problems(), {gone, "not found", "no file with build id " SYMBOLS_LIB_BUILD_ID}))
      << testing::PrintToString(symbolizer.problems());
}

// A stripped binary at the recorded path and its separate debug file (objcopy
// --only-keep-debug) under .build-id in a search path: libdw finds the DWARF by build id.
TEST_F(SearchPaths, ASeparateDebugFileIsFoundByBuildId) {
  dir_.put(SYMBOLS_FIXTURE_DEBUG_FILE, fs::path("debug") / build_id_path(SYMBOLS_LIB_BUILD_ID, ".debug"));
  Symbolizer symbolizer({recorded(SYMBOLS_FIXTURE_STRIPPED)}, {(dir_.path() / "debug").string()});
  expect_named(symbolizer, SYMBOLS_FIXTURE_STRIPPED);
  EXPECT_TRUE(symbolizer.problems().empty()) << testing::PrintToString(symbolizer.problems());

  // Without it: .dynsym names only.
  Symbolizer stripped({recorded(SYMBOLS_FIXTURE_STRIPPED)});
  const auto internal = library_.internal_function();
  EXPECT_FALSE(stripped.resolve(address_of(internal.address)).resolved);
  EXPECT_TRUE(stripped.resolve(address_of(library_.functions().front().address)).resolved);
}

// The binary is gone but its debug file is there: it has the symbols and the DWARF at
// the same addresses, which is all symbolizing needs.
TEST_F(SearchPaths, ADebugFileAloneIsEnough) {
  const std::string gone = (dir_.path() / "gone" / kLibName).string();
  dir_.put(SYMBOLS_FIXTURE_DEBUG_FILE, fs::path("debug") / build_id_path(SYMBOLS_LIB_BUILD_ID, ".debug"));
  Symbolizer symbolizer({recorded(gone)}, {(dir_.path() / "debug").string()});
  expect_named(symbolizer, gone);
}

TEST_F(SearchPaths, WithoutARecordedBuildIdTheFileAtThePathIsUsed) {
  Symbolizer symbolizer({recorded(SYMBOLS_FIXTURE_LIB, "")});
  expect_named(symbolizer, SYMBOLS_FIXTURE_LIB);
}

TEST_F(SearchPaths, AFileThatIsNotElfIsReportedNotRead) {
  const fs::path text = dir_.path() / kLibName;
  { std::ofstream(text) << "not an ELF file\n"; }
  Symbolizer symbolizer({recorded(text.string())});
  expect_unnamed(symbolizer, text.string());
  EXPECT_TRUE(has_problem(symbolizer.problems(), {text.string(), "not an ELF file"}))
      << testing::PrintToString(symbolizer.problems());
}

// Truncated copies of a real library at the recorded path (no build id to check): never a
// crash, whatever libelf and libdw make of them, and never a wrong name: each function is
// named as it is (what survives of .dynsym and .symtab: 4 of 5 at a quarter and half of
// the file, none when less is left), or not named, by its module and offset; a file and
// line, when one is given, are the function's own.
TEST_F(SearchPaths, TruncatedFilesDoNotCrash) {
  const auto size = fs::file_size(SYMBOLS_FIXTURE_LIB);
  for (std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{16}, std::uintmax_t{64}, std::uintmax_t{700}, size / 4,
                              size / 2, size - 100}) {
    const std::string cut = dir_.put(SYMBOLS_FIXTURE_LIB, fs::path("cut") / (std::to_string(keep) + ".so"));
    fs::resize_file(cut, keep);
    Symbolizer symbolizer({recorded(cut, "")});
    for (const auto& function : all_functions()) {
      const std::uint64_t address = address_of(function.address);
      const auto& symbol = symbolizer.resolve(address);
      SCOPED_TRACE(std::to_string(keep) + " bytes kept, " + function.name);
      if (symbol.resolved) {
        EXPECT_EQ(symbol.function, function.name);
        if (!symbol.file.empty()) {
          EXPECT_EQ(fs::path(symbol.file).filename(), function.file);
        }
        if (symbol.line != 0) {
          EXPECT_EQ(symbol.line, static_cast<std::uint32_t>(function.line));
        }
      } else {
        EXPECT_EQ(symbol.function, fs::path(cut).filename().string() + "+" + hex(address - loaded_.base));
      }
      EXPECT_EQ(symbol.module, cut);
    }
  }
}

}  // namespace
