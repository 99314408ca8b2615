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
 * known (a free of one counts as a free of a block from outside every window). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define API __attribute__((visibility("default"), no_instrument_function))
#define LOCAL static __attribute__((no_instrument_function))
#define TLS static __thread __attribute__((tls_model("initial-exec")))
#define CALLER() ((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))

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
TLS int t_resolving;

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

LOCAL void fatal(const char* text) {
  (void)!write(2, "memtruth: ", 10);
  (void)!write(2, text, strlen(text));
  (void)!write(2, "\n", 1);
  abort();
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

/* ---------- State: one lock over everything ---------- */

#define MAX_WINDOWS 256
#define MAX_NEST 16
#define MAX_THREADS 4096
#define MAX_NAME 64

typedef struct {
  uint64_t allocs, alloc_bytes, frees, free_bytes;
  uint64_t foreign_frees, foreign_free_bytes; /* blocks allocated outside every window */
  uint64_t unknown_frees;                     /* blocks this counter never saw allocated */
  uint64_t reallocs, failed_reallocs;
  uint64_t live_blocks, live_bytes; /* at the snapshot, by the allocating window */
} Counts;

typedef struct {
  uintptr_t addr; /* 0: empty */
  uint64_t size;
  uintptr_t caller;
  uint32_t thread;
  uint16_t window;
  uint16_t unused;
} Block;

typedef struct {
  uint64_t key; /* thread << 16 | window, + 1 (0: empty) */
  Counts counts;
} ThreadWindow;

typedef struct {
  uintptr_t caller; /* 0: empty */
  uint32_t window;
  uint64_t allocs, bytes, live_blocks, live_bytes;
} Caller;

typedef struct {
  uint64_t reentrant, stale, threads_full, callers_full, thread_windows_full, windows_full, nest_too_deep,
      unbalanced_ends, sized_mismatch;
} Errors;

static int g_lock;
TLS int t_locked;
static Errors g_errors;
static uint64_t g_reentrant; /* atomic: counted without the lock */

static char g_window_names[MAX_WINDOWS][MAX_NAME] = {"-"};
static uint32_t g_window_count = 1;
static Counts g_windows[MAX_WINDOWS];

static pid_t g_thread_tids[MAX_THREADS];
static uint32_t g_thread_count = 1; /* 0: not assigned */
TLS uint32_t t_thread;
TLS uint16_t t_stack[MAX_NEST];
TLS int t_top;
TLS int t_depth;             /* inside the counter's own calls (dlsym, its file) or reallocarray's: uncounted */
TLS uint64_t t_inserts;      /* blocks this thread's calls counted */
TLS uintptr_t t_last_insert; /* the last of them */
TLS void* t_freeing;         /* the block an outer operator delete is freeing */

static Block* g_blocks;
static size_t g_block_capacity, g_block_count;
#define TW_CAPACITY (1u << 15)
static ThreadWindow* g_thread_windows;
#define CALLER_CAPACITY (1u << 16)
static Caller* g_callers;

static int g_opened_window;
static char g_output[PATH_MAX];
static int g_every_process;

LOCAL void* map(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fatal("mmap failed");
  return p;
}

LOCAL int lock(void) {
  if (t_locked) { /* a signal handler inside the counter on this thread: cannot count */
    __atomic_add_fetch(&g_reentrant, 1, __ATOMIC_RELAXED);
    return 0;
  }
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
  t_locked = 1;
  if (!g_blocks) {
    g_block_capacity = 1u << 16;
    g_blocks = map(g_block_capacity * sizeof(Block));
    g_thread_windows = map(TW_CAPACITY * sizeof(ThreadWindow));
    g_callers = map(CALLER_CAPACITY * sizeof(Caller));
  }
  return 1;
}

LOCAL void unlock(void) {
  t_locked = 0;
  __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

LOCAL uint64_t hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

/* --- The block table: open addressing, linear probing, deletion by backward shift --- */

LOCAL Block* block_slot(uintptr_t addr) {
  size_t mask = g_block_capacity - 1;
  for (size_t i = hash(addr) & mask;; i = (i + 1) & mask) {
    if (g_blocks[i].addr == addr || g_blocks[i].addr == 0) return &g_blocks[i];
  }
}

LOCAL void block_grow(void) {
  Block* old = g_blocks;
  size_t old_capacity = g_block_capacity;
  g_block_capacity *= 2;
  g_blocks = map(g_block_capacity * sizeof(Block));
  for (size_t i = 0; i < old_capacity; ++i) {
    if (old[i].addr != 0) *block_slot(old[i].addr) = old[i];
  }
  munmap(old, old_capacity * sizeof(Block));
}

LOCAL void block_insert(const Block* b) {
  if ((g_block_count + 1) * 2 > g_block_capacity) block_grow();
  Block* slot = block_slot(b->addr);
  if (slot->addr != 0) {
    ++g_errors.stale; /* a free this counter did not see */
  } else {
    ++g_block_count;
  }
  *slot = *b;
}

/* Takes the block out of the table; 0 when it is not there. */
LOCAL int block_remove(uintptr_t addr, Block* out) {
  Block* slot = block_slot(addr);
  if (slot->addr == 0) return 0;
  *out = *slot;
  size_t mask = g_block_capacity - 1;
  size_t hole = (size_t)(slot - g_blocks);
  for (size_t i = (hole + 1) & mask; g_blocks[i].addr != 0; i = (i + 1) & mask) {
    size_t home = hash(g_blocks[i].addr) & mask;
    /* Moves back into the hole unless its home lies cyclically in (hole, i]. */
    int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!stays) {
      g_blocks[hole] = g_blocks[i];
      hole = i;
    }
  }
  g_blocks[hole].addr = 0;
  --g_block_count;
  return 1;
}

/* --- Threads, windows, their counts --- */

LOCAL uint32_t this_thread(void) {
  if (t_thread == 0) {
    if (g_thread_count < MAX_THREADS) {
      t_thread = g_thread_count++;
      g_thread_tids[t_thread] = (pid_t)syscall(SYS_gettid);
    } else {
      ++g_errors.threads_full;
      return 0;
    }
  }
  return t_thread;
}

LOCAL uint16_t this_window(void) { return t_top > 0 ? t_stack[t_top - 1] : 0; }

LOCAL Counts* thread_window(uint32_t thread, uint16_t window) {
  uint64_t key = ((uint64_t)thread << 16 | window) + 1;
  for (uint32_t i = (uint32_t)hash(key) & (TW_CAPACITY - 1), n = 0; n < TW_CAPACITY;
       i = (i + 1) & (TW_CAPACITY - 1), ++n) {
    if (g_thread_windows[i].key == key) return &g_thread_windows[i].counts;
    if (g_thread_windows[i].key == 0) {
      g_thread_windows[i].key = key;
      return &g_thread_windows[i].counts;
    }
  }
  ++g_errors.thread_windows_full;
  return NULL;
}

LOCAL Caller* caller_entry(uintptr_t caller, uint32_t window) {
  uint64_t key = hash(caller * 31 + window);
  for (uint32_t i = (uint32_t)key & (CALLER_CAPACITY - 1), n = 0; n < CALLER_CAPACITY;
       i = (i + 1) & (CALLER_CAPACITY - 1), ++n) {
    Caller* c = &g_callers[i];
    if (c->caller == caller && c->window == window) return c;
    if (c->caller == 0) {
      c->caller = caller;
      c->window = window;
      return c;
    }
  }
  ++g_errors.callers_full;
  return NULL;
}

/* --- What each call counts (under the lock) --- */

LOCAL void count_alloc(void* p, size_t size, uintptr_t caller) {
  uint32_t thread = this_thread();
  uint16_t window = this_window();
  Block b = {(uintptr_t)p, size, caller ? caller : 1, thread, window, 0};
  block_insert(&b);
  ++t_inserts;
  t_last_insert = (uintptr_t)p;
  Counts* counts[2] = {&g_windows[window], thread_window(thread, window)};
  for (int k = 0; k < 2; ++k) {
    if (!counts[k]) continue;
    counts[k]->allocs += 1;
    counts[k]->alloc_bytes += size;
  }
  Caller* c = caller_entry(b.caller, window);
  if (c) {
    c->allocs += 1;
    c->bytes += size;
  }
}

/* The free of `b` (NULL: a block this counter never saw allocated); sized: the size a
 * sized delete gave (0: none). */
LOCAL void count_free_block(const Block* b, size_t sized) {
  uint32_t thread = this_thread();
  uint16_t window = this_window();
  if (b && sized != 0 && sized != b->size) ++g_errors.sized_mismatch;
  Counts* counts[2] = {&g_windows[window], thread_window(thread, window)};
  for (int k = 0; k < 2; ++k) {
    if (!counts[k]) continue;
    counts[k]->frees += 1;
    if (!b) {
      counts[k]->unknown_frees += 1;
      continue;
    }
    counts[k]->free_bytes += b->size;
    if (b->window == 0) {
      counts[k]->foreign_frees += 1;
      counts[k]->foreign_free_bytes += b->size;
    }
  }
}

LOCAL void count_free(void* p, size_t sized) {
  Block b;
  int known = block_remove((uintptr_t)p, &b);
  count_free_block(known ? &b : NULL, sized);
}

LOCAL void count_realloc_result(int failed) {
  uint32_t thread = this_thread();
  uint16_t window = this_window();
  Counts* counts[2] = {&g_windows[window], thread_window(thread, window)};
  for (int k = 0; k < 2; ++k) {
    if (counts[k]) *(failed ? &counts[k]->failed_reallocs : &counts[k]->reallocs) += 1;
  }
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

/* The block a nested call counted is the outer call's: its size and caller become the
 * outer call's (under the lock). */
LOCAL void adopt(void* p, size_t size, uintptr_t caller) {
  Block* b = block_slot((uintptr_t)p);
  if (b->addr != (uintptr_t)p) return;
  Counts* counts[2] = {&g_windows[b->window], thread_window(b->thread, b->window)};
  for (int k = 0; k < 2; ++k) {
    if (counts[k]) counts[k]->alloc_bytes = counts[k]->alloc_bytes - b->size + size;
  }
  Caller* inner = caller_entry(b->caller, b->window);
  if (inner) {
    inner->allocs -= 1;
    inner->bytes -= b->size;
  }
  b->size = size;
  b->caller = caller ? caller : 1;
  Caller* outer = caller_entry(b->caller, b->window);
  if (outer) {
    outer->allocs += 1;
    outer->bytes += size;
  }
}

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
  if (!dlsym(RTLD_NEXT, "_Znwm")) return; /* no libstdc++ (yet): looked up at the first call */
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; ++i) look_up_cxx(slots[i], names[i]);
}

/* ---------- Windows ---------- */

LOCAL uint16_t window_index(const char* name) {
  char clean[MAX_NAME];
  size_t n = 0;
  for (; name && name[n] && n + 1 < MAX_NAME; ++n) {
    char c = name[n];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
             c == ':' || c == '-';
    clean[n] = ok ? c : '_';
  }
  clean[n] = 0;
  if (n == 0 || strcmp(clean, "-") == 0) strcpy(clean, "_");
  for (uint32_t i = 1; i < g_window_count; ++i) {
    if (strcmp(g_window_names[i], clean) == 0) return (uint16_t)i;
  }
  if (g_window_count == MAX_WINDOWS) {
    ++g_errors.windows_full;
    return 0;
  }
  memcpy(g_window_names[g_window_count], clean, n + 1);
  return (uint16_t)g_window_count++;
}

API void memtruth_counter_begin(const char* name) {
  if (!lock()) return;
  uint16_t w = window_index(name);
  if (t_top == MAX_NEST) {
    ++g_errors.nest_too_deep;
  } else {
    t_stack[t_top++] = w;
  }
  g_opened_window = 1;
  unlock();
}

API void memtruth_counter_end(void) {
  if (!lock()) return;
  if (t_top == 0) {
    ++g_errors.unbalanced_ends;
  } else {
    --t_top;
  }
  unlock();
}

/* ---------- The file ---------- */

typedef struct {
  char* data;
  size_t size, capacity;
} Text;

LOCAL void put(Text* t, const char* s, size_t n) {
  if (t->size + n > t->capacity) {
    size_t capacity = t->capacity ? t->capacity * 2 : 1 << 20;
    while (capacity < t->size + n) capacity *= 2;
    char* bigger = map(capacity);
    if (t->data) {
      memcpy(bigger, t->data, t->size);
      munmap(t->data, t->capacity);
    }
    t->data = bigger;
    t->capacity = capacity;
  }
  memcpy(t->data + t->size, s, n);
  t->size += n;
}

LOCAL void puts_(Text* t, const char* s) { put(t, s, strlen(s)); }

LOCAL void put_u64(Text* t, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  put(t, digits + sizeof digits - n, (size_t)n);
}

LOCAL void put_hex(Text* t, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[sizeof digits - 1 - n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  puts_(t, "0x");
  put(t, digits + sizeof digits - n, (size_t)n);
}

LOCAL void put_field(Text* t, const char* key, uint64_t v) {
  puts_(t, " ");
  puts_(t, key);
  puts_(t, "=");
  put_u64(t, v);
}

/* A name as one token: spaces and control bytes become '?'. */
LOCAL void put_token(Text* t, const char* s) {
  if (!s || !*s) {
    puts_(t, "?");
    return;
  }
  for (; *s; ++s) {
    char c = (unsigned char)*s <= ' ' || *s == 0x7f ? '?' : *s;
    put(t, &c, 1);
  }
}

LOCAL void put_counts(Text* t, const Counts* c) {
  put_field(t, "allocs", c->allocs);
  put_field(t, "alloc_bytes", c->alloc_bytes);
  put_field(t, "frees", c->frees);
  put_field(t, "free_bytes", c->free_bytes);
  put_field(t, "foreign_frees", c->foreign_frees);
  put_field(t, "foreign_free_bytes", c->foreign_free_bytes);
  put_field(t, "unknown_frees", c->unknown_frees);
  put_field(t, "reallocs", c->reallocs);
  put_field(t, "failed_reallocs", c->failed_reallocs);
  put_field(t, "live_blocks", c->live_blocks);
  put_field(t, "live_bytes", c->live_bytes);
}

/* The live blocks now, into the windows', threads' and callers' counts (under the lock). */
LOCAL void count_live(void) {
  for (uint32_t w = 0; w < g_window_count; ++w) g_windows[w].live_blocks = g_windows[w].live_bytes = 0;
  for (uint32_t i = 0; i < TW_CAPACITY; ++i)
    g_thread_windows[i].counts.live_blocks = g_thread_windows[i].counts.live_bytes = 0;
  for (uint32_t i = 0; i < CALLER_CAPACITY; ++i) g_callers[i].live_blocks = g_callers[i].live_bytes = 0;
  for (size_t i = 0; i < g_block_capacity; ++i) {
    const Block* b = &g_blocks[i];
    if (b->addr == 0) continue;
    g_windows[b->window].live_blocks += 1;
    g_windows[b->window].live_bytes += b->size;
    Counts* tw = thread_window(b->thread, b->window);
    if (tw) {
      tw->live_blocks += 1;
      tw->live_bytes += b->size;
    }
    Caller* c = caller_entry(b->caller, b->window);
    if (c) {
      c->live_blocks += 1;
      c->live_bytes += b->size;
    }
  }
}

/* Everything but the callers (which need dladdr, outside the lock), into `t`. */
LOCAL void write_counts(Text* t, const char* label) {
  count_live();
  puts_(t, "snapshot ");
  put_token(t, label);
  puts_(t, "\n");
  for (uint32_t w = 0; w < g_window_count; ++w) {
    puts_(t, "window ");
    puts_(t, g_window_names[w]);
    put_counts(t, &g_windows[w]);
    puts_(t, "\n");
  }
  for (uint32_t i = 0; i < TW_CAPACITY; ++i) {
    const ThreadWindow* tw = &g_thread_windows[i];
    if (tw->key == 0) continue;
    uint64_t key = tw->key - 1;
    puts_(t, "thread ");
    put_u64(t, (uint64_t)g_thread_tids[key >> 16]);
    puts_(t, " window ");
    puts_(t, g_window_names[key & 0xffff]);
    put_counts(t, &tw->counts);
    puts_(t, "\n");
  }
  puts_(t, "errors");
  put_field(t, "reentrant", __atomic_load_n(&g_reentrant, __ATOMIC_RELAXED));
  put_field(t, "stale", g_errors.stale);
  put_field(t, "threads_full", g_errors.threads_full);
  put_field(t, "callers_full", g_errors.callers_full);
  put_field(t, "thread_windows_full", g_errors.thread_windows_full);
  put_field(t, "windows_full", g_errors.windows_full);
  put_field(t, "nest_too_deep", g_errors.nest_too_deep);
  put_field(t, "unbalanced_ends", g_errors.unbalanced_ends);
  puts_(t, "\n");
  puts_(t, "notes");
  put_field(t, "sized_delete_mismatch", g_errors.sized_mismatch);
  puts_(t, "\n");
}

LOCAL void write_callers(Text* t, const Caller* callers, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Caller* c = &callers[i];
    Dl_info info;
    memset(&info, 0, sizeof info);
    puts_(t, "caller window ");
    puts_(t, g_window_names[c->window]);
    puts_(t, " at ");
    if (c->caller > 1 && dladdr((void*)c->caller, &info) && info.dli_fname) {
      put_token(t, info.dli_fname);
      puts_(t, "+");
      put_hex(t, c->caller - (uintptr_t)info.dli_fbase);
      puts_(t, " fn ");
      put_token(t, info.dli_sname);
    } else {
      puts_(t, "?+");
      put_hex(t, c->caller);
      puts_(t, " fn ?");
    }
    put_field(t, "allocs", c->allocs);
    put_field(t, "bytes", c->bytes);
    put_field(t, "live_blocks", c->live_blocks);
    put_field(t, "live_bytes", c->live_bytes);
    puts_(t, "\n");
  }
}

LOCAL void output_path(char* out, size_t capacity) {
  char pid[24];
  Text t = {0, 0, 0};
  put_u64(&t, (uint64_t)getpid());
  size_t pid_len = t.size < sizeof pid ? t.size : sizeof pid - 1;
  memcpy(pid, t.data, pid_len);
  pid[pid_len] = 0;
  munmap(t.data, t.capacity);
  size_t o = 0;
  for (const char* s = g_output; *s && o + 1 < capacity; ++s) {
    if (s[0] == '%' && s[1] == 'p') {
      for (size_t k = 0; k < pid_len && o + 1 < capacity; ++k) out[o++] = pid[k];
      ++s;
    } else {
      out[o++] = *s;
    }
  }
  out[o] = 0;
}

LOCAL void snapshot(const char* label) {
  if (!g_output[0] || !(g_opened_window || g_every_process)) return;
  ++t_depth; /* anything allocated here is the counter's own */
  Text t = {0, 0, 0};
  Caller* callers = NULL;
  size_t caller_count = 0, callers_bytes = 0;
  if (lock()) {
    write_counts(&t, label);
    for (uint32_t i = 0; i < CALLER_CAPACITY; ++i) caller_count += g_callers[i].caller != 0;
    callers_bytes = (caller_count + 1) * sizeof(Caller);
    callers = map(callers_bytes);
    for (uint32_t i = 0, k = 0; i < CALLER_CAPACITY; ++i) {
      if (g_callers[i].caller != 0) callers[k++] = g_callers[i];
    }
    unlock();
  }
  write_callers(&t, callers, caller_count);
  puts_(&t, "end\n");
  char path[PATH_MAX];
  output_path(path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) {
    off_t at = lseek(fd, 0, SEEK_END);
    if (at == 0) { /* the file's header, once */
      Text h = {0, 0, 0};
      puts_(&h, "memtruth 1\npid ");
      put_u64(&h, (uint64_t)getpid());
      puts_(&h, "\nppid ");
      put_u64(&h, (uint64_t)getppid());
      char exe[PATH_MAX];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      exe[n > 0 ? n : 0] = 0;
      puts_(&h, "\nexe ");
      put_token(&h, exe);
      puts_(&h, "\n");
      (void)!write(fd, h.data, h.size);
      munmap(h.data, h.capacity);
    }
    for (size_t done = 0; done < t.size;) {
      ssize_t w = write(fd, t.data + done, t.size - done);
      if (w <= 0) break;
      done += (size_t)w;
    }
    close(fd);
  } else {
    (void)!write(2, "memtruth: cannot write its file\n", 32);
  }
  if (callers) munmap(callers, callers_bytes);
  if (t.data) munmap(t.data, t.capacity);
  --t_depth;
}

API void memtruth_counter_snapshot(const char* label) { snapshot(label); }

/* ---------- Start, fork, exit ---------- */

static void before_fork(void) {
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void after_fork_parent(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

/* The child: zero counts, its one thread new, no window; the inherited blocks stay known
 * (as allocated outside every window). */
static void after_fork_child(void) {
  memset(g_windows, 0, sizeof g_windows);
  memset(&g_errors, 0, sizeof g_errors);
  g_reentrant = 0;
  if (g_thread_windows) memset(g_thread_windows, 0, TW_CAPACITY * sizeof(ThreadWindow));
  if (g_callers) memset(g_callers, 0, CALLER_CAPACITY * sizeof(Caller));
  for (size_t i = 0; g_blocks && i < g_block_capacity; ++i) {
    g_blocks[i].window = 0;
    g_blocks[i].thread = 0;
  }
  g_thread_count = 1;
  t_thread = 0;
  t_top = 0;
  g_opened_window = 0;
  t_locked = 0;
  __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void start(void) {
  resolve();
  look_up_every_cxx_form();
  const char* out = getenv("MEMTRUTH_OUTPUT");
  if (out && strlen(out) < sizeof g_output) strcpy(g_output, out);
  const char* every = getenv("MEMTRUTH_EVERY_PROCESS");
  g_every_process = every && every[0] == '1';
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((destructor)) static void finish(void) { snapshot("exit"); }
