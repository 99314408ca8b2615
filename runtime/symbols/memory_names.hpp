// The names of a recording's allocation sites and sampled stacks (MemoryStats::sites,
// stacks, leaks): the live drainer's at stop, the file reader's from the file's modules.
#pragma once

#include "ringtrace/stats.hpp"
#include "symbolizer.hpp"

namespace ringtrace::symbols {

// Names every site (function, "file:line", module), every frame of every stack, and each
// leak row's site, each return address as the call before it (Symbolizer::resolve_call).
void name_memory(MemoryStats& memory, Symbolizer& symbolizer);

}  // namespace ringtrace::symbols
