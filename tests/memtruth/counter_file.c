/* The counting preload's file (counter.h): at each snapshot (a marker, the exit) its
 * counts appended as lines the test's reader parses (tests/memtruth/counter_reader.cpp), written
 * without allocating through the allocator it counts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counter.h"

static char g_output[PATH_MAX];
static int g_every_process;

INTERNAL void set_output(const char* path, int every_process) {
  if (path && strlen(path) < sizeof g_output) strcpy(g_output, path);
  g_every_process = every_process;
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

INTERNAL void snapshot(const char* label) {
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
