// An unmodified program for `ringtrace record --callgraph`: built with
// -finstrument-functions and linked with ringtrace::functions, it includes nothing of
// ringtrace. It counts its own calls and writes them where its argument says:
//   pictures_functions_app EXPECTED.json
//     {"calls": {function: calls}, "edges": {"caller;callee": calls}}
// fact() is recursive: its calls beyond the first of each chain are not primitive.
#include <cstdio>
#include <fstream>

namespace app {
volatile unsigned long g_sink = 0;
unsigned long g_next = 0, g_work = 0, g_fact = 0, g_fact_inner = 0, g_fact_outer = 0;

struct Tokenizer {
  [[gnu::noinline]] unsigned long next(unsigned long v) {
    ++g_next;
    for (int i = 0; i < 2000; ++i) g_sink = g_sink + v * static_cast<unsigned long>(i);
    return g_sink % 7;
  }
};
[[gnu::noinline]] unsigned long work(unsigned long v) {
  ++g_work;
  Tokenizer t;
  return t.next(v) + t.next(v + 1);
}
[[gnu::noinline]] unsigned long fact(unsigned long n, bool outer) {
  ++g_fact;
  if (outer) {
    ++g_fact_outer;
  } else {
    ++g_fact_inner;
  }
  for (int i = 0; i < 3000; ++i) g_sink = g_sink + n;
  return n <= 1 ? 1 : n * fact(n - 1, false);
}
[[gnu::noinline]] unsigned long run(unsigned long calls) {
  unsigned long total = 0;
  for (unsigned long i = 0; i < calls; ++i) total += work(i);
  for (unsigned long i = 0; i < 20; ++i) total += fact(10, true);
  return total;
}
}  // namespace app

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pictures_functions_app EXPECTED.json\n");
    return 2;
  }
  const unsigned long total = app::run(300);
  std::ofstream out(argv[1]);
  out << "{\"calls\": {\"app::run\": 1, \"app::work\": " << app::g_work << ", \"app::Tokenizer::next\": " << app::g_next
      << ", \"app::fact\": " << app::g_fact << "}, \"edges\": {\"app::run;app::work\": " << app::g_work
      << ", \"app::work;app::Tokenizer::next\": " << app::g_next << ", \"app::run;app::fact\": " << app::g_fact_outer
      << ", \"app::fact;app::fact\": " << app::g_fact_inner << "}, \"total\": " << total << "}\n";
  return out ? 0 : 1;
}
