#include "ring_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace ringtrace::detail {
namespace {

// Reserves 2 * capacity of address space, then maps [offset, offset + capacity) of `fd`
// at both halves.
RingMemory map_twice(int fd, std::uint64_t offset, std::size_t capacity, int& error) noexcept {
  void* area = ::mmap(nullptr, 2 * capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) {
    error = errno;
    return {};
  }
  auto* const base = static_cast<std::uint8_t*>(area);
  for (int half = 0; half < 2; ++half) {
    void* at = ::mmap(base + half * capacity, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                      static_cast<off_t>(offset));
    if (at == MAP_FAILED) {
      error = errno;
      ::munmap(area, 2 * capacity);
      return {};
    }
  }
  // A fork child has neither mapping: its copy of the registry is fresh, and nothing of
  // the parent's rings may be written from it.
  ::madvise(area, 2 * capacity, MADV_DONTFORK);
  return RingMemory{base, capacity};
}

}  // namespace

RingMemory map_heap_ring(std::size_t capacity, int& error) noexcept {
  const int fd = ::memfd_create("ringtrace-ring", MFD_CLOEXEC);
  if (fd < 0) {
    error = errno;
    return {};
  }
  RingMemory ring;
  if (::ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
    error = errno;
  } else {
    ring = map_twice(fd, 0, capacity, error);
  }
  ::close(fd);  // the mappings keep the memory
  return ring;
}

RingMemory map_file_ring(int fd, std::uint64_t offset, std::size_t capacity, int& error) noexcept {
  return map_twice(fd, offset, capacity, error);
}

void unmap_ring(RingMemory& ring) noexcept {
  if (ring.base != nullptr) ::munmap(ring.base, 2 * ring.capacity);
  ring = RingMemory{};
}

}  // namespace ringtrace::detail
