// Zones named at run time from unbounded data keep memory bounded: 100,000 distinct
// names grow the heap by what 65,536 interned sites take at most, and 100,000 more
// (every one past the bound: the overflow site) grow it by nothing that counts.
// Measured with mallinfo2 (glibc's allocator; meaningless under a sanitizer's).
#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdio>
#include <span>
#include <string>

#include "ringtrace/exporter.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGTRACE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RINGTRACE_TEST_SANITIZED 1
#endif
#endif

// Not built under a sanitizer (mallinfo2 measures glibc's heap, not a sanitizer's): the
// test is neither run nor skipped there.
#if !defined(RINGTRACE_TEST_SANITIZED)
namespace {

class Counting final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    count += events.size();
  }
  std::uint64_t count = 0;
};

std::int64_t heap_in_use() { return static_cast<std::int64_t>(mallinfo2().uordblks); }

void record_names(int from, int to) {
  std::string name;
  for (int i = from; i < to; ++i) {
    name = "request/" + std::to_string(i) + "/handler";
    RINGTRACE_ZONE_DYNAMIC(name);
  }
}

TEST(RuntimeNamesMemory, HundredThousandDistinctNamesStayBounded) {
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;  // every name reaches the drainer
  ringtrace::Session session(config);
  auto counting = std::make_shared<Counting>();
  session.add_exporter(counting);
  session.start();
  record_names(0, 1000);  // the thread's ring, the drainer's first tables
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  const std::int64_t before = heap_in_use();
  record_names(1000, 101000);
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  const std::int64_t after_first = heap_in_use();
  record_names(101000, 201000);
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  const std::int64_t after_second = heap_in_use();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.runtime_names, 65536u);
  EXPECT_EQ(stats.runtime_names_overflowed, 201000u - 65536u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(counting->count, 2 * 201000u);
  // 64,536 more sites: their copies (name, file, function strings, SiteInfo) and index.
  const std::int64_t first = after_first - before, second = after_second - after_first;
  std::printf("heap: +%lld bytes for 100,000 names (64,536 interned), +%lld for 100,000 more (none)\n",
              static_cast<long long>(first), static_cast<long long>(second));
  EXPECT_LT(first, std::int64_t{48} << 20);
  EXPECT_LT(second, std::int64_t{1} << 20);
}

}  // namespace
#endif  // !RINGTRACE_TEST_SANITIZED
