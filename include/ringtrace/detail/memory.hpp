// The allocation hooks' hot path (Config::memory; ringtrace::memory defines the C and
// C++ allocation functions around it: runtime/memory/, docs/memory.md).
//
// An allocation or a free is one record of its thread's ring, written as a zone's begin
// is: a load of the epoch and of the memory switch, the writer's compare, an `xadd` that
// takes 32 bytes, a clock read and four stores (time, address, size, then the header).
// No lock, no allocation, no system call; everything else (the thread's first event, a
// full ring, a call nested in ringtrace's own slow path) is the cold memory_slow().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringtrace/detail/platform.hpp"
#include "ringtrace/detail/record.hpp"
#include "ringtrace/detail/writer.hpp"

namespace ringtrace::detail {

// 1 while the running session records allocations (Config::memory); set before the
// epoch at start() and cleared after it at stop().
RINGTRACE_API inline constinit std::atomic<std::uint8_t> g_memory_on{0};

// The cold path of an allocation or free record: binds the thread, makes room (waiting
// under the block policy, dropping and counting under the drop policy), or leaves it out
// (counted) when the thread is inside ringtrace's own slow path.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void memory_slow(ExtendedKind subtype, std::uint64_t address,
                                                                 std::uint64_t size, std::uint32_t epoch) noexcept;

template <ExtendedKind Subtype>
RINGTRACE_ALWAYS_INLINE void memory_record(const void* address, std::size_t size) noexcept {
  static_assert(Subtype == extended_alloc || Subtype == extended_free);
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0 || g_memory_on.load(std::memory_order_relaxed) == 0) return;
  const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]] {
    memory_slow(Subtype, a, size, epoch);
    return;
  }
  const std::uintptr_t at = reserve(*b, sizeof(MemoryRecord));
  put(at + offsetof(MemoryRecord, address), a);
  put(at + offsetof(MemoryRecord, size), size);
  put(at + offsetof(MemoryRecord, ticks), read_ticks_fast());
  publish(at, kMemoryHeader<Subtype>);
}

}  // namespace ringtrace::detail
