// A program for `ringtrace record` (filter_tests.sh): it includes nothing of ringtrace, is
// built with -finstrument-functions and linked with ringtrace::functions. Three threads,
// named "main", "walker-1" and "walker-2", each walk a tree of recursive calls whose
// lengths span three orders of magnitude (a spin of 0 to about 200 us at each leaf), so
// that every filter has something to keep and something to leave out.
//   functions_app [walks]     prints the sum
#include <pthread.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace app {
volatile unsigned long g_sink = 0;

[[gnu::noinline]] void spin(unsigned long ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) g_sink = g_sink + 1;
}

[[gnu::noinline]] unsigned long leaf(unsigned long seed) {
  spin((seed * 2654435761u) % 7 == 0 ? 150000 + seed % 50000 : seed % 3000);
  return seed;
}

[[gnu::noinline]] unsigned long branch(unsigned long seed, int depth);

[[gnu::noinline]] unsigned long parse(unsigned long seed, int depth) { return branch(seed * 3 + 1, depth + 1) + 1; }

[[gnu::noinline]] unsigned long compute(unsigned long seed, int depth) {
  unsigned long total = 0;
  for (unsigned long i = 0; i < 1 + seed % 3; ++i) total += branch(seed + i, depth + 1);
  return total;
}

[[gnu::noinline]] unsigned long branch(unsigned long seed, int depth) {
  if (depth >= 6) return leaf(seed);
  return seed % 2 == 0 ? parse(seed / 2, depth) : compute(seed / 2 + 5, depth);
}

[[gnu::noinline]] unsigned long walk(unsigned long seed, int walks) {
  unsigned long total = 0;
  for (int w = 0; w < walks; ++w) total += branch(seed + static_cast<unsigned long>(w) * 7919, 0);
  return total;
}
}  // namespace app

namespace {
struct Walker {
  int index;
  int walks;
  unsigned long sum = 0;
};

// Not instrumented: each thread is named before its first call is recorded (the recording
// names a thread when it first sees it).
[[gnu::no_instrument_function]] void* walker(void* arg) {
  auto* w = static_cast<Walker*>(arg);
  char name[16];
  std::snprintf(name, sizeof name, "walker-%d", w->index);
  pthread_setname_np(pthread_self(), name);
  w->sum = app::walk(static_cast<unsigned long>(w->index + 1) * 1000003, w->walks);
  return nullptr;
}
}  // namespace

[[gnu::no_instrument_function]] int main(int argc, char** argv) {
  const int walks = argc > 1 ? std::atoi(argv[1]) : 20;
  pthread_setname_np(pthread_self(), "main");
  Walker walkers[2] = {{1, walks}, {2, walks}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], nullptr, walker, &walkers[i]);
  const unsigned long own = app::walk(1, walks);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  std::printf("%lu\n", own + walkers[0].sum + walkers[1].sum);
  return 0;
}
