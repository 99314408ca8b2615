// A map from 64-bit keys to 32-bit values for the exporters' per-event lookups (pstats'
// caller edges, the table's (parent group, site) transitions): open addressing with
// linear probing, never erased, at most half full. Key and value share a 16-byte slot,
// so a probe touches one cache line. The all-ones key is reserved (marks empty slots);
// callers build keys from two 32-bit ids below 2^32 - 1, so it never occurs.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace ringtrace::detail {

class U64Map {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  static std::uint64_t key(std::uint32_t high, std::uint32_t low) {
    return (static_cast<std::uint64_t>(high) << 32) | low;
  }

  U64Map() { clear(); }
  void clear() {
    slots_.assign(kInitialSlots, Slot{});
    mask_ = kInitialSlots - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(kInitialSlots));
    size_ = 0;
  }

  // The value stored for `k`, or `absent`.
  std::uint32_t find(std::uint64_t k, std::uint32_t absent) const {
    for (std::size_t i = slot_of(k);; i = next(i)) {
      if (slots_[i].key == k) return slots_[i].value;
      if (slots_[i].key == kEmpty) return absent;
    }
  }

  // The value stored for `k`, or `fresh` after inserting it.
  std::uint32_t find_or_insert(std::uint64_t k, std::uint32_t fresh) {
    if ((size_ + 1) * 2 > slots_.size()) [[unlikely]]
      grow();
    for (std::size_t i = slot_of(k);; i = next(i)) {
      Slot& s = slots_[i];
      if (s.key == k) return s.value;
      if (s.key == kEmpty) {
        s = Slot{k, fresh};
        ++size_;
        return fresh;
      }
    }
  }

 private:
  static constexpr std::size_t kInitialSlots = 64;
  struct alignas(16) Slot {
    std::uint64_t key = kEmpty;
    std::uint32_t value = 0;
  };

  // Fibonacci hashing on the top bits of the product, which depend on every bit of the
  // key (the low bits would ignore the key's upper half: every key with the same low id
  // would share one probe chain).
  std::size_t slot_of(std::uint64_t k) const { return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::size_t next(std::size_t i) const { return (i + 1) & mask_; }

  [[gnu::noinline]] void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    shift_ -= 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      std::size_t i = slot_of(s.key);
      while (slots_[i].key != kEmpty) i = next(i);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;  // 64 - log2(slots)
  std::size_t size_ = 0;
};

}  // namespace ringtrace::detail
