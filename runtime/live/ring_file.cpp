#include "ring_file.hpp"
#include "owned_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>

namespace ringtrace::detail {
namespace {

std::atomic<std::uint64_t> g_next_serial{1};

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int error) {
  throw std::runtime_error("ringtrace: ring file " + path.string() + ": " + what + ": " + std::strerror(error));
}

// Blocks for [offset, offset + bytes) on disk, so that no later write into the mapping
// can meet a full disk (which a MAP_SHARED mapping reports with SIGBUS).
int allocate(int fd, std::uint64_t offset, std::uint64_t bytes) {
  return ::posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes));
}

}  // namespace

std::unique_ptr<RingFile> RingFile::create(const std::filesystem::path& path, std::uint32_t pid, std::uint64_t start_ns,
                                           std::uint64_t ring_bytes) {
  std::unique_ptr<RingFile> file(new RingFile());
  file->path_ = path;
  file->pid_ = pid;
  file->ring_bytes_ = ring_bytes;
  file->slot_bytes_ = ring_file::slot_bytes(ring_bytes);
  file->serial_ = g_next_serial.fetch_add(1, std::memory_order_relaxed);
  // Created under a random name and renamed onto `path`: never written through a link
  // planted there, never another recording's file (owned_file.hpp). Throws naming `path`.
  file->fd_ = create_owned_file(path, O_RDWR);
  const auto failed = [&](const char* what, int error) {
    remove_owned_file(path, file->fd_);  // the session does not start: leave no file behind
    fail(path, what, error);
  };
  if (const int error = allocate(file->fd_, 0, ring_file::kPage); error != 0) failed("cannot allocate", error);
  void* page = ::mmap(nullptr, ring_file::kPage, PROT_READ | PROT_WRITE, MAP_SHARED, file->fd_, 0);
  if (page == MAP_FAILED) failed("cannot map", errno);
  auto* header = new (page) ring_file::FileHeader{};
  std::memcpy(header->magic, ring_file::kMagic, sizeof header->magic);
  header->version = ring_file::kVersion;
  header->pid = pid;
  header->start_ns = start_ns;
  header->ring_bytes = ring_bytes;
  header->slot_bytes = file->slot_bytes_;
  header->slots.store(0, std::memory_order_release);
  file->header_ = header;
  return file;
}

RingFile::~RingFile() {
  if (header_ != nullptr) ::munmap(header_, ring_file::kPage);
  if (fd_ >= 0) ::close(fd_);
}

RingFile::Slot RingFile::map_slot() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t offset = ring_file::kPage + slots_ * slot_bytes_;
  // Thrown with the error number, which the registry keeps as the reason a thread has no
  // ring (SessionStats::rings_unavailable).
  const auto fail = [](int error) { throw std::system_error(error, std::generic_category(), "ring file slot"); };
  if (const int error = allocate(fd_, offset, slot_bytes_); error != 0) fail(error);
  void* page = ::mmap(nullptr, ring_file::kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(offset));
  if (page == MAP_FAILED) fail(errno);
  Slot slot;
  int error = 0;
  slot.ring = map_file_ring(fd_, offset + ring_file::kPage, ring_bytes_, error);
  if (!slot.ring.ok()) {
    ::munmap(page, ring_file::kPage);
    fail(error);
  }
  ::madvise(page, ring_file::kPage, MADV_DONTFORK);  // as the ring: a fork child never writes it
  // Touch every page of the ring: the thread's events then never fault a page in (a write
  // to a page the kernel has since written back still faults once, to mark it dirty).
  auto* bytes = reinterpret_cast<volatile std::uint8_t*>(slot.ring.base);
  for (std::uint64_t at = 0; at < ring_bytes_; at += ring_file::kPage) bytes[at] = 0;
  slot.header = new (page) ring_file::SlotHeader{};
  slot.header->ring_address.store(reinterpret_cast<std::uintptr_t>(slot.ring.base), std::memory_order_relaxed);
  ++slots_;
  header_->slots.store(slots_, std::memory_order_release);
  return slot;
}

void RingFile::remove() {
  if (static_cast<std::uint32_t>(::getpid()) != pid_) return;
  remove_owned_file(path_, fd_);  // only while the path still names this file
}

void unmap_ring_slot(RingFile::Slot& slot) noexcept {
  if (slot.header != nullptr) ::munmap(slot.header, ring_file::kPage);
  slot.header = nullptr;
  unmap_ring(slot.ring);
}

}  // namespace ringtrace::detail
