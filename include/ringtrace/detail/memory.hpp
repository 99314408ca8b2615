// The allocation hooks' hot path (Config::memory; ringtrace::memory defines the C and
// C++ allocation functions around it: runtime/memory/, docs/memory.md).
//
// An allocation or a free is one record of its thread's ring, written as a zone's begin
// is: a load of the epoch and of the memory switch, the writer's compare, an `xadd` that
// takes 40 bytes (a free: 32), a clock read and five stores (time, address, size, the
// caller, then the header; a free has no caller). An allocation also counts its bytes
// down to the next one whose stack is kept (a subtraction and a test).
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

// Bytes the thread may still allocate before its next allocation whose call stack is
// kept (Config::memory_stack_bytes: byte sampling, as tcmalloc's and jemalloc's heap
// profilers sample; a new gap is drawn at each sample and at each bind). With no
// stacks asked for it stays far above anything a program allocates.
RINGTRACE_API RINGTRACE_TLS_MODEL inline constinit thread_local std::int64_t t_bytes_to_stack{INT64_MAX};

// The cold path of an allocation or free record: binds the thread, makes room (waiting
// under the block policy, dropping and counting under the drop policy), takes a sampled
// allocation's stack, or leaves the record out (counted) when the thread is inside
// ringtrace's own slow path. `caller`: an allocation's (0 for a free).
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void memory_slow(ExtendedKind subtype, std::uint64_t address,
                                                                 std::uint64_t size, std::uint64_t caller,
                                                                 std::uint32_t epoch) noexcept;

// A realloc of the block at `address` failed after its free was recorded: the block is
// live again (a record the heap's accounting undoes the free by). Rare: always the slow path.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void memory_restored(const void* address) noexcept;

// An allocation of `size` bytes at `address`, made by the code that returns to `caller`.
RINGTRACE_ALWAYS_INLINE void memory_allocated(const void* address, std::size_t size, const void* caller) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0 || g_memory_on.load(std::memory_order_relaxed) == 0) return;
  const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
  const auto c = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(caller));
  WriterBlock* const b = writable(t_writer, epoch);
  std::int64_t& left = t_bytes_to_stack;
  left -= static_cast<std::int64_t>(size);
  if (b == nullptr || left < 0) [[unlikely]] {
    memory_slow(extended_alloc_at, a, size, c, epoch);
    return;
  }
  const std::uintptr_t at = reserve(*b, sizeof(AllocRecord));
  put(at + offsetof(AllocRecord, address), a);
  put(at + offsetof(AllocRecord, size), size);
  put(at + offsetof(AllocRecord, caller), c);
  put(at + offsetof(AllocRecord, ticks), read_ticks_fast());
  publish(at, kMemoryHeader<extended_alloc_at>);
}

// A free of the block at `address`; `size` its caller's (a sized delete), else 0.
RINGTRACE_ALWAYS_INLINE void memory_freed(const void* address, std::size_t size) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0 || g_memory_on.load(std::memory_order_relaxed) == 0) return;
  const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address));
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]] {
    memory_slow(extended_free, a, size, 0, epoch);
    return;
  }
  const std::uintptr_t at = reserve(*b, sizeof(MemoryRecord));
  put(at + offsetof(MemoryRecord, address), a);
  put(at + offsetof(MemoryRecord, size), size);
  put(at + offsetof(MemoryRecord, ticks), read_ticks_fast());
  publish(at, kMemoryHeader<extended_free>);
}

}  // namespace ringtrace::detail
