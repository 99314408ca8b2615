#include "ring_cursor.hpp"

#include "allocator.hpp"

namespace ringtrace::detail {

RingCursor::~RingCursor() {
  runtime_free(stage);
  runtime_free(tail);
}

std::uint64_t RingCursor::written_end() const {
  const ThreadBuffer& b = *buffer;
  const std::uint64_t mask = b.ring.capacity - 1;
  const std::uint64_t reserved = read_pos + ((b.next_offset() - read_pos) & mask);
  std::uint64_t pos = read_pos;
  while (pos < reserved) {
    const std::uint8_t* const at = b.ring.base + (pos & mask);
    const std::uint64_t header = load_header(at);
    if (header == 0) break;
    const std::uint64_t bytes = ring_record_bytes(header, at, reserved - pos);
    if (bytes == 0) break;  // cannot happen: this process wrote it
    pos += bytes;
  }
  return pos;
}

void RingCursor::release_read() {
  if (buffer == nullptr || zeroed_pos == read_pos) return;  // detached: no ring
  zero_slots(buffer->ring.base + (zeroed_pos & (buffer->ring.capacity - 1)), read_pos - zeroed_pos);
  zeroed_pos = read_pos;
  buffer->read_index.store(read_pos, std::memory_order_release);
}

}  // namespace ringtrace::detail
