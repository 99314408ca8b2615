/* Point 6 of issue 42: a C program that allocates through mimalloc's own API beside the C
 * one (it links libmimalloc, which also defines malloc and free), recorded by `ringtrace
 * record --memory`. In its function mi_pairs (a zone: -finstrument-functions), 100 blocks
 * from mi_malloc freed with free, and 100 from malloc freed with mi_free: every block is
 * freed, none was allocated before the recording. */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>

static void* volatile g_sink;

__attribute__((noinline)) void mi_pairs(void) {
  for (int i = 0; i < 100; ++i) {
    void* p = mi_malloc(64);
    g_sink = p;
    free(p);
  }
  for (int i = 0; i < 100; ++i) {
    void* q = malloc(64);
    g_sink = q;
    mi_free(q);
  }
}

int main(int argc, char** argv) {
  (void)argv;
  if (argc == 1) mi_pairs(); /* "truth_mimalloc baseline": the same program without them */
  printf("truth zone=mi_pairs allocs=200 alloc_bytes=12800 frees=200 leaked=0 frees_before_recording=0\n");
  return 0;
}
