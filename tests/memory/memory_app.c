/* A C program that does not link ringtrace: `ringtrace record --memory` records it through
 * libringtrace_preload.so (tests/memory/record_memory.sh, tests/python/run_tests.sh).
 * Prints its own count of what it allocated and freed, which the recording must equal.
 * `memory_app kill` ends with SIGKILL before it frees its last blocks, 300 ms after its
 * last allocation (the drainer's passes have written it). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* volatile sink; /* the compiler may not take a malloc and free it sees as a pair away */
static uint64_t allocated, freed, allocations, frees; /* the main thread's and the worker's, apart */
static uint64_t worker_allocated, worker_freed, worker_allocations, worker_frees;

static void* worker(void* arg) {
  void** blocks = arg; /* allocated by main: freed here, each of its size */
  for (int i = 0; i < 64; ++i) {
    free(blocks[i]);
    worker_freed += 100 + (uint64_t)i;
    ++worker_frees;
  }
  for (int i = 0; i < 1000; ++i) {
    char* p = malloc(16 + (size_t)i % 1024);
    memset(p, 2, 16);
    sink = p;
    worker_allocated += 16 + (uint64_t)i % 1024;
    ++worker_allocations;
    free(p);
    worker_freed += 16 + (uint64_t)i % 1024;
    ++worker_frees;
  }
  return NULL;
}

int main(int argc, char** argv) {
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc(100 + (size_t)i);
    sink = blocks[i];
    allocated += 100 + (uint64_t)i;
    ++allocations;
  }
  char* c = calloc(10, 33);
  allocated += 330;
  ++allocations;
  char* r = realloc(c, 5000); /* a free of 330 and an allocation of 5000 */
  freed += 330;
  ++frees;
  allocated += 5000;
  ++allocations;
  r[4999] = 1;
  pthread_t t;
  pthread_create(&t, NULL, worker, blocks);
  pthread_join(t, NULL);
  void* kept = malloc(12345); /* a leak */
  allocated += 12345;
  ++allocations;
  if (argc > 1 && strcmp(argv[1], "kill") == 0) {
    printf("kill %p\n", kept);
    fflush(stdout);
    usleep(300 * 1000); /* the drainer's passes write everything so far into the file */
    kill(getpid(), SIGKILL);
  }
  free(r);
  freed += 5000;
  ++frees;
  printf("main: %llu allocations of %llu bytes, %llu frees of %llu bytes\n", (unsigned long long)allocations,
         (unsigned long long)allocated, (unsigned long long)frees, (unsigned long long)freed);
  printf("worker: %llu allocations of %llu bytes, %llu frees of %llu bytes\n", (unsigned long long)worker_allocations,
         (unsigned long long)worker_allocated, (unsigned long long)worker_frees, (unsigned long long)worker_freed);
  printf("leak: 12345 bytes at %p\n", kept);
  return 0;
}
