// A module list and function addresses in a text file: what a recording process leaves
// for the test to symbolize after it exited (the real trace file format is not this).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/modules.hpp"

namespace fixture {

struct RecordedFunction {
  std::uint64_t address = 0;
  std::string name, file;
  int line = 0;
};

struct Recording {
  long pid = 0;
  std::vector<ringtrace::symbols::Module> modules;
  std::vector<RecordedFunction> functions;
};

bool write_recording(const std::string& path, const Recording& recording);
bool read_recording(const std::string& path, Recording& recording);

}  // namespace fixture
