// The allocation functions of ringtrace::memory (Config::memory, docs/memory.md): the C
// allocator's entry points and every form of operator new and delete, each forwarded to
// the program's own allocator (the next definition of malloc and friends: glibc's, or
// jemalloc's, tcmalloc's, mimalloc's when the program loads one) and recorded on the
// calling thread's ring (include/ringtrace/detail/memory.hpp).
//
// Linked into a program (CMake ringtrace::memory, pkg-config ringtrace-memory) or
// preloaded with the whole runtime (libringtrace_preload.so, `ringtrace record --memory`).
//
// Order of record and call: a free is recorded before the block goes back to the
// allocator, an allocation after it came out, so that a block another thread gets at
// the same address next is stamped after this one's free. realloc records the free of
// the old block first, then the new block (the same address when it grew in place); a
// realloc that fails leaves its old block, and a record restores it. Every allocation
// carries its caller (RINGTRACE_CALLER, taken where the program entered).
//
// Before the next definitions are known (the dynamic loader's bootstrap: dlsym itself
// may allocate), allocations come from a static arena of this file's and are not
// recorded; their frees are ignored.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "ringtrace/detail/memory.hpp"

#define RINGTRACE_ALLOC_API extern "C" __attribute__((visibility("default"), no_instrument_function))
#define RINGTRACE_NEW_API __attribute__((visibility("default"), no_instrument_function))

namespace {

using ringtrace::detail::memory_allocated;
using ringtrace::detail::memory_freed;
using ringtrace::detail::memory_restored;

// The return address into the code that called the allocation function (its caller, as
// heaptrack's first frame): read where the function is entered from the program, and
// handed down to where the record is written.
#define RINGTRACE_CALLER __builtin_return_address(0)

struct Next {
  void* (*malloc)(std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  void* (*calloc)(std::size_t, std::size_t) = nullptr;
  void* (*realloc)(void*, std::size_t) = nullptr;
  void* (*memalign)(std::size_t, std::size_t) = nullptr;
  int (*posix_memalign)(void**, std::size_t, std::size_t) = nullptr;
  void* (*aligned_alloc)(std::size_t, std::size_t) = nullptr;
  void* (*valloc)(std::size_t) = nullptr;
  void* (*pvalloc)(std::size_t) = nullptr;
  // mimalloc's own API, when the program has mimalloc (else null: the C functions serve).
  void* (*mi_malloc)(std::size_t) = nullptr;
  void* (*mi_zalloc)(std::size_t) = nullptr;
  void* (*mi_calloc)(std::size_t, std::size_t) = nullptr;
  void* (*mi_realloc)(void*, std::size_t) = nullptr;
  void* (*mi_malloc_aligned)(std::size_t, std::size_t) = nullptr;
  void* (*mi_zalloc_aligned)(std::size_t, std::size_t) = nullptr;
  void* (*mi_realloc_aligned)(void*, std::size_t, std::size_t) = nullptr;
  void (*mi_free)(void*) = nullptr;
};
constinit Next g_next{};
// 0: not looked up; 1: being looked up (calls meanwhile, dlsym's own included, take the
// arena); 2: known.
constinit std::atomic<int> g_state{0};

// The bootstrap arena: 16-byte aligned blocks, each after a 16-byte header holding its
// size, never reused.
alignas(64) constinit unsigned char g_arena[256 * 1024]{};
constinit std::atomic<std::size_t> g_arena_used{0};

bool in_arena(const void* p) {
  const auto* c = static_cast<const unsigned char*>(p);
  return c >= g_arena && c < g_arena + sizeof g_arena;
}

void* arena_alloc(std::size_t size, std::size_t align = 16) {
  if (align < 16) align = 16;
  if (size > sizeof g_arena || align > 4096) return nullptr;
  std::size_t at = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    const std::size_t start = (at + 16 + align - 1) & ~(align - 1);  // a 16-byte header below it
    const std::size_t end = start + ((size + 15) & ~std::size_t{15});
    if (end > sizeof g_arena) {
      errno = ENOMEM;
      return nullptr;
    }
    if (g_arena_used.compare_exchange_weak(at, end, std::memory_order_relaxed)) {
      std::memcpy(g_arena + start - 16, &size, sizeof size);
      return g_arena + start;
    }
  }
}

std::size_t arena_size(const void* p) {
  std::size_t size = 0;
  std::memcpy(&size, static_cast<const unsigned char*>(p) - 16, sizeof size);
  return size;
}

// A sanitizer linked statically into the program (clang's AddressSanitizer) defines the
// allocation functions in the program itself, as weak aliases of its interceptors, which
// these functions replace: its allocator is then reached through the interceptors' own
// names (there is no next definition of it). Otherwise the next definition after this
// object (a shared libasan or libtsan, a malloc library, glibc).
const char* g_prefix = "";

template <class F>
void look_up(F& f, const char* name) {
  char full[64] = {};
  const std::size_t prefix = std::strlen(g_prefix);
  std::memcpy(full, g_prefix, prefix);
  std::memcpy(full + prefix, name, std::strlen(name));
  f = reinterpret_cast<F>(::dlsym(*g_prefix != '\0' ? RTLD_DEFAULT : RTLD_NEXT, full));
}

// Another copy of these functions later in symbol order (a program that links
// ringtrace::memory run under `ringtrace record --memory`, which preloads them too: the
// program's own come first) would record every call a second time: its next
// definitions, when the next malloc is that copy's, so that this copy forwards past it
// and each allocation is recorded once, by the first copy. The name is versioned: a
// copy whose Next differs answers to another.
const Next* next_of_another_copy(void* next_malloc) {
  if (*g_prefix != '\0' || next_malloc == nullptr) return nullptr;
  void* const other = ::dlsym(RTLD_NEXT, "ringtrace_memory_next_v2");
  if (other == nullptr) return nullptr;
  Dl_info mine{}, theirs{};
  if (::dladdr(next_malloc, &mine) == 0 || ::dladdr(other, &theirs) == 0 || mine.dli_fbase != theirs.dli_fbase)
    return nullptr;  // another allocator sits between (a preloaded malloc library): it comes next
  return static_cast<const Next*>(reinterpret_cast<const void* (*)()>(other)());
}

// The look-up of the next definitions, once (next_known's cold side).
__attribute__((noinline, cold)) bool look_up_next() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == 2) return true;
  if (state == 0 && g_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
    for (const char* prefix : {"__interceptor_", "___interceptor_"}) {
      char full[32] = {};
      std::memcpy(full, prefix, std::strlen(prefix));
      std::memcpy(full + std::strlen(prefix), "malloc", 6);
      if (::dlsym(RTLD_DEFAULT, full) != nullptr) {
        g_prefix = prefix;
        break;
      }
    }
    Next n;
    look_up(n.malloc, "malloc");
    look_up(n.free, "free");
    look_up(n.calloc, "calloc");
    look_up(n.realloc, "realloc");
    look_up(n.memalign, "memalign");
    look_up(n.posix_memalign, "posix_memalign");
    look_up(n.aligned_alloc, "aligned_alloc");
    look_up(n.valloc, "valloc");
    look_up(n.pvalloc, "pvalloc");
    // mimalloc's names: never a sanitizer's; looked up here, while a failed look-up's own
    // allocations (dlerror's text) take the arena and are not recorded as the program's.
    const auto mi = [](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(RTLD_NEXT, name));
    };
    mi(n.mi_malloc, "mi_malloc");
    mi(n.mi_zalloc, "mi_zalloc");
    mi(n.mi_calloc, "mi_calloc");
    mi(n.mi_realloc, "mi_realloc");
    mi(n.mi_malloc_aligned, "mi_malloc_aligned");
    mi(n.mi_zalloc_aligned, "mi_zalloc_aligned");
    mi(n.mi_realloc_aligned, "mi_realloc_aligned");
    mi(n.mi_free, "mi_free");
    if (const Next* past = next_of_another_copy(reinterpret_cast<void*>(n.malloc))) n = *past;
    if (n.malloc == nullptr || n.free == nullptr || n.calloc == nullptr || n.realloc == nullptr ||
        n.memalign == nullptr) {
      static const char kNone[] = "ringtrace::memory: no allocator after it (a static program?); aborting\n";
      [[maybe_unused]] const auto w = ::write(2, kNone, sizeof kNone - 1);
      ::abort();
    }
    g_next = n;
    g_state.store(2, std::memory_order_release);
    return true;
  }
  return g_state.load(std::memory_order_acquire) == 2;
}

// The next definitions, or false while they are being looked up (or are missing: a
// static program has none). Inline: one load and a compare on every call.
inline __attribute__((always_inline)) bool next_known() {
  if (g_state.load(std::memory_order_acquire) == 2) [[likely]]
    return true;
  return look_up_next();
}

inline __attribute__((always_inline)) void* allocated(void* p, std::size_t size, const void* caller) {
  if (p != nullptr) memory_allocated(p, size, caller);
  return p;
}

void* aligned(std::size_t align, std::size_t size, const void* caller) {
  if (!next_known()) return arena_alloc(size, align);
  return allocated(g_next.memalign(align, size), size, caller);
}

inline __attribute__((always_inline)) void release(void* p, std::size_t size) {
  if (p == nullptr || in_arena(p)) return;
  memory_freed(p, size);
  if (next_known()) g_next.free(p);
}

inline __attribute__((always_inline)) void* allocate(std::size_t size, const void* caller) {
  if (!next_known()) return arena_alloc(size);
  return allocated(g_next.malloc(size), size, caller);
}

// realloc: the free of the old block is recorded before the call (another thread may get
// its address as soon as the C library lets it go), the new block after it. A realloc
// that fails leaves the old block where it was: a record restores it (the heap's
// accounting puts back the block this thread freed last). realloc(p, 0) frees p (glibc).
// What a realloc returned (q), its old block p already recorded freed: a failure leaves p
// where it was, and a record restores it.
void* reallocated(void* p, void* q, std::size_t size, const void* caller) {
  if (q == nullptr) {
    const int saved = errno;
    if (p != nullptr && size != 0) memory_restored(p);
    errno = saved;
    return nullptr;
  }
  return allocated(q, size, caller);
}

void* reallocate(void* p, std::size_t size, const void* caller) {
  if (p == nullptr) return allocate(size, caller);
  if (in_arena(p) || !next_known()) {  // a bootstrap block moves out of the arena
    void* q = next_known() ? allocate(size, caller) : arena_alloc(size);
    if (q != nullptr && in_arena(p)) {
      const std::size_t old = arena_size(p);
      std::memcpy(q, p, old < size ? old : size);
    }
    return q;
  }
  memory_freed(p, 0);
  return reallocated(p, g_next.realloc(p, size), size, caller);
}

// calloc, with the caller where the program entered (calloc's, or a mimalloc name's).
void* zeroed(std::size_t n, std::size_t size, const void* caller) {
  if (!next_known()) {
    if (size != 0 && n > SIZE_MAX / size) return nullptr;
    return arena_alloc(n * size);  // static storage: zero already
  }
  void* p = g_next.calloc(n, size);
  return p != nullptr ? allocated(p, n * size, caller) : nullptr;
}

// operator new's contract: loop on the new handler, throw bad_alloc when there is none.
void* new_block(std::size_t size, std::size_t align, const void* caller) {
  if (size == 0) size = 1;
  for (;;) {
    void* p = nullptr;
    if (align <= alignof(std::max_align_t)) {
      p = allocate(size, caller);
    } else if (next_known()) {
      p = allocated(g_next.memalign(align, size), size, caller);
    } else {
      p = arena_alloc(size, align);
    }
    if (p != nullptr) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* new_nothrow(std::size_t size, std::size_t align, const void* caller) noexcept {
  try {
    return new_block(size, align, caller);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

// Named on the link line (`-u ringtrace_memory_functions`, CMake's and the .pc's): takes
// this object from the archive whatever else defines malloc (a statically linked
// sanitizer's weak definitions, which these replace).
RINGTRACE_ALLOC_API void ringtrace_memory_functions() noexcept {}

// The definitions this copy forwards to, for a copy earlier in symbol order
// (next_of_another_copy); nullptr while they are not known yet.
RINGTRACE_ALLOC_API const void* ringtrace_memory_next_v2() noexcept { return next_known() ? &g_next : nullptr; }

RINGTRACE_ALLOC_API void* malloc(std::size_t size) noexcept { return allocate(size, RINGTRACE_CALLER); }

RINGTRACE_ALLOC_API void free(void* p) noexcept { release(p, 0); }

RINGTRACE_ALLOC_API void* calloc(std::size_t n, std::size_t size) noexcept { return zeroed(n, size, RINGTRACE_CALLER); }

RINGTRACE_ALLOC_API void* realloc(void* p, std::size_t size) noexcept { return reallocate(p, size, RINGTRACE_CALLER); }

RINGTRACE_ALLOC_API void* reallocarray(void* p, std::size_t n, std::size_t size) noexcept {
  if (size != 0 && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return reallocate(p, n * size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API int posix_memalign(void** out, std::size_t align, std::size_t size) noexcept {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  if (!next_known()) {
    void* p = arena_alloc(size, align);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
  }
  const int err = g_next.posix_memalign != nullptr ? g_next.posix_memalign(out, align, size)
                                                   : ((*out = g_next.memalign(align, size)) != nullptr ? 0 : ENOMEM);
  if (err == 0) allocated(*out, size, RINGTRACE_CALLER);
  return err;
}

RINGTRACE_ALLOC_API void* aligned_alloc(std::size_t align, std::size_t size) noexcept {
  if (!next_known()) return arena_alloc(size, align);
  void* p = g_next.aligned_alloc != nullptr ? g_next.aligned_alloc(align, size) : g_next.memalign(align, size);
  return allocated(p, size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* memalign(std::size_t align, std::size_t size) noexcept {
  return aligned(align, size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* valloc(std::size_t size) noexcept {
  if (!next_known()) return arena_alloc(size, 4096);
  void* p = g_next.valloc != nullptr ? g_next.valloc(size) : g_next.memalign(4096, size);
  return allocated(p, size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* pvalloc(std::size_t size) noexcept {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t rounded = size == 0 ? page : (size + page - 1) & ~(page - 1);
  if (!next_known()) return arena_alloc(rounded, page);
  void* p = g_next.pvalloc != nullptr ? g_next.pvalloc(size) : g_next.memalign(page, rounded);
  return allocated(p, rounded, RINGTRACE_CALLER);
}

// --- operator new and delete: the plain forms through the next malloc, the aligned forms
// through the next memalign, each recorded once with its caller. Sized deletes record the
// size their caller knows.

RINGTRACE_NEW_API void* operator new(std::size_t size) { return new_block(size, 0, RINGTRACE_CALLER); }
RINGTRACE_NEW_API void* operator new[](std::size_t size) { return new_block(size, 0, RINGTRACE_CALLER); }
RINGTRACE_NEW_API void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return new_nothrow(size, 0, RINGTRACE_CALLER);
}
RINGTRACE_NEW_API void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return new_nothrow(size, 0, RINGTRACE_CALLER);
}
RINGTRACE_NEW_API void* operator new(std::size_t size, std::align_val_t align) {
  return new_block(size, static_cast<std::size_t>(align), RINGTRACE_CALLER);
}
RINGTRACE_NEW_API void* operator new[](std::size_t size, std::align_val_t align) {
  return new_block(size, static_cast<std::size_t>(align), RINGTRACE_CALLER);
}
RINGTRACE_NEW_API void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return new_nothrow(size, static_cast<std::size_t>(align), RINGTRACE_CALLER);
}
RINGTRACE_NEW_API void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return new_nothrow(size, static_cast<std::size_t>(align), RINGTRACE_CALLER);
}

RINGTRACE_NEW_API void operator delete(void* p) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete[](void* p) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete(void* p, std::size_t size) noexcept { release(p, size); }
RINGTRACE_NEW_API void operator delete[](void* p, std::size_t size) noexcept { release(p, size); }
RINGTRACE_NEW_API void operator delete(void* p, const std::nothrow_t&) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete(void* p, std::align_val_t) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete[](void* p, std::align_val_t) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete(void* p, std::size_t size, std::align_val_t) noexcept { release(p, size); }
RINGTRACE_NEW_API void operator delete[](void* p, std::size_t size, std::align_val_t) noexcept { release(p, size); }
RINGTRACE_NEW_API void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p, 0); }
RINGTRACE_NEW_API void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p, 0); }

// --- mimalloc's own API (mi_malloc, mi_free, ...): a program that links mimalloc may
// allocate with one API and free with the other. Each is recorded as the C functions are
// and forwarded to the next definition (mimalloc's, looked up with the C functions'); a
// program without mimalloc that calls them anyway (through a symbol it looked up) gets
// the C functions.

namespace {

void mi_release(void* p, std::size_t size) {
  if (p == nullptr) return;
  if (!next_known() || g_next.mi_free == nullptr || in_arena(p)) {
    release(p, size);
    return;
  }
  memory_freed(p, size);
  g_next.mi_free(p);
}

void* mi_reallocate(void* p, std::size_t size, std::size_t align, const void* caller) {
  const bool have = next_known() && (align == 0 ? g_next.mi_realloc != nullptr : g_next.mi_realloc_aligned != nullptr);
  if (!have || in_arena(p)) return reallocate(p, size, caller);
  if (p != nullptr) memory_freed(p, 0);
  void* q = align == 0 ? g_next.mi_realloc(p, size) : g_next.mi_realloc_aligned(p, size, align);
  return reallocated(p, q, size, caller);
}

}  // namespace

RINGTRACE_ALLOC_API void* mi_malloc(std::size_t size) noexcept {
  if (!next_known() || g_next.mi_malloc == nullptr) return allocate(size, RINGTRACE_CALLER);
  return allocated(g_next.mi_malloc(size), size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* mi_zalloc(std::size_t size) noexcept {
  if (!next_known() || g_next.mi_zalloc == nullptr) return zeroed(1, size, RINGTRACE_CALLER);
  return allocated(g_next.mi_zalloc(size), size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* mi_calloc(std::size_t n, std::size_t size) noexcept {
  if (!next_known() || g_next.mi_calloc == nullptr) return zeroed(n, size, RINGTRACE_CALLER);
  void* p = g_next.mi_calloc(n, size);
  return p != nullptr ? allocated(p, n * size, RINGTRACE_CALLER) : nullptr;
}

RINGTRACE_ALLOC_API void* mi_realloc(void* p, std::size_t size) noexcept {
  return mi_reallocate(p, size, 0, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* mi_malloc_aligned(std::size_t size, std::size_t align) noexcept {
  if (!next_known() || g_next.mi_malloc_aligned == nullptr) return aligned(align, size, RINGTRACE_CALLER);
  return allocated(g_next.mi_malloc_aligned(size, align), size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* mi_zalloc_aligned(std::size_t size, std::size_t align) noexcept {
  if (!next_known() || g_next.mi_zalloc_aligned == nullptr) {
    void* p = aligned(align, size, RINGTRACE_CALLER);
    if (p != nullptr) std::memset(p, 0, size);
    return p;
  }
  return allocated(g_next.mi_zalloc_aligned(size, align), size, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void* mi_realloc_aligned(void* p, std::size_t size, std::size_t align) noexcept {
  return mi_reallocate(p, size, align == 0 ? 1 : align, RINGTRACE_CALLER);
}

RINGTRACE_ALLOC_API void mi_free(void* p) noexcept { mi_release(p, 0); }
RINGTRACE_ALLOC_API void mi_free_size(void* p, std::size_t size) noexcept { mi_release(p, size); }
RINGTRACE_ALLOC_API void mi_free_aligned(void* p, std::size_t) noexcept { mi_release(p, 0); }
RINGTRACE_ALLOC_API void mi_free_size_aligned(void* p, std::size_t size, std::size_t) noexcept { mi_release(p, size); }
