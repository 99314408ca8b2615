/* The counting preload's tables (counter.h): live blocks by address (their size, window,
 * thread, caller), counts by window, by thread and window, by caller and window, and the
 * calling thread's windows. Everything under one lock, in memory of its own (mmap): the
 * counter never allocates through the allocator it counts. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counter.h"

INTERNAL void fatal(const char* text) {
  (void)!write(2, "memtruth: ", 10);
  (void)!write(2, text, strlen(text));
  (void)!write(2, "\n", 1);
  abort();
}

int g_lock;
__thread int t_locked TLS_MODEL;
Errors g_errors;
uint64_t g_reentrant;

char g_window_names[MAX_WINDOWS][MAX_NAME] = {"-"};
uint32_t g_window_count = 1;
Counts g_windows[MAX_WINDOWS];

pid_t g_thread_tids[MAX_THREADS];
uint32_t g_thread_count = 1;
__thread uint32_t t_thread TLS_MODEL;
__thread uint16_t t_stack[MAX_NEST] TLS_MODEL;
__thread int t_top TLS_MODEL;
__thread int t_depth TLS_MODEL;
__thread uint64_t t_inserts TLS_MODEL;
__thread uintptr_t t_last_insert TLS_MODEL;

Block* g_blocks;
size_t g_block_capacity, g_block_count;
ThreadWindow* g_thread_windows;
Caller* g_callers;

int g_opened_window;

INTERNAL void* map(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fatal("mmap failed");
  return p;
}

INTERNAL int lock(void) {
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

INTERNAL void unlock(void) {
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

INTERNAL Block* block_slot(uintptr_t addr) {
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

INTERNAL void block_insert(const Block* b) {
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
INTERNAL int block_remove(uintptr_t addr, Block* out) {
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

INTERNAL Counts* thread_window(uint32_t thread, uint16_t window) {
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

INTERNAL Caller* caller_entry(uintptr_t caller, uint32_t window) {
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

INTERNAL void count_alloc(void* p, size_t size, uintptr_t caller) {
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
INTERNAL void count_free_block(const Block* b, size_t sized) {
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

INTERNAL void count_free(void* p, size_t sized) {
  Block b;
  int known = block_remove((uintptr_t)p, &b);
  count_free_block(known ? &b : NULL, sized);
}

INTERNAL void count_realloc_result(int failed) {
  uint32_t thread = this_thread();
  uint16_t window = this_window();
  Counts* counts[2] = {&g_windows[window], thread_window(thread, window)};
  for (int k = 0; k < 2; ++k) {
    if (counts[k]) *(failed ? &counts[k]->failed_reallocs : &counts[k]->reallocs) += 1;
  }
}

/* The block a nested call counted is the outer call's: its size and caller become the
 * outer call's (under the lock). */
INTERNAL void adopt(void* p, size_t size, uintptr_t caller) {
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

/* The child: zero counts, its one thread new, no window; the inherited blocks stay known
 * (as allocated outside every window). */
INTERNAL void reset_after_fork(void) {
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
}
