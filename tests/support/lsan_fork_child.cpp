// Linked into the tests whose fork children end with exit(): in a fork child of a
// process with threads, LeakSanitizer's check at exit (clang 14) can wait forever for an
// allocator lock that another thread of the parent held when fork() copied it (the
// drainer, say, inside malloc). That is the sanitizer's limit, not the program's: glibc's
// malloc, which real programs use, is made safe across fork. So a fork child turns the
// check off (LSan asks __lsan_is_turned_off() before it takes any lock); the parent's
// check is untouched. Without LeakSanitizer the function is never called.
#include <pthread.h>

namespace {
int g_fork_child = 0;
struct MarkForkChildren {
  MarkForkChildren() {
    pthread_atfork(nullptr, nullptr, [] { g_fork_child = 1; });
  }
} g_mark;
}  // namespace

extern "C" __attribute__((visibility("default"), used)) int __lsan_is_turned_off() { return g_fork_child; }
