// Helpers of the symbolizer's tests: the fixture library opened with dlopen, temporary
// directories, expectations on a Symbol.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "symbols/modules.hpp"
#include "symbols/symbolizer.hpp"

namespace symbols_test {

namespace fs = std::filesystem;

// A fixture library opened with dlopen for the test's duration, and its function table.
class FixtureLibrary {
 public:
  explicit FixtureLibrary(const std::string& path) : path_(path), handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
  }
  ~FixtureLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FixtureLibrary(const FixtureLibrary&) = delete;
  FixtureLibrary& operator=(const FixtureLibrary&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& path() const { return path_; }
  void* symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }
  std::vector<fixture::FixtureFunction> functions() const {
    auto table = reinterpret_cast<decltype(&fixture_lib_functions)>(symbol("fixture_lib_functions"));
    if (table == nullptr) return {};
    const fixture::FixtureFunction* functions = nullptr;
    const std::size_t count = table(&functions);
    return {functions, functions + count};
  }
  fixture::FixtureFunction internal_function() const {
    auto internal = reinterpret_cast<decltype(&fixture_lib_internal_function)>(symbol("fixture_lib_internal_function"));
    return internal ? *internal() : fixture::FixtureFunction{};
  }
  // Its entry in loaded_modules(), or an empty Module.
  ringtrace::symbols::Module module() const {
    for (auto& module : ringtrace::symbols::loaded_modules()) {
      std::error_code error;
      if (fs::equivalent(module.path, path_, error)) return module;
    }
    ADD_FAILURE() << path_ << " is not in loaded_modules()";
    return {};
  }

 private:
  std::string path_;
  void* handle_;
};

// A fresh directory under $TMPDIR, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ringtrace-symbols-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  // Copies `from` to <dir>/<relative>, creating directories; returns the new path.
  std::string put(const std::string& from, const fs::path& relative) const {
    const fs::path to = path_ / relative;
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to.string();
  }

 private:
  fs::path path_;
};

inline std::string build_id_path(const std::string& id, const char* suffix = "") {
  return ".build-id/" + id.substr(0, 2) + "/" + id.substr(2) + suffix;
}

inline std::string hex(std::uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

inline std::uint64_t address_of(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

// The symbol names `expected` exactly, with its definition's file (basename, path
// absolute) and line, in `module`.
inline void expect_function(const ringtrace::symbols::Symbol& symbol, const std::string& name, const char* file,
                            int line, const std::string& module) {
  SCOPED_TRACE(name);
  EXPECT_TRUE(symbol.resolved);
  EXPECT_EQ(symbol.function, name);
  EXPECT_EQ(fs::path(symbol.file).filename(), file) << symbol.file;
  EXPECT_TRUE(fs::path(symbol.file).is_absolute()) << symbol.file;
  EXPECT_EQ(symbol.line, static_cast<std::uint32_t>(line));
  EXPECT_EQ(symbol.module, module);
}

inline void expect_function(const ringtrace::symbols::Symbol& symbol, const fixture::FixtureFunction& function,
                            const std::string& module) {
  expect_function(symbol, function.name, function.file, function.line, module);
}

// True if one of `problems` contains all of `parts`.
inline bool has_problem(const std::vector<std::string>& problems, std::initializer_list<std::string> parts) {
  for (const std::string& problem : problems) {
    bool all = true;
    for (const std::string& part : parts) all = all && problem.find(part) != std::string::npos;
    if (all) return true;
  }
  return false;
}

}  // namespace symbols_test
