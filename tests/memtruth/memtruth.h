/* The markers of the counting preload (alloc_counter.c, libmemtruth_counter.so): a test
 * program's windows, each a no-op when the counter is not loaded. Found at run time
 * (dlsym), so that a program links nothing of the counter's and runs the same without it.
 *
 *   memtruth_init();            once, first (dlsym may allocate: outside every window)
 *   memtruth_begin("work");     this thread's allocations and frees count in "work"
 *   ...
 *   memtruth_end();             until here (windows nest: the innermost counts)
 *   memtruth_snapshot("stop");  the counts so far (and the blocks live now) into the file
 *
 * Each file that calls a marker calls memtruth_init() first (the look-up is per file).
 * A window is per thread: what other threads (ringtrace's drainer, the C library's) do
 * meanwhile is not counted. C and C++; ringtrace's code includes nothing of this. */
#ifndef MEMTRUTH_H
#define MEMTRUTH_H

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*memtruth_name_fn)(const char*);
typedef void (*memtruth_void_fn)(void);

struct memtruth_markers {
  int looked_up;
  memtruth_name_fn begin;
  memtruth_void_fn end;
  memtruth_name_fn snapshot;
};

static inline struct memtruth_markers* memtruth_markers_(void) {
  static struct memtruth_markers markers;
  return &markers;
}

/* A marker before memtruth_init() would count nothing, silently: it stops the program. */
static inline struct memtruth_markers* memtruth_checked_(void) {
  struct memtruth_markers* m = memtruth_markers_();
  if (!m->looked_up) {
    static const char kText[] = "memtruth: a marker before memtruth_init() in this file\n";
    (void)!write(2, kText, sizeof kText - 1);
    abort();
  }
  return m;
}

/* Looks the markers up; returns whether the counter is loaded. */
static inline int memtruth_init(void) {
  struct memtruth_markers* m = memtruth_markers_();
  if (!m->looked_up) {
    m->begin = (memtruth_name_fn)dlsym(RTLD_DEFAULT, "memtruth_counter_begin");
    m->end = (memtruth_void_fn)dlsym(RTLD_DEFAULT, "memtruth_counter_end");
    m->snapshot = (memtruth_name_fn)dlsym(RTLD_DEFAULT, "memtruth_counter_snapshot");
    m->looked_up = 1;
  }
  return m->begin != 0;
}

static inline void memtruth_begin(const char* window) {
  struct memtruth_markers* m = memtruth_checked_();
  if (m->begin) m->begin(window);
}

static inline void memtruth_end(void) {
  struct memtruth_markers* m = memtruth_checked_();
  if (m->end) m->end();
}

static inline void memtruth_snapshot(const char* label) {
  struct memtruth_markers* m = memtruth_checked_();
  if (m->snapshot) m->snapshot(label);
}

#ifdef __cplusplus
}
#endif

#endif /* MEMTRUTH_H */
