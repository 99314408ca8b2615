/* A program that does not link ringtrace and allocates through two known call chains,
 * counting its own bytes, for `ringtrace record --memory-stacks` (memory_stacks.sh):
 *
 *   big_top -> big_middle -> big_leaf:        BIG_COUNT blocks of BIG_SIZE (each larger
 *                                             than the sampling's mean gap: nearly all
 *                                             sampled), freed at once
 *   small_top -> small_middle -> small_leaf:  SMALL_COUNT blocks of SMALL_SIZE, kept live
 *                                             to the end (leaked)
 *
 * It prints "truth big_bytes=... small_bytes=... small_leaked=..." for the script. The
 * functions are noinline and use their callee's result after the call (no tail call), so
 * that each chain is three frames deep as written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void* big_leaf(size_t size);
uint64_t big_middle(void);
uint64_t big_top(void);
void* small_leaf(size_t size);
uint64_t small_middle(int i);
uint64_t small_top(void);

#define BIG_COUNT 50
#define BIG_SIZE (4u << 20)
#define SMALL_COUNT 200000
#define SMALL_SIZE 64

static void* g_small[SMALL_COUNT];
static volatile uint64_t g_sink;

__attribute__((noinline)) void* big_leaf(size_t size) {
  void* p = malloc(size);
  if (p != NULL) memset(p, 1, 64);
  return p;
}
__attribute__((noinline)) uint64_t big_middle(void) {
  void* p = big_leaf(BIG_SIZE);
  const uint64_t got = p != NULL ? ((unsigned char*)p)[1] : 0;
  free(p);
  return got;
}
__attribute__((noinline)) uint64_t big_top(void) {
  uint64_t n = 0;
  for (int i = 0; i < BIG_COUNT; ++i) n += big_middle();
  return n;
}

__attribute__((noinline)) void* small_leaf(size_t size) {
  void* p = malloc(size);
  if (p != NULL) memset(p, 2, size);
  return p;
}
__attribute__((noinline)) uint64_t small_middle(int i) {
  g_small[i] = small_leaf(SMALL_SIZE);
  return g_small[i] != NULL ? ((unsigned char*)g_small[i])[3] : 0;
}
__attribute__((noinline)) uint64_t small_top(void) {
  uint64_t n = 0;
  for (int i = 0; i < SMALL_COUNT; ++i) n += small_middle(i);
  return n;
}

int main(void) {
  g_sink = big_top() + small_top();
  printf("truth big_bytes=%llu small_bytes=%llu small_leaked=%llu\n", (unsigned long long)BIG_COUNT * BIG_SIZE,
         (unsigned long long)SMALL_COUNT * SMALL_SIZE, (unsigned long long)SMALL_COUNT * SMALL_SIZE);
  return 0; /* g_small's blocks are never freed: leaked */
}
