#include "crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>  // _mm_crc32_u64, _mm_crc32_u8 (SSE4.2)
#endif

namespace ringtrace::detail {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 reflected

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kTable = make_table();

// On the reflected state (no initial value or final xor applied).
std::uint32_t update_table(std::uint32_t state, const unsigned char* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) state = (state >> 8) ^ kTable[(state ^ p[i]) & 0xFF];
  return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t update_sse42(std::uint32_t state, const unsigned char* p,
                                                             std::size_t n) noexcept {
  std::uint64_t s = state;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    s = _mm_crc32_u64(s, word);
  }
  auto s32 = static_cast<std::uint32_t>(s);
  for (; n != 0; --n, ++p) s32 = _mm_crc32_u8(s32, *p);
  return s32;
}

bool cpu_has_sse42() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_SSE4_2) != 0;
}
const bool kHardware = cpu_has_sse42();
#endif

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t state = ~crc;
#if defined(__x86_64__)
  if (kHardware) return ~update_sse42(state, p, bytes);
#endif
  return ~update_table(state, p, bytes);
}

}  // namespace ringtrace::detail
