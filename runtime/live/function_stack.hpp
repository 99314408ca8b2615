// The shadow stacks of automatic function instrumentation (include/ringtrace/detail/
// functions.hpp has the hot path): what the session, the thread registry and the drainer
// need of them. The slow paths are in function_stack.cpp.
#pragma once

#include <cstdint>

#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// The session's Config::functions.max_depth, from start() on (threads size their stacks
// with it at their first instrumented call of the session). Also zeroes the counts.
void set_function_max_depth(std::uint32_t max_depth) noexcept;

// What the slow paths counted since the session started (any thread).
struct FunctionCounts {
  std::uint64_t unwound = 0;   // frames closed because an exception or a longjmp skipped their exits
  std::uint64_t too_deep = 0;  // calls deeper than the maximum depth, not recorded
};
FunctionCounts function_counts() noexcept;

// The calling thread was bound to session `epoch` (Registry::bind): a stack of another
// session's frames is emptied (its frames' ends belong to that session's ring).
void function_stack_bound(std::uint32_t epoch) noexcept;
// The calling thread records nothing any more (untraced, exiting, a fork child's copy of
// its parent's thread): its stack is emptied and entries record nothing.
void function_stack_forget() noexcept;

// The key of the argument that marks a frame closed by the repair ("unwound" = 1). Inline:
// a definition in the library would be one per shared object that links it (plugins).
inline constexpr SiteInfo kUnwoundSite{"unwound", "", "", 0, SiteKind::value, 0, ""};

}  // namespace ringtrace::detail
