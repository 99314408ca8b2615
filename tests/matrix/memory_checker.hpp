// The memory matrix's checker (issue 42): what ringtrace recorded of a memory
// configuration's run (its binary files through the `ringtrace` tool's dump, info and
// report --leaks; the live table and Chrome trace) against the truth: the counting
// preload's windows (tests/memtruth) where it ran, else the workload's own count. It
// knows the workload (spec.hpp) and the manifests it wrote, not the runtime.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec.hpp"

namespace matrix {

struct MemoryTools {
  std::string ringtrace;      // the tool
  std::string python;         // "" when there is none (the Chrome trace is then not read)
  std::string chrome_script;  // chrome_zone_memory.py
  bool counter = false;       // libmemtruth_counter.so was preloaded (its files are in the directory)
};

// Every failure one line; lines starting with "note: " fail nothing.
std::vector<std::string> check_memory(const MemoryConfig& config, const std::filesystem::path& dir,
                                      const MemoryTools& tools);

}  // namespace matrix
