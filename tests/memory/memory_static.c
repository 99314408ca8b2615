/* A statically linked C program that allocates: `ringtrace record --memory` cannot preload
   into it, and says so (record_memory.sh). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char* block = malloc(100);
  if (block == NULL) return 1;
  snprintf(block, 100, "static");
  puts(block);
  free(block);
  return 0;
}
