// Rings in a shared file mapping (BinaryTraceOptions::rings_in_file): a session whose
// binary trace exporter asks for it maps every thread's ring from one file beside the
// trace (MAP_SHARED), so that the kernel keeps what a killed process had published.
// Layout: runtime/core/ring_layout.hpp and docs/file-format.md.
//
// A slot is mapped on its own (header page + ring) when a thread binds its first event
// in the session (the slow path, under the registry's mutex): the file grows by one
// slot, which is allocated on disk and touched before the thread records into it, so
// that recording never waits for a block to be allocated. A ring keeps its slot while
// its ThreadBuffer lives (recycled buffers reuse it within the session); a buffer bound
// in a later session unmaps it (only its own thread writes into it). At stop() the file
// is removed: the trace file then holds everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "ring_layout.hpp"
#include "ring_memory.hpp"

namespace ringtrace::detail {

class RingFile {
 public:
  struct Slot {
    ring_file::SlotHeader* header = nullptr;  // the slot's first page, mapped on its own
    RingMemory ring;                          // the ring, mapped twice (ring_memory.hpp)
  };

  // Creates (or truncates) `path` for rings of `ring_bytes` bytes. Throws
  // std::runtime_error naming the path and the system's reason.
  static std::unique_ptr<RingFile> create(const std::filesystem::path& path, std::uint32_t pid, std::uint64_t start_ns,
                                          std::uint64_t ring_bytes);
  ~RingFile();  // closes the file; never removes it (a fork child's copy must not)
  RingFile(const RingFile&) = delete;
  RingFile& operator=(const RingFile&) = delete;

  // A new slot at the end of the file, mapped, allocated on disk and touched. Throws
  // std::bad_alloc when the file cannot grow or be mapped (the slow path counts the
  // thread's events as dropped, as for a ring that cannot be allocated).
  Slot map_slot();
  // Tells mappings of this file apart from those of other sessions' files.
  std::uint64_t serial() const { return serial_; }
  const std::filesystem::path& path() const { return path_; }
  // At stop(), in the process that created it, once the trace file holds everything:
  // removes the file (its slots stay mapped until their buffers are bound again).
  void remove();

 private:
  RingFile() = default;
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint32_t pid_ = 0;
  std::uint64_t ring_bytes_ = 0;
  std::uint64_t slot_bytes_ = 0;
  std::uint64_t slots_ = 0;
  std::uint64_t serial_ = 0;
  ring_file::FileHeader* header_ = nullptr;  // page 0, mapped
  std::mutex mutex_;                         // map_slot (the registry's mutex already orders binds; cheap insurance)
};

// Unmaps a slot of a RingFile (possibly of a session that has ended).
void unmap_ring_slot(RingFile::Slot& slot) noexcept;

}  // namespace ringtrace::detail
