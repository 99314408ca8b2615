#include "allocator.hpp"

#include <dlfcn.h>
#include <mimalloc.h>  // signatures only: the library itself is loaded with dlopen

#include <cstdlib>
#include <new>

// The C library's own allocator, under the names no program replaces: without mimalloc,
// ringtrace's memory still never goes through the program's malloc (which
// ringtrace::memory records, or which a program may have replaced).
extern "C" void* __libc_memalign(std::size_t alignment, std::size_t bytes);
extern "C" void __libc_free(void* p);

#if defined(__SANITIZE_THREAD__)
#define RINGTRACE_ALLOC_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRACE_ALLOC_UNDER_TSAN 1
#endif
#endif
#ifndef RINGTRACE_ALLOC_UNDER_TSAN
#define RINGTRACE_ALLOC_UNDER_TSAN 0
#endif

namespace ringtrace::detail {
namespace {

// Under ThreadSanitizer, ringtrace's memory comes from the sanitizer's allocator: it
// cannot see mimalloc's (uninstrumented) reuse of a block freed on another thread, and
// reports the next owner's writes as races. ringtrace::memory does not run under it
// (docs/memory.md), so the program's allocations are never recorded there anyway.
constexpr bool kSanitizerAllocator = RINGTRACE_ALLOC_UNDER_TSAN != 0;

using AlignedAlloc = decltype(&mi_malloc_aligned);
using Free = decltype(&mi_free);

struct Mimalloc {
  AlignedAlloc malloc_aligned = nullptr;
  Free free = nullptr;

  Mimalloc() {
    // RTLD_LOCAL: mimalloc's malloc/free must not interpose on the host program's.
    void* lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    auto a = reinterpret_cast<AlignedAlloc>(dlsym(lib, "mi_malloc_aligned"));
    auto f = reinterpret_cast<Free>(dlsym(lib, "mi_free"));
    if (a != nullptr && f != nullptr) {
      malloc_aligned = a;
      free = f;
    }
  }
};

const Mimalloc& mimalloc() {
  static const Mimalloc instance;  // loaded once, on the first (cold) allocation
  return instance;
}

}  // namespace

void* runtime_alloc(std::size_t bytes, std::size_t alignment) {
  if (bytes == 0) bytes = 1;
  if constexpr (kSanitizerAllocator) {
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    void* p = nullptr;
    if (::posix_memalign(&p, alignment, bytes) != 0) throw std::bad_alloc();
    return p;
  }
  const Mimalloc& mi = mimalloc();
  void* p = nullptr;
  if (mi.malloc_aligned != nullptr) {
    p = mi.malloc_aligned(bytes, alignment);
  } else {
    p = __libc_memalign(alignment, bytes);
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void runtime_free(void* p) noexcept {
  if (p == nullptr) return;
  if constexpr (kSanitizerAllocator) {
    std::free(p);
    return;
  }
  const Mimalloc& mi = mimalloc();
  if (mi.free != nullptr) {
    mi.free(p);
  } else {
    __libc_free(p);
  }
}

const char* runtime_allocator_name() noexcept {
  if constexpr (kSanitizerAllocator) return "system";
  return mimalloc().malloc_aligned != nullptr ? "mimalloc" : "system";
}

}  // namespace ringtrace::detail
