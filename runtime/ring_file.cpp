#include "ring_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

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

std::unique_ptr<RingFile> RingFile::create(const std::filesystem::path& path, std::uint32_t pid,
                                           std::uint64_t start_ns, std::uint64_t ring_records) {
  std::unique_ptr<RingFile> file(new RingFile());
  file->path_ = path;
  file->pid_ = pid;
  file->ring_records_ = ring_records;
  file->slot_bytes_ = ring_file::slot_bytes(ring_records);
  file->serial_ = g_next_serial.fetch_add(1, std::memory_order_relaxed);
  file->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file->fd_ < 0) fail(path, "cannot create", errno);
  const auto failed = [&](const char* what, int error) {
    ::unlink(path.c_str());  // the session does not start: leave no file behind
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
  header->ring_records = ring_records;
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
  if (allocate(fd_, offset, slot_bytes_) != 0) throw std::bad_alloc();
  void* map = ::mmap(nullptr, slot_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(offset));
  if (map == MAP_FAILED) throw std::bad_alloc();
  // Touch every page: the thread's events then never fault a page in (a write to a page
  // the kernel has since written back still faults once, to mark it dirty again).
  auto* bytes = static_cast<volatile char*>(map);
  for (std::uint64_t at = 0; at < slot_bytes_; at += ring_file::kPage) bytes[at] = 0;
  Slot slot;
  slot.map = map;
  slot.bytes = slot_bytes_;
  slot.header = new (map) ring_file::SlotHeader{};
  slot.ring = reinterpret_cast<Record*>(static_cast<char*>(map) + ring_file::kPage);
  ++slots_;
  header_->slots.store(slots_, std::memory_order_release);
  return slot;
}

void RingFile::remove() {
  if (static_cast<std::uint32_t>(::getpid()) != pid_) return;
  ::unlink(path_.c_str());
}

void unmap_ring_slot(void* map, std::size_t bytes) noexcept {
  if (map != nullptr) ::munmap(map, bytes);
}

}  // namespace ringtrace::detail
