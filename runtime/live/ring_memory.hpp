// A ring's memory: `capacity` bytes mapped twice, back to back, so that a record that
// starts before the ring's end and runs past it is written (and read) whole, through
// the second mapping, in the same physical pages. The hot path never wraps an address;
// its slow path moves the next pointer back by `capacity` once per lap.
//
// On the heap the pages are a memfd's; with rings in a file (RingFile) the slot's own
// pages. Either way they are shared mappings, which a fork child must not write: they
// are marked MADV_DONTFORK, so the child has no mapping at all (and the atfork handler
// has unbound every writer before the child can record).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringtrace::detail {

struct RingMemory {
  std::uint8_t* base = nullptr;  // `capacity` bytes, then the same bytes again
  std::size_t capacity = 0;      // a power of two, a multiple of the page size
  bool ok() const { return base != nullptr; }
};

// The smallest ring capacity (one page: both mappings must start on a page boundary).
inline constexpr std::size_t kMinRingBytes = 4096;

// A ring of `capacity` bytes of zero pages (the drainer stops at the first header that
// is 0) on anonymous shared memory, faulted in as they are first written, as any heap
// memory. `error` gets the failing call's errno on failure.
RingMemory map_heap_ring(std::size_t capacity, int& error) noexcept;
// A ring of `capacity` bytes at `offset` of the file `fd` (blocks already allocated).
RingMemory map_file_ring(int fd, std::uint64_t offset, std::size_t capacity, int& error) noexcept;
void unmap_ring(RingMemory& ring) noexcept;

}  // namespace ringtrace::detail
