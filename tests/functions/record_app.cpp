// An unmodified program for `ringtrace record`: it includes nothing of ringtrace and never
// starts a session; it is built with -finstrument-functions and linked with
// ringtrace::functions. With an argument "own-session" it also starts a Session of its
// own (the runtime then says that the environment's session records it).
//   record_app [calls] [own-session]    prints the sum; exits 7
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef RECORD_APP_OWN_SESSION
#include "ringtrace/ringtrace.hpp"
#endif

namespace app {
volatile int g_sink = 0;
struct Tokenizer {
  [[gnu::noinline]] int next(int v) {
    g_sink = v;
    return g_sink % 7;
  }
};
// Inlined into work(): g++ calls its hooks there (left out and listed by default), clang's
// flags never instrument it.
[[gnu::always_inline]] inline int widen(int v) {
  g_sink = v;
  return g_sink - v;
}
[[gnu::noinline]] int work(int v) {
  Tokenizer t;
  return t.next(v) + t.next(v + 1) + widen(v);
}
[[gnu::noinline]] int run(int calls) {
  int total = 0;
  for (int i = 0; i < calls; ++i) total += work(i);
  return total;
}
}  // namespace app

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 100;
#ifdef RECORD_APP_OWN_SESSION
  ringtrace::Session own;
  own.start();  // refused with a message under `ringtrace record`
  std::printf("own session running: %d\n", own.running() ? 1 : 0);
#endif
  std::printf("%d\n", app::run(calls));
  return 7;
}
