// Built at -O2 with -finstrument-functions by g++ and by clang (the flags docs/functions.md
// gives) and -fno-exceptions, as many programs are (leveldb's build): stack_moves.hpp says
// what each function is for. The drivers at the end are not instrumented.
#include "stack_moves.hpp"

#define STACK_MOVES_DRIVER __attribute__((no_instrument_function))

namespace stack_moves {

namespace {
std::uint64_t g_calls[kFunctions] = {};
volatile long g_sink = 0;

STACK_MOVES_DRIVER inline void count(Function f) { ++g_calls[static_cast<int>(f)]; }
}  // namespace

struct Holder {
  long* data = nullptr;
  Holder() = default;
  Holder(Holder&& other) noexcept : data(other.data) { other.data = nullptr; }
  [[gnu::always_inline]] Holder& operator=(Holder&& other) noexcept {
    count(Function::assign);
    long* const mine = data;
    data = other.data;
    other.data = mine;
    return *this;
  }
  [[gnu::always_inline]] ~Holder() {
    count(Function::release);
    delete[] data;
  }
};

struct Maker {
  long base = 0;
  [[gnu::noinline]] Holder make(long a, long b, long c, long d, void* where, long (*pick)(long)) const;
};

[[gnu::noinline]] long pick_one(long v) { return v & 1; }

Holder Maker::make(long a, long b, long c, long d, void* where, long (*pick)(long)) const {
  count(Function::make);
  g_sink = a + b + c + d + base + (where != nullptr ? 1 : 0);
  Holder h;
  if (pick != nullptr && g_sink < 0) h.data = new long[1];
  return h;
}

struct Slot {
  Maker maker;
  Holder held;
  long n = 0;
};

[[gnu::noinline]] void store(Slot* slot, long v) {
  count(Function::store);
  slot->held = slot->maker.make(v, v + 1, slot->n, v + 3, slot, nullptr);
  g_sink = slot->held.data != nullptr ? 1 : 0;
}

[[gnu::noinline]] long sum8(long a, long b, long c, long d, long e, long f, long g, long h) {
  count(Function::sum8);
  g_sink = a + b + c + d + e + f + g + h;
  return g_sink;
}

[[gnu::noinline]] long sum8_plus(long v) {
  count(Function::sum8_plus);
  return sum8(v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7) + 1;
}

[[gnu::noinline]] long scratch(int n) {
  count(Function::scratch);
  volatile char room[n + 16];
  for (int i = 0; i < n + 16; ++i) room[i] = static_cast<char>(i);
  return room[n] + sum8_plus(n);
}

// The program's own code: not instrumented.

STACK_MOVES_DRIVER const char* name(Function f) {
  switch (f) {
    case Function::make:
      return "stack_moves::Maker::make(long, long, long, long, void*, long (*)(long)) const";
    case Function::assign:
      return "stack_moves::Holder::operator=(stack_moves::Holder&&)";
    case Function::release:
      return "stack_moves::Holder::~Holder()";
    case Function::store:
      return "stack_moves::store(stack_moves::Slot*, long)";
    case Function::sum8:
      return "stack_moves::sum8(long, long, long, long, long, long, long, long)";
    case Function::sum8_plus:
      return "stack_moves::sum8_plus(long)";
    case Function::scratch:
      return "stack_moves::scratch(int)";
    case Function::function_count:
      break;
  }
  return "";
}

STACK_MOVES_DRIVER std::uint64_t calls(Function f) { return g_calls[static_cast<int>(f)]; }
STACK_MOVES_DRIVER bool inlined(Function f) { return f == Function::assign || f == Function::release; }
STACK_MOVES_DRIVER bool hooks_in_inlined_functions() {
#if defined(__clang__)
  return false;
#else
  return true;
#endif
}
STACK_MOVES_DRIVER void reset() {
  for (std::uint64_t& n : g_calls) n = 0;
}

STACK_MOVES_DRIVER void store_n(int n) {
  Slot slot;
  slot.n = n;
  for (int i = 0; i < n; ++i) store(&slot, i);
}  // slot's destructor: ~Holder() inlined here (g++: its hooks run, with no frame to be inlined into)
STACK_MOVES_DRIVER long sum8_plus_n(int n) {
  long t = 0;
  for (int i = 0; i < n; ++i) t += sum8_plus(i);
  return t;
}
STACK_MOVES_DRIVER long scratch_n(int n) {
  long t = 0;
  for (int i = 0; i < n; ++i) t += scratch(i);
  return t;
}

}  // namespace stack_moves
