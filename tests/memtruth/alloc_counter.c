/* libmemtruth_counter.so: a counting LD_PRELOAD, the ground truth ringtrace's memory
 * recording is checked against (issue 42). A test helper written apart from ringtrace: it
 * includes nothing of ringtrace's and shares no code with runtime/memory.
 *
 * It defines malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc and every form of operator new and delete (by their mangled
 * names: this file is C, built with -fexceptions so that a bad_alloc passes through),
 * forwards each to the next definition (dlsym RTLD_NEXT; a static arena serves dlsym's
 * own allocations meanwhile) and counts, under one lock:
 *   - allocations and frees, with bytes: an allocation's size is the one asked (calloc
 *     n * size, pvalloc rounded up to pages); a free's is the size of its block, from
 *     this counter's own table of every live block it saw allocated;
 *   - by window (memtruth.h: a per-thread, named, nestable interval the test program
 *     marks) and outside every window ("-"), by thread within each, by caller (the
 *     return address, written as module+offset, resolved with dladdr when written);
 *   - at each snapshot: the blocks still live, by the window, thread and caller that
 *     allocated them.
 * One call counts once: a call made inside another (libstdc++'s operator new calling
 * malloc, its sized delete calling operator delete) is forwarded uncounted. A realloc is
 * the free of its old block and the allocation of its new one.
 *
 * MEMTRUTH_OUTPUT names the file ("%p": the process id), appended to at each snapshot
 * and at the exit (a destructor: not at _exit). A process writes it only once it has
 * opened a window (MEMTRUTH_EVERY_PROCESS=1: every process). What the counter could not
 * count exactly (a signal handler interrupting it, a full table) is written on the line
 * "errors": a reader must refuse a file whose errors are not all zero.
 *
 * A fork's child starts with zero counts and no window; the blocks it inherits are
 * known (a free of one counts as a free of a block from outside every window).
 *
 * This file: the entry points (the next definitions, the allocation functions, the
 * start); counter_tables.c: the tables and the windows; counter_file.c: the file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counter.h"

#define CALLER() ((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))

static __thread int t_resolving TLS_MODEL;
static __thread void* t_freeing TLS_MODEL; /* the block an outer operator delete is freeing */

/* ---------- The next definitions ---------- */

typedef struct {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
} NextC;
static NextC g_next;
static int g_state; /* 0 not looked up, 1 being looked up, 2 known */

/* dlsym's own allocations while it looks the next definitions up: never freed. */
static unsigned char g_arena[1 << 20] __attribute__((aligned(64)));
static size_t g_arena_used;

LOCAL int in_arena(const void* p) {
  return (const unsigned char*)p >= g_arena && (const unsigned char*)p < g_arena + sizeof g_arena;
}

LOCAL void* arena_alloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  size_t at = __atomic_load_n(&g_arena_used, __ATOMIC_RELAXED);
  for (;;) {
    size_t start = (at + 16 + align - 1) & ~(align - 1);
    size_t end = start + ((size + 15) & ~(size_t)15);
    if (align > 4096 || size > sizeof g_arena || end > sizeof g_arena) {
      errno = ENOMEM;
      return NULL;
    }
    if (__atomic_compare_exchange_n(&g_arena_used, &at, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      memcpy(g_arena + start - 16, &size, sizeof size);
      return g_arena + start;
    }
  }
}

/* 1 when the next definitions are known; 0 on the thread looking them up (dlsym's calls). */
LOCAL int resolve(void) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2) return 1;
  if (t_resolving) return 0;
  int expected = 0;
  if (__atomic_compare_exchange_n(&g_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    t_resolving = 1;
    NextC n;
    n.malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
    n.free = (void (*)(void*))dlsym(RTLD_NEXT, "free");
    n.calloc = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    n.realloc = (void* (*)(void*, size_t))dlsym(RTLD_NEXT, "realloc");
    n.reallocarray = (void* (*)(void*, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
    n.posix_memalign = (int (*)(void**, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    n.aligned_alloc = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    n.memalign = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    n.valloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "valloc");
    n.pvalloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    t_resolving = 0;
    if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.reallocarray || !n.posix_memalign || !n.aligned_alloc ||
        !n.memalign || !n.valloc || !n.pvalloc)
      fatal("no next allocator (a static program?)");
    g_next = n;
    __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
    return 1;
  }
  while (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) sched_yield();
  return 1;
}

/* ---------- The C allocation functions ---------- */

/* A call counts unless it runs inside the counter's own work (dlsym, writing its file) or
 * inside reallocarray's forwarded call (glibc's calls realloc): t_depth. (A signal
 * handler that allocates while its thread is inside reallocarray is forwarded uncounted
 * too: the test programs allocate in handlers only where the interrupted code does not
 * allocate. One that interrupts the counter inside its lock is counted in
 * errors.reentrant.) */
#define COUNTED() (t_depth == 0)

LOCAL void* allocated(void* p, size_t size, uintptr_t caller, int counted) {
  if (p && counted && lock()) {
    count_alloc(p, size, caller);
    unlock();
  }
  return p;
}

LOCAL void freeing(void* p, size_t sized, int counted) {
  if (counted && lock()) {
    count_free(p, sized);
    unlock();
  }
}

API void* malloc(size_t size) {
  if (!resolve()) return arena_alloc(size, 16);
  return allocated(g_next.malloc(size), size, CALLER(), COUNTED());
}

API void* calloc(size_t n, size_t size) {
  if (!resolve()) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) return NULL;
    return arena_alloc(bytes, 16); /* static: zeroed */
  }
  return allocated(g_next.calloc(n, size), n * size, CALLER(), COUNTED());
}

API void free(void* p) {
  if (!p || in_arena(p) || !resolve()) return;
  if (p != t_freeing) freeing(p, 0, COUNTED());
  g_next.free(p);
}

LOCAL void* realloc_arena(void* old, size_t size) {
  size_t had;
  memcpy(&had, (unsigned char*)old - 16, sizeof had);
  void* p = malloc(size);
  if (p) memcpy(p, old, had < size ? had : size);
  return p;
}

/* realloc and reallocarray: the free of the old block, then the allocation of the new one
 * (no old block: the allocation only; a size 0 that frees and returns NULL: the free
 * only; a failure: neither, the old block stays). The old block leaves the table before
 * the call (the allocator may hand its address to another thread at once) and goes back
 * when the call fails. */
LOCAL void* realloc_counted(void* old, size_t n, size_t size, int array, uintptr_t caller) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  int counted = COUNTED();
  Block b;
  int had = 0;
  if (old && counted && lock()) {
    had = block_remove((uintptr_t)old, &b);
    unlock();
  }
  void* p;
  if (array) {
    ++t_depth;
    p = g_next.reallocarray(old, n, size);
    --t_depth;
  } else {
    p = g_next.realloc(old, bytes);
  }
  if (counted && lock()) {
    int failed = p == NULL && bytes != 0;
    if (old && failed && had) block_insert(&b);
    if (old && !failed) count_free_block(had ? &b : NULL, 0);
    if (p) count_alloc(p, bytes, caller);
    count_realloc_result(failed);
    unlock();
  }
  return p;
}

API void* realloc(void* old, size_t size) {
  if (!resolve()) return old ? realloc_arena(old, size) : arena_alloc(size, 16);
  if (old && in_arena(old)) return realloc_arena(old, size);
  return realloc_counted(old, 1, size, 0, CALLER());
}

API void* reallocarray(void* old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  if (!resolve()) return old ? realloc_arena(old, bytes) : arena_alloc(bytes, 16);
  if (old && in_arena(old)) return realloc_arena(old, bytes);
  return realloc_counted(old, n, size, 1, CALLER());
}

API int posix_memalign(void** out, size_t align, size_t size) {
  if (!resolve()) {
    *out = arena_alloc(size, align);
    return *out ? 0 : ENOMEM;
  }
  int r = g_next.posix_memalign(out, align, size);
  if (r == 0) allocated(*out, size, CALLER(), COUNTED());
  return r;
}

API void* aligned_alloc(size_t align, size_t size) {
  if (!resolve()) return arena_alloc(size, align);
  return allocated(g_next.aligned_alloc(align, size), size, CALLER(), COUNTED());
}

API void* memalign(size_t align, size_t size) {
  if (!resolve()) return arena_alloc(size, align);
  return allocated(g_next.memalign(align, size), size, CALLER(), COUNTED());
}

API void* valloc(size_t size) {
  if (!resolve()) return arena_alloc(size, 4096);
  return allocated(g_next.valloc(size), size, CALLER(), COUNTED());
}

API void* pvalloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t rounded = (size + page - 1) & ~(page - 1);
  if (!resolve()) return arena_alloc(rounded, page);
  return allocated(g_next.pvalloc(size), rounded, CALLER(), COUNTED());
}

/* ---------- operator new and delete ---------- */

/* Each form forwards to the next definition of the same form (libstdc++'s), which calls
 * malloc or free (or another form) itself. Those inner calls come back here: the innermost
 * counts the block first, and the outermost form, when it gets that same block back,
 * takes it over (its size is the one asked of it, its caller its own caller). An inner
 * call that frees the block an outer delete is freeing is not counted again. So a block
 * counts once, as the program's call made it, and what libstdc++ allocates for itself
 * inside (a bad_alloc's exception object) counts as allocated there. */

LOCAL void* new_counted(void* p, size_t size, uintptr_t caller, int counted, uint64_t inserts_before) {
  if (!p || !counted || !lock()) return p;
  if (t_inserts != inserts_before && t_last_insert == (uintptr_t)p) {
    adopt(p, size, caller);
  } else {
    count_alloc(p, size, caller);
  }
  unlock();
  return p;
}

LOCAL void* look_up_cxx(void** slot, const char* name) {
  void* f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f) return f;
  ++t_depth; /* dlsym's own allocations: the counter's */
  f = dlsym(RTLD_NEXT, name);
  --t_depth;
  if (!f) fatal("no next definition of an operator new or delete (no libstdc++?)");
  __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  return f;
}

#define NEW_FORM(symbol, params, args)                                      \
  static void* next_##symbol;                                               \
  API void* symbol params {                                                 \
    typedef void*(*fn_t)params;                                             \
    resolve();                                                              \
    fn_t next_fn = (fn_t)look_up_cxx(&next_##symbol, #symbol);              \
    int counted = COUNTED();                                                \
    uint64_t before = t_inserts;                                            \
    void* p = next_fn args; /* a bad_alloc passes through (-fexceptions) */ \
    return new_counted(p, size, CALLER(), counted, before);                 \
  }

#define DELETE_FORM(symbol, params, args, sized)               \
  static void* next_##symbol;                                  \
  API void symbol params {                                     \
    typedef void(*fn_t) params;                                \
    if (!p || in_arena(p)) return;                             \
    resolve();                                                 \
    fn_t next_fn = (fn_t)look_up_cxx(&next_##symbol, #symbol); \
    void* outer = t_freeing;                                   \
    if (p != outer) freeing(p, sized, COUNTED());              \
    t_freeing = p;                                             \
    next_fn args;                                              \
    t_freeing = outer;                                         \
  }

typedef struct nothrow_t nothrow_t;
typedef size_t align_val_t;

NEW_FORM(_Znwm, (size_t size), (size))
NEW_FORM(_Znam, (size_t size), (size))
NEW_FORM(_ZnwmRKSt9nothrow_t, (size_t size, const nothrow_t* nt), (size, nt))
NEW_FORM(_ZnamRKSt9nothrow_t, (size_t size, const nothrow_t* nt), (size, nt))
NEW_FORM(_ZnwmSt11align_val_t, (size_t size, align_val_t al), (size, al))
NEW_FORM(_ZnamSt11align_val_t, (size_t size, align_val_t al), (size, al))
NEW_FORM(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t size, align_val_t al, const nothrow_t* nt), (size, al, nt))
NEW_FORM(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t size, align_val_t al, const nothrow_t* nt), (size, al, nt))

DELETE_FORM(_ZdlPv, (void* p), (p), 0)
DELETE_FORM(_ZdaPv, (void* p), (p), 0)
DELETE_FORM(_ZdlPvm, (void* p, size_t size), (p, size), size)
DELETE_FORM(_ZdaPvm, (void* p, size_t size), (p, size), size)
DELETE_FORM(_ZdlPvRKSt9nothrow_t, (void* p, const nothrow_t* nt), (p, nt), 0)
DELETE_FORM(_ZdaPvRKSt9nothrow_t, (void* p, const nothrow_t* nt), (p, nt), 0)
DELETE_FORM(_ZdlPvSt11align_val_t, (void* p, align_val_t al), (p, al), 0)
DELETE_FORM(_ZdaPvSt11align_val_t, (void* p, align_val_t al), (p, al), 0)
DELETE_FORM(_ZdlPvmSt11align_val_t, (void* p, size_t size, align_val_t al), (p, size, al), size)
DELETE_FORM(_ZdaPvmSt11align_val_t, (void* p, size_t size, align_val_t al), (p, size, al), size)
DELETE_FORM(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void* p, align_val_t al, const nothrow_t* nt), (p, al, nt), 0)
DELETE_FORM(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void* p, align_val_t al, const nothrow_t* nt), (p, al, nt), 0)

/* The forms' next definitions, looked up at the start when libstdc++ is loaded (dlsym's
 * own allocations then happen outside every window). */
LOCAL void look_up_every_cxx_form(void) {
  void** slots[] = {&next__Znwm,
                    &next__Znam,
                    &next__ZnwmRKSt9nothrow_t,
                    &next__ZnamRKSt9nothrow_t,
                    &next__ZnwmSt11align_val_t,
                    &next__ZnamSt11align_val_t,
                    &next__ZnwmSt11align_val_tRKSt9nothrow_t,
                    &next__ZnamSt11align_val_tRKSt9nothrow_t,
                    &next__ZdlPv,
                    &next__ZdaPv,
                    &next__ZdlPvm,
                    &next__ZdaPvm,
                    &next__ZdlPvRKSt9nothrow_t,
                    &next__ZdaPvRKSt9nothrow_t,
                    &next__ZdlPvSt11align_val_t,
                    &next__ZdaPvSt11align_val_t,
                    &next__ZdlPvmSt11align_val_t,
                    &next__ZdaPvmSt11align_val_t,
                    &next__ZdlPvSt11align_val_tRKSt9nothrow_t,
                    &next__ZdaPvSt11align_val_tRKSt9nothrow_t};
  const char* names[] = {"_Znwm",
                         "_Znam",
                         "_ZnwmRKSt9nothrow_t",
                         "_ZnamRKSt9nothrow_t",
                         "_ZnwmSt11align_val_t",
                         "_ZnamSt11align_val_t",
                         "_ZnwmSt11align_val_tRKSt9nothrow_t",
                         "_ZnamSt11align_val_tRKSt9nothrow_t",
                         "_ZdlPv",
                         "_ZdaPv",
                         "_ZdlPvm",
                         "_ZdaPvm",
                         "_ZdlPvRKSt9nothrow_t",
                         "_ZdaPvRKSt9nothrow_t",
                         "_ZdlPvSt11align_val_t",
                         "_ZdaPvSt11align_val_t",
                         "_ZdlPvmSt11align_val_t",
                         "_ZdaPvmSt11align_val_t",
                         "_ZdlPvSt11align_val_tRKSt9nothrow_t",
                         "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
  /* A failed dlsym allocates its error's text (_dlerror_run): the counter's, not the
   * program's, uncounted as dlsym's other allocations are. */
  ++t_depth;
  void* new_form = dlsym(RTLD_NEXT, "_Znwm");
  --t_depth;
  if (!new_form) return; /* no libstdc++ (yet): looked up at the first call */
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; ++i) look_up_cxx(slots[i], names[i]);
}

API void memtruth_counter_snapshot(const char* label) { snapshot(label); }

/* ---------- Start, fork, exit ---------- */

static void before_fork(void) {
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void after_fork_parent(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

static void after_fork_child(void) {
  reset_after_fork();
  t_freeing = NULL;
  __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void start(void) {
  resolve();
  look_up_every_cxx_form();
  const char* every = getenv("MEMTRUTH_EVERY_PROCESS");
  set_output(getenv("MEMTRUTH_OUTPUT"), every && every[0] == '1');
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((destructor)) static void finish(void) { snapshot("exit"); }
