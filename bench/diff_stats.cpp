// The program `ringtrace diff`'s statistics are measured on (bench/diff_stats.py, and the
// tests in tests/tool/diff_tests.sh): a real recording of five zones, each called --calls
// times (default 1,000), whose work is a dependent chain of integer operations of a fixed
// length per zone; --slow ZONE:P makes ZONE's chain P percent longer, a slowdown of P% of
// its work injected by an argument.
//
//   diff_stats OUT.rtrace [--calls N] [--slow ZONE:P]
//
// Zones, their chains' lengths (about 1 ns each on a 2020s x86-64): tiny 60, parse 400,
// hash 1,500, work 4,000, and round, which holds one call of each of the four.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ringtrace/exporters/binary_trace.hpp>
#include <ringtrace/ringtrace.hpp>

namespace {

// `steps` dependent multiply-xorshift steps, not foldable by the compiler.
std::uint64_t chain(std::uint64_t x, std::uint64_t steps) {
  for (std::uint64_t i = 0; i < steps; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
    asm volatile("" : "+r"(x));
  }
  return x;
}

struct Lengths {
  std::uint64_t tiny = 60, parse = 400, hash = 1500, work = 4000;
};

// Applies --slow ZONE:P to the chains; false when ZONE is none of the four.
bool slow_down(Lengths& lengths, const char* spec) {
  const char* colon = std::strchr(spec, ':');
  if (colon == nullptr) return false;
  const std::string zone(spec, colon);
  const std::uint64_t percent = std::strtoull(colon + 1, nullptr, 10);
  std::uint64_t* length = zone == "tiny"    ? &lengths.tiny
                          : zone == "parse" ? &lengths.parse
                          : zone == "hash"  ? &lengths.hash
                          : zone == "work"  ? &lengths.work
                                            : nullptr;
  if (length == nullptr) return false;
  *length = *length * (100 + percent) / 100;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: diff_stats OUT.rtrace [--calls N] [--slow ZONE:P]\n");
    return 2;
  }
  std::uint64_t calls = 1000;
  Lengths lengths;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) {
      calls = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--slow") != 0 || !slow_down(lengths, argv[i + 1])) {
      std::fprintf(stderr, "diff_stats: unknown argument %s %s\n", argv[i], argv[i + 1]);
      return 2;
    }
  }
  ringtrace::Config config;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(argv[1]));
  session.start();
  std::uint64_t x = 1;
  for (std::uint64_t i = 0; i < calls; ++i) {
    RINGTRACE_ZONE("round");
    {
      RINGTRACE_ZONE("tiny");
      x = chain(x, lengths.tiny);
    }
    {
      RINGTRACE_ZONE("parse");
      x = chain(x, lengths.parse);
    }
    {
      RINGTRACE_ZONE("hash");
      x = chain(x, lengths.hash);
    }
    {
      RINGTRACE_ZONE("work");
      x = chain(x, lengths.work);
    }
  }
  session.stop();
  return x == 42 ? 1 : 0;  // uses x
}
