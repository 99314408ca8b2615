// A process that records what a tracer would: the loaded modules and raw function
// addresses (of its own functions and of a library it opens with dlopen), with the names
// and lines they must symbolize to. Then it exits; the test symbolizes the file.
//   symbols_recorder <output file> <library to dlopen>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "fixture.hpp"
#include "record_format.hpp"

namespace {

void add(fixture::Recording& recording, const fixture::FixtureFunction& function, const void* address) {
  recording.functions.push_back(
      {reinterpret_cast<std::uintptr_t>(address), function.name, function.file, function.line});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <output file> <library>\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto lib_functions = reinterpret_cast<decltype(&fixture_lib_functions)>(dlsym(library, "fixture_lib_functions"));
  auto lib_internal =
      reinterpret_cast<decltype(&fixture_lib_internal_function)>(dlsym(library, "fixture_lib_internal_function"));
  if (lib_functions == nullptr || lib_internal == nullptr) return 1;

  fixture::Recording recording;
  recording.pid = static_cast<long>(getpid());
  for (const auto& function : fixture::main_program_functions()) add(recording, function, function.address);
  add(recording, fixture::kCallerWithInlined, fixture::address_inside_inlined_code());
  const fixture::FixtureFunction* functions = nullptr;
  const std::size_t count = lib_functions(&functions);
  for (std::size_t i = 0; i < count; ++i) add(recording, functions[i], functions[i].address);
  add(recording, *lib_internal(), lib_internal()->address);
  // Taken last: the list a tracer would store with these addresses.
  recording.modules = ringtrace::symbols::loaded_modules();
  return fixture::write_recording(argv[1], recording) ? 0 : 1;
}
