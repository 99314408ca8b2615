// The calls of inlined functions the hooks left out (FunctionOptions::inlined false), per
// function, over the session's rings: each ring's table (InlinedCalls, counted by its
// thread) folded in when the drainer lets the ring go, and read in place while its
// thread records. Owned by the drainer thread; names resolved only when stats are asked.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringtrace/detail/functions.hpp"  // InlinedCalls

namespace ringtrace::detail {

class InlinedTally {
 public:
  void add(const InlinedCalls& calls);
  // Qualified name and calls, most calls first (ties by name); the calls of functions
  // their thread's table had no room for last, as "(other functions)".
  std::vector<std::pair<std::string, std::uint64_t>> by_function() const;

 private:
  std::unordered_map<std::uintptr_t, std::uint64_t> calls_;  // function address -> calls
  std::uint64_t others_ = 0;
};

inline constexpr const char* kOtherInlinedFunctions = "(other functions)";

}  // namespace ringtrace::detail
