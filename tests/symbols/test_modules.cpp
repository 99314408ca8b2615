// loaded_modules() and module_generation(): what a recorder stores per module.
#include <dlfcn.h>

#include <atomic>
#include <thread>

#include "symbols_test_support.hpp"

namespace {

using namespace symbols_test;
using ringtrace::symbols::find_module;
using ringtrace::symbols::loaded_modules;
using ringtrace::symbols::module_generation;

bool contains_path(const std::vector<ringtrace::symbols::Module>& modules, const std::string& path) {
  for (const auto& module : modules) {
    if (module.path == path) return true;
  }
  return false;
}

TEST(LoadedModules, TheExecutableComesFirstWithItsPathAndBuildId) {
  const auto modules = loaded_modules();
  ASSERT_FALSE(modules.empty());
  const auto& main = modules.front();
  EXPECT_EQ(main.path, fs::canonical("/proc/self/exe").string());
  EXPECT_EQ(main.build_id, SYMBOLS_TEST_BUILD_ID);
  for (const auto& function : fixture::main_program_functions()) {
    const std::uint64_t address = address_of(function.address);
    EXPECT_GE(address, main.low) << function.name;
    EXPECT_LT(address, main.high) << function.name;
    EXPECT_EQ(find_module(modules, address), &modules.front()) << function.name;
  }
}

TEST(LoadedModules, EveryEntryHasAnAbsolutePathAndCode) {
  for (const auto& module : loaded_modules()) {
    EXPECT_TRUE(module.path.starts_with('/')) << module.path;
    EXPECT_EQ(module.path.find("vdso"), std::string::npos) << module.path;
    EXPECT_LT(module.low, module.high) << module.path;
    EXPECT_TRUE(fs::exists(module.path)) << module.path;
  }
}

TEST(LoadedModules, SeesALibraryOpenedWithDlopen) {
  FixtureLibrary library(SYMBOLS_FIXTURE_LIB);
  ASSERT_TRUE(library.ok());
  const auto modules = loaded_modules();
  const auto& functions = library.functions();
  ASSERT_FALSE(functions.empty());
  const auto* module = find_module(modules, address_of(functions.front().address));
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->path, SYMBOLS_FIXTURE_LIB);
  EXPECT_EQ(module->build_id, SYMBOLS_LIB_BUILD_ID);
  // The load bias is where the loader mapped the file's first byte (its first PT_LOAD is
  // at file address 0).
  Dl_info info{};
  ASSERT_NE(dladdr(functions.front().address, &info), 0);
  EXPECT_EQ(module->base, address_of(info.dli_fbase));
  for (const auto& function : functions) EXPECT_EQ(find_module(modules, address_of(function.address)), module);
}

TEST(LoadedModules, GenerationChangesWithDlopenAndDlclose) {
  const std::uint64_t before = module_generation();
  EXPECT_EQ(module_generation(), before);
  EXPECT_FALSE(contains_path(loaded_modules(), SYMBOLS_FIXTURE_UNLOAD));

  void* handle = dlopen(SYMBOLS_FIXTURE_UNLOAD, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const std::uint64_t loaded = module_generation();
  EXPECT_NE(loaded, before);
  EXPECT_TRUE(contains_path(loaded_modules(), SYMBOLS_FIXTURE_UNLOAD));

  // A second dlopen of a loaded object loads nothing.
  void* again = dlopen(SYMBOLS_FIXTURE_UNLOAD, RTLD_NOW | RTLD_LOCAL);
  EXPECT_EQ(module_generation(), loaded);
  dlclose(again);
  EXPECT_EQ(module_generation(), loaded);

  ASSERT_EQ(dlclose(handle), 0);
  const std::uint64_t unloaded = module_generation();
  EXPECT_NE(unloaded, loaded);
  EXPECT_NE(unloaded, before);
  EXPECT_FALSE(contains_path(loaded_modules(), SYMBOLS_FIXTURE_UNLOAD));
}

// Reading the list from several threads while another opens and closes a library.
TEST(LoadedModules, CanBeReadFromAnyThread) {
  std::atomic<bool> stop{false};
  std::thread loader([&] {
    while (!stop.load()) {
      if (void* handle = dlopen(SYMBOLS_FIXTURE_UNLOAD, RTLD_NOW | RTLD_LOCAL)) dlclose(handle);
    }
  });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const auto modules = loaded_modules();
        if (modules.empty() || modules.front().build_id != SYMBOLS_TEST_BUILD_ID) bad.fetch_add(1);
        (void)module_generation();
      }
    });
  }
  for (auto& reader : readers) reader.join();
  stop.store(true);
  loader.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
