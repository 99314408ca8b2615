// The ring file (`<trace>.rings.<suffix>`): the threads' rings placed in a shared file
// mapping (BinaryTraceOptions::rings_in_file), so that what a process killed with
// SIGKILL had published but the drainer had not yet written to the trace file is still
// on disk. Internal: shared by the runtime (which maps the slots) and the binary file's
// reader (which recovers from them). Layout in docs/file-format.md, "The ring file".
//
// All integers are little-endian (the machine's own order: the file is read on the host
// that wrote it). The file is a header page, then slots of `slot_bytes` each: a slot's
// first page is its header, the ring's `ring_bytes` bytes of records follow.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringtrace/detail/writer.hpp"  // WriterBlock: the hot path's view of a slot

namespace ringtrace::detail::ring_file {

inline constexpr char kMagic[8] = {'\x89', 'R', 'T', 'R', 'I', 'N', 'G', '\n'};
inline constexpr std::uint32_t kVersion = 2;  // version 1: 16-byte records (no longer read)
inline constexpr std::size_t kPage = 4096;
inline constexpr std::uint32_t kUnknownThread = 0xFFFFFFFFu;  // SlotHeader::thread before the drainer saw it
inline constexpr std::uint32_t kSlotBound = 1;                // SlotHeader::state: a thread records into it
inline constexpr std::size_t kMaxName = 192;                  // bytes of a thread's name kept in its slot

// Page 0 of the file.
struct FileHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t pid;                 // the recording process (as in the trace's session frame)
  std::uint64_t start_ns;            // the session's start, CLOCK_MONOTONIC (as in the session frame)
  std::uint64_t ring_bytes;          // bytes per ring (a power of two, a multiple of kPage)
  std::uint64_t slot_bytes;          // bytes per slot: a header page and the ring
  std::atomic<std::uint64_t> slots;  // slots in the file so far
};

// The first page of every slot. Written by the thread that binds the slot (state,
// os_tid, name, the writer block and ring address) and by the drainer (thread).
struct SlotHeader {
  std::atomic<std::uint32_t> state;   // kSlotBound while a thread's ring; 0 while being (re)bound
  std::atomic<std::uint32_t> thread;  // the thread's id in the trace file, or kUnknownThread
  std::uint64_t os_tid;
  std::atomic<std::uint32_t> name_bytes;  // of `name`; 0 while it is being written
  char name[kMaxName];
  // The thread's WriterBlock: its `next` (an address in the writing process) says where
  // its next record goes, the same store as a ring on the heap, at another address.
  WriterBlock writer;
  // Where the ring was mapped in the writing process: `writer.next - ring_address` is
  // the byte offset (modulo ring_bytes) of the next record.
  // A slot is bound to one thread of one session at a time, its ring zeroed: its records
  // start at ring offset 0.
  std::atomic<std::uint64_t> ring_address;
};

// Byte offsets, for the reader and the docs (the structs above are what the runtime maps).
inline constexpr std::size_t kHeaderPidOffset = 12;
inline constexpr std::size_t kHeaderStartOffset = 16;
inline constexpr std::size_t kHeaderRingBytesOffset = 24;
inline constexpr std::size_t kHeaderSlotBytesOffset = 32;
inline constexpr std::size_t kHeaderSlotsOffset = 40;
inline constexpr std::size_t kSlotStateOffset = 0;
inline constexpr std::size_t kSlotThreadOffset = 4;
inline constexpr std::size_t kSlotTidOffset = 8;
inline constexpr std::size_t kSlotNameBytesOffset = 16;
inline constexpr std::size_t kSlotNameOffset = 20;
inline constexpr std::size_t kSlotNextOffset = 256;
inline constexpr std::size_t kSlotLapBaseOffset = 280;
inline constexpr std::size_t kSlotRingAddressOffset = 320;

static_assert(offsetof(FileHeader, pid) == kHeaderPidOffset && offsetof(FileHeader, start_ns) == kHeaderStartOffset &&
              offsetof(FileHeader, ring_bytes) == kHeaderRingBytesOffset &&
              offsetof(FileHeader, slot_bytes) == kHeaderSlotBytesOffset &&
              offsetof(FileHeader, slots) == kHeaderSlotsOffset);
static_assert(offsetof(SlotHeader, state) == kSlotStateOffset && offsetof(SlotHeader, thread) == kSlotThreadOffset &&
              offsetof(SlotHeader, os_tid) == kSlotTidOffset &&
              offsetof(SlotHeader, name_bytes) == kSlotNameBytesOffset &&
              offsetof(SlotHeader, name) == kSlotNameOffset && offsetof(SlotHeader, writer) == kSlotNextOffset &&
              offsetof(WriterBlock, next) == 0 && offsetof(SlotHeader, ring_address) == kSlotRingAddressOffset &&
              offsetof(SlotHeader, writer) + offsetof(WriterBlock, lap_base) == kSlotLapBaseOffset);
static_assert(sizeof(FileHeader) <= kPage && sizeof(SlotHeader) <= kPage);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uintptr_t>::is_always_lock_free,
              "atomics in a shared mapping must be plain memory");

// Bytes of one slot for rings of `ring_bytes` bytes (a multiple of kPage).
inline std::uint64_t slot_bytes(std::uint64_t ring_bytes) { return kPage + ring_bytes; }

}  // namespace ringtrace::detail::ring_file
