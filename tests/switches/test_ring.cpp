// The ring protocol of RingReader on rings written here (the kernel's layout, no kernel):
// wrapped records, LOST records, other record types and threads, damaged sizes.
#include <gtest/gtest.h>

#include <linux/perf_event.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "switch_stream.hpp"

namespace {

using ringtrace::switches::Switch;
using ringtrace::switches::detail::RingReader;

constexpr pid_t kTid = 4242;
constexpr std::uint16_t kOut = PERF_RECORD_MISC_SWITCH_OUT;
constexpr std::uint16_t kPreempt = 1 << 14;  // PERF_RECORD_MISC_SWITCH_OUT_PREEMPT

// A mapping as the kernel lays it out: a header page, then `pages` data pages.
class FakeRing {
 public:
  explicit FakeRing(std::size_t pages = 1)
      : page_size_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))), pages_(pages) {
    memory_.reset(static_cast<unsigned char*>(::operator new ((pages + 1) * page_size_, std::align_val_t{4096})));
    std::memset(memory_.get(), 0, (pages + 1) * page_size_);
    header()->data_offset = page_size_;
    header()->data_size = pages * page_size_;
  }
  perf_event_mmap_page* header() { return reinterpret_cast<perf_event_mmap_page*>(memory_.get()); }
  unsigned char* data() { return memory_.get() + page_size_; }
  std::size_t size() const { return pages_ * page_size_; }
  RingReader reader(pid_t tid = kTid) { return RingReader(memory_.get(), page_size_, pages_, tid); }

  // Starts both indices at `position` (as if that much had been written and read).
  void start_at(std::uint64_t position) {
    header()->data_head = position;
    header()->data_tail = position;
    write_pos_ = position;
  }
  void put(const void* bytes, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) data()[(write_pos_ + i) % size()] = static_cast<const unsigned char*>(bytes)[i];
    write_pos_ += n;
  }
  void header_only(std::uint32_t type, std::uint16_t misc, std::uint16_t size) {
    perf_event_header h{type, misc, size};
    put(&h, sizeof h);
  }
  void trailer(pid_t tid, std::uint64_t time) {
    const std::uint32_t ids[2] = {1, static_cast<std::uint32_t>(tid)};
    put(ids, sizeof ids);
    put(&time, sizeof time);
  }
  void switch_record(std::uint16_t misc, std::uint64_t time, pid_t tid = kTid) {
    header_only(PERF_RECORD_SWITCH, misc, 24);
    trailer(tid, time);
  }
  void lost_record(std::uint64_t lost, std::uint64_t time) {
    header_only(PERF_RECORD_LOST, 0, 40);
    const std::uint64_t body[2] = {7, lost};
    put(body, sizeof body);
    trailer(kTid, time);
  }
  void other_record(std::uint32_t type, std::uint16_t size) {
    header_only(type, 0, size);
    for (std::size_t i = sizeof(perf_event_header); i < size; ++i) put("\xab", 1);
  }
  void publish() { __atomic_store_n(&header()->data_head, write_pos_, __ATOMIC_RELEASE); }  // what the kernel does
  std::uint64_t tail() const { return reinterpret_cast<const perf_event_mmap_page*>(memory_.get())->data_tail; }
  std::uint64_t write_pos() const { return write_pos_; }

 private:
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete (p, std::align_val_t{4096}); }
  };
  std::size_t page_size_;
  std::size_t pages_;
  std::unique_ptr<unsigned char, Free> memory_;
  std::uint64_t write_pos_ = 0;
};

TEST(SwitchRing, ReadsSwitchesInOrderAndHandsTheSpaceBack) {
  FakeRing ring;
  RingReader reader = ring.reader();
  std::vector<Switch> out;
  EXPECT_EQ(reader.read(out), 0u);
  ring.switch_record(kOut, 100);
  ring.switch_record(0, 250);
  ring.switch_record(kOut | kPreempt, 400);
  ring.publish();
  ASSERT_EQ(reader.read(out), 3u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].time_ns, 100u);
  EXPECT_TRUE(out[0].out);
  EXPECT_FALSE(out[0].preempted);
  EXPECT_EQ(out[1].time_ns, 250u);
  EXPECT_FALSE(out[1].out);
  EXPECT_FALSE(out[1].preempted);
  EXPECT_TRUE(out[2].out);
  EXPECT_TRUE(out[2].preempted);
  for (const Switch& s : out) EXPECT_FALSE(s.after_loss);
  EXPECT_EQ(ring.tail(), ring.write_pos());  // data_tail stored: the kernel may reuse the space
  EXPECT_EQ(reader.read(out), 0u);
  EXPECT_EQ(out.size(), 3u);  // appends, never clears
  EXPECT_EQ(reader.lost(), 0u);
  EXPECT_EQ(reader.malformed(), 0u);
}

TEST(SwitchRing, PreemptOnAnInIsNotPreempted) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.switch_record(kPreempt, 5);  // the flag means something only on an out
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_FALSE(out[0].out);
  EXPECT_FALSE(out[0].preempted);
}

// Every place a record can straddle the end of the ring: its header, its trailer, one byte.
TEST(SwitchRing, RecordsWrappingTheEndAreCopiedOut) {
  FakeRing ring;
  const std::uint64_t size = ring.size();
  for (std::uint64_t back = 1; back <= 48; ++back) {
    ring.start_at(7 * size - back);  // well past the first lap, `back` bytes before the end
    RingReader reader = ring.reader();
    ring.lost_record(3, 90);
    ring.switch_record(kOut | kPreempt, 1000 + back);
    ring.switch_record(0, 2000 + back);
    ring.publish();
    std::vector<Switch> out;
    ASSERT_EQ(reader.read(out), 2u) << back;
    EXPECT_EQ(out[0].time_ns, 1000 + back);
    EXPECT_TRUE(out[0].out && out[0].preempted && out[0].after_loss);
    EXPECT_EQ(out[1].time_ns, 2000 + back);
    EXPECT_FALSE(out[1].out || out[1].after_loss);
    EXPECT_EQ(reader.lost(), 3u);
    EXPECT_EQ(ring.tail(), ring.write_pos());
    EXPECT_EQ(reader.malformed(), 0u);
  }
}

TEST(SwitchRing, PositionsPastTwoToTheSixtyFourWrap) {
  FakeRing ring;
  ring.start_at(std::numeric_limits<std::uint64_t>::max() - 15);  // the 64-bit counters wrap too
  RingReader reader = ring.reader();
  ring.switch_record(kOut, 1);
  ring.switch_record(0, 2);
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 2u);
  EXPECT_EQ(out[1].time_ns, 2u);
  EXPECT_EQ(ring.tail(), 32u);
}

TEST(SwitchRing, LostRecordsAreCountedAndMarkTheNextSwitchEvenInALaterRead) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.switch_record(kOut, 10);
  ring.lost_record(5, 20);
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_EQ(reader.lost(), 5u);
  ring.switch_record(kOut, 30);
  ring.switch_record(0, 40);
  ring.lost_record(2, 50);
  ring.lost_record(1, 60);
  ring.switch_record(0, 70);
  ring.publish();
  ASSERT_EQ(reader.read(out), 3u);
  EXPECT_EQ(reader.lost(), 8u);
  EXPECT_FALSE(out[0].after_loss);
  EXPECT_TRUE(out[1].after_loss);  // the first switch after the LOST of the earlier read
  EXPECT_FALSE(out[2].after_loss);
  EXPECT_TRUE(out[3].after_loss);
  EXPECT_EQ(reader.malformed(), 0u);
}

TEST(SwitchRing, OtherRecordTypesAndOtherThreadsAreSkipped) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.other_record(PERF_RECORD_COMM, 56);
  ring.switch_record(kOut, 10, kTid + 1);  // another thread's record: not ours
  ring.other_record(PERF_RECORD_SWITCH_CPU_WIDE, 40);
  ring.other_record(9999, 8);  // a type from the future, header only
  ring.switch_record(kOut, 20);
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_EQ(out[0].time_ns, 20u);
  EXPECT_EQ(reader.malformed(), 0u);
  EXPECT_EQ(ring.tail(), ring.write_pos());
}

TEST(SwitchRing, ZeroSizedRecordEndsTheReadInsteadOfLooping) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.switch_record(kOut, 10);
  ring.header_only(PERF_RECORD_SWITCH, 0, 0);
  ring.switch_record(0, 30);  // cannot be framed after a record of size 0: dropped
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_EQ(reader.malformed(), 1u);
  EXPECT_EQ(ring.tail(), ring.write_pos());  // skipped to head
  ring.switch_record(0, 40);                 // and the stream goes on
  ring.publish();
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_EQ(out[1].time_ns, 40u);
  EXPECT_TRUE(out[1].after_loss);
}

TEST(SwitchRing, SizesPastWhatIsWrittenOrLargerThanTheRingAreNotRead) {
  for (const std::uint16_t size : {std::uint16_t{32}, std::uint16_t{4104}, std::uint16_t{65535}}) {
    FakeRing ring;
    RingReader reader = ring.reader();
    ring.header_only(PERF_RECORD_SWITCH, 0, size);  // claims more than the 8 + 16 written
    ring.trailer(kTid, 5);
    ring.publish();
    std::vector<Switch> out;
    EXPECT_EQ(reader.read(out), 0u) << size;
    EXPECT_EQ(reader.malformed(), 1u) << size;
    EXPECT_EQ(ring.tail(), ring.write_pos()) << size;
  }
}

TEST(SwitchRing, ShortSwitchRecordIsSkippedByItsSize) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.other_record(PERF_RECORD_SWITCH, 16);  // no room for the trailer
  ring.switch_record(kOut, 7);
  ring.publish();
  std::vector<Switch> out;
  ASSERT_EQ(reader.read(out), 1u);
  EXPECT_EQ(out[0].time_ns, 7u);
  EXPECT_TRUE(out[0].after_loss);  // what the short record was is unknown
  EXPECT_EQ(reader.malformed(), 1u);
}

TEST(SwitchRing, HeadMoreThanOneRingAheadDropsEverything) {
  FakeRing ring;
  RingReader reader = ring.reader();
  ring.header()->data_head = ring.size() + 8;  // impossible in a ring whose tail the kernel respects
  std::vector<Switch> out;
  EXPECT_EQ(reader.read(out), 0u);
  EXPECT_EQ(reader.malformed(), 1u);
  EXPECT_EQ(ring.tail(), ring.size() + 8);
  ring.header()->data_head = ring.size() + 12;  // fewer bytes than a header
  EXPECT_EQ(reader.read(out), 0u);
  EXPECT_EQ(reader.malformed(), 2u);
}

TEST(SwitchRing, RingWhoseSizeIsNotAPowerOfTwoIsNotRead) {
  FakeRing ring(2);
  ring.header()->data_size = 3 * 4096;
  RingReader reader = ring.reader();
  EXPECT_FALSE(reader.attached());
  ring.switch_record(kOut, 1);
  ring.publish();
  std::vector<Switch> out;
  EXPECT_EQ(reader.read(out), 0u);
  RingReader detached;
  EXPECT_EQ(detached.read(out), 0u);
}

}  // namespace
