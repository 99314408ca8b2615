/* Issue 42's scenarios in a C program that does not link ringtrace: `ringtrace record
 * --memory` records it through the preload, and its functions are zones (built with
 * -finstrument-functions: the preload holds the hooks). It counts what it allocates and
 * prints it ("truth KEY=VALUE ..."); its functions are also the counting preload's
 * windows (memtruth.h).
 *
 *   truth_plain child                 7 allocations, 3 frees in child_work (point 2)
 *   truth_plain keys N seq|par        N threads each keep malloc(222) in a pthread key
 *                                     created with free as its destructor (point 3)
 *   truth_plain run system|spawn|fork PROGRAM [ARGS...]   runs PROGRAM and waits (point 2)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memtruth.h"

extern char** environ;

static void* volatile g_sink;

/* --- point 2: a child's own allocations --- */
__attribute__((noinline)) void child_work(void) {
  void* blocks[7];
  memtruth_begin("child_work");
  for (int i = 0; i < 7; ++i) {
    blocks[i] = malloc(1000 + (size_t)i);
    g_sink = blocks[i];
  }
  for (int i = 0; i < 3; ++i) free(blocks[i]);
  memtruth_end();
}

static int child(void) {
  child_work();
  printf("truth child pid=%d zone=child_work allocs=7 alloc_bytes=%d frees=3 free_bytes=%d\n", (int)getpid(),
         7 * 1000 + 21, 3 * 1000 + 3);
  fflush(stdout);
  return 0;
}

/* --- point 3: pthread keys whose destructor is free --- */
static pthread_key_t g_key;

__attribute__((noinline)) void* key_worker(void* arg) {
  (void)arg;
  memtruth_begin("key_worker"); /* left open: the key's destructor frees in it at the exit */
  void* p = malloc(222);
  g_sink = p;
  pthread_setspecific(g_key, p);
  return NULL;
}

static int keys(int n, int one_after_another) {
  pthread_key_create(&g_key, free);
  pthread_t threads[256];
  if (n > 256) n = 256;
  for (int i = 0; i < n; ++i) {
    pthread_create(&threads[i], NULL, key_worker, NULL);
    if (one_after_another) pthread_join(threads[i], NULL);
  }
  if (!one_after_another) {
    for (int i = 0; i < n; ++i) pthread_join(threads[i], NULL);
  }
  printf("truth zone=key_worker threads=%d block=222 freed_at_exit=%d\n", n, n);
  fflush(stdout);
  return 0;
}

/* --- point 2: a parent that runs a program --- */
static int run(const char* how, char** argv) {
  int status = 0;
  if (strcmp(how, "system") == 0) {
    char line[4096] = "";
    for (char** a = argv; *a; ++a) {
      strncat(line, *a, sizeof line - strlen(line) - 2);
      strcat(line, " ");
    }
    status = system(line);
  } else if (strcmp(how, "spawn") == 0) {
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return 3;
    waitpid(pid, &status, 0);
  } else if (strcmp(how, "fork") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      execv(argv[0], argv);
      _exit(127);
    }
    waitpid(pid, &status, 0);
  } else {
    return 2;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

int main(int argc, char** argv) {
  memtruth_init();
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  if (argc > 3 && strcmp(argv[1], "keys") == 0) return keys(atoi(argv[2]), strcmp(argv[3], "seq") == 0);
  if (argc > 3 && strcmp(argv[1], "run") == 0) return run(argv[2], argv + 3);
  fprintf(stderr, "truth_plain: unknown mode\n");
  return 2;
}
