// The runtime's own allocations (rings, batches, interned names) go through mimalloc's
// explicit API. Debian's libmimalloc.so also exports malloc/free; linking it would
// replace the host program's allocator, so it is loaded with dlopen(RTLD_LOCAL)
// instead, which keeps its symbols out of the global scope. Without it (library not
// installed at run time) the system allocator is used and stats say so.
#pragma once

#include <cstddef>

namespace ringtrace::detail {

void* runtime_alloc(std::size_t bytes, std::size_t alignment = alignof(std::max_align_t));
void runtime_free(void* p) noexcept;
const char* runtime_allocator_name() noexcept;  // "mimalloc" or "system"

}  // namespace ringtrace::detail
