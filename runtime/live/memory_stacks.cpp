#include "memory_stacks.hpp"

#include <unwind.h>

#include <cmath>

#include "ringtrace/detail/ticks.hpp"

namespace ringtrace::detail {
namespace {

constinit thread_local std::uint64_t t_mean_bytes = 0;
constinit thread_local std::uint32_t t_sampling_epoch = 0;  // the session's whose gap is drawn
constinit thread_local std::uint64_t t_random = 0;          // xorshift64* state; 0: not seeded yet

// A uniform number in (0, 1].
double uniform() noexcept {
  std::uint64_t x = t_random;
  if (x == 0) x = read_ticks_fast() ^ reinterpret_cast<std::uintptr_t>(&t_random) ^ 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t_random = x;
  return static_cast<double>((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53 + 0x1.0p-53;
}

void draw_gap() noexcept {
  if (t_mean_bytes == 0) {
    t_bytes_to_stack = INT64_MAX;
    return;
  }
  const double gap = -std::log(uniform()) * static_cast<double>(t_mean_bytes);
  t_bytes_to_stack = gap >= 9e18 ? INT64_MAX : static_cast<std::int64_t>(gap);
}

struct Unwound {
  std::uint64_t caller;
  std::uint64_t* out;
  std::size_t n = 0;
  bool found = false;
};

_Unwind_Reason_Code collect(_Unwind_Context* context, void* arg) {
  auto& u = *static_cast<Unwound*>(arg);
  const auto ip = static_cast<std::uint64_t>(_Unwind_GetIP(context));
  if (ip == 0) return _URC_END_OF_STACK;
  if (!u.found) {  // ringtrace's own frames, then the allocation function's, up to its caller
    u.found = ip == u.caller;
    return _URC_NO_REASON;
  }
  u.out[u.n++] = ip;
  return u.n == kMaxAllocFrames ? _URC_END_OF_STACK : _URC_NO_REASON;
}

}  // namespace

void start_stack_sampling(std::uint64_t mean_bytes, std::uint32_t epoch) noexcept {
  t_mean_bytes = mean_bytes;
  t_sampling_epoch = epoch;
  draw_gap();
}

bool stack_sampling_started(std::uint32_t epoch) noexcept { return t_sampling_epoch == epoch; }

std::size_t sample_stack(std::uint64_t caller, std::uint64_t* out) noexcept {
  draw_gap();
  if (caller == 0) return 0;
  OwnMemory own;  // the unwinder's own allocations, if any, are ringtrace's
  Unwound u{caller, out};
  _Unwind_Backtrace(collect, &u);
  return u.found ? u.n : 0;
}

}  // namespace ringtrace::detail
