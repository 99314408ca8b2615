/* The counting preload's shared parts (alloc_counter.c, counter_tables.c,
 * counter_file.c): its tables, one lock over them, the calling thread's windows. Built
 * into libmemtruth_counter.so only, with hidden visibility: nothing here is exported. */
#ifndef MEMTRUTH_COUNTER_H
#define MEMTRUTH_COUNTER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define API __attribute__((visibility("default"), no_instrument_function))
#define LOCAL static __attribute__((no_instrument_function))
#define INTERNAL __attribute__((no_instrument_function))
#define TLS_MODEL __attribute__((tls_model("initial-exec")))

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

#define TW_CAPACITY (1u << 15)
#define CALLER_CAPACITY (1u << 16)

/* The tables (counter_tables.c), under the lock. */
extern int g_lock;
extern Errors g_errors;
extern uint64_t g_reentrant; /* atomic: counted without the lock */
extern char g_window_names[MAX_WINDOWS][MAX_NAME];
extern uint32_t g_window_count;
extern Counts g_windows[MAX_WINDOWS];
extern pid_t g_thread_tids[MAX_THREADS];
extern uint32_t g_thread_count; /* 0: not assigned */
extern Block* g_blocks;
extern size_t g_block_capacity, g_block_count;
extern ThreadWindow* g_thread_windows;
extern Caller* g_callers;
extern int g_opened_window; /* a window was opened: this process writes its file */

/* The calling thread's state (initial-exec: no allocation to reach it). */
extern __thread int t_locked TLS_MODEL;
extern __thread uint32_t t_thread TLS_MODEL;
extern __thread uint16_t t_stack[MAX_NEST] TLS_MODEL;
extern __thread int t_top TLS_MODEL;
extern __thread int t_depth TLS_MODEL;             /* inside the counter's own calls or reallocarray's: uncounted */
extern __thread uint64_t t_inserts TLS_MODEL;      /* blocks this thread's calls counted */
extern __thread uintptr_t t_last_insert TLS_MODEL; /* the last of them */

INTERNAL void fatal(const char* text);
INTERNAL void* map(size_t bytes);
INTERNAL int lock(void); /* 0: this thread already holds it (a signal handler): counted as reentrant */
INTERNAL void unlock(void);
INTERNAL Block* block_slot(uintptr_t addr);
INTERNAL void block_insert(const Block* b);
INTERNAL int block_remove(uintptr_t addr, Block* out);
INTERNAL Counts* thread_window(uint32_t thread, uint16_t window);
INTERNAL Caller* caller_entry(uintptr_t caller, uint32_t window);
INTERNAL void count_alloc(void* p, size_t size, uintptr_t caller);
INTERNAL void count_free_block(const Block* b, size_t sized);
INTERNAL void count_free(void* p, size_t sized);
INTERNAL void count_realloc_result(int failed);
INTERNAL void adopt(void* p, size_t size, uintptr_t caller);
INTERNAL void reset_after_fork(void);

/* The file (counter_file.c). */
INTERNAL void set_output(const char* path, int every_process);
INTERNAL void snapshot(const char* label);

#endif /* MEMTRUTH_COUNTER_H */
