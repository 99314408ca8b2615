// Rich events recorded live: values, texts (cut, wrapped around the ring), flows and
// async spans across threads, categories switched while threads record, and what
// attaches to a zone that was dropped or filtered out.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

RecordedTrace record(Config config, const std::function<void()>& body, SessionStats* stats = nullptr) {
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  body();
  session.stop();
  if (stats != nullptr) *stats = session.stats();
  return memory->trace();
}

std::string name_of(const RecordedTrace& t, const Event& e) { return t.sites[e.site].name; }

TEST(RichCapture, ValuesAndTextsAttachToTheInnermostZone) {
  const std::string hostile("a\"b\\\n\x01\xFF\0z", 9);
  const RecordedTrace t = record(Config{}, [&] {
    RINGTRACE_ZONE("outer");
    RINGTRACE_ZONE_VALUE("n", 42);
    {
      RINGTRACE_ZONE("inner");
      RINGTRACE_ZONE_VALUE("x", 2.5);
      RINGTRACE_ZONE_VALUE("u", 7u);
      RINGTRACE_ZONE_TEXT("path", hostile.data(), hostile.size());
      RINGTRACE_ZONE_TEXT("empty", "", 0);
    }
    RINGTRACE_ZONE_VALUE("after", std::int64_t{-5});
  });
  const RecordedTraceContext context(t);
  std::vector<std::string> seen;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) seen.push_back(std::string("begin ").append(name_of(t, e)));
    if (e.kind == EventKind::zone_end) seen.push_back(std::string("end ").append(name_of(t, e)));
    if (e.kind != EventKind::arg) continue;
    std::string v;
    if ((e.flags & EventFlags::text) != 0) {
      v = std::string("text:").append(context.text(e));
      EXPECT_EQ(e.flags & EventFlags::truncated, 0);
    } else if ((e.flags & EventFlags::value_double) != 0) {
      v = std::string("double:").append(std::to_string(e.value.d));
    } else {
      v = std::string("int:").append(std::to_string(e.value.i));
    }
    seen.push_back(name_of(t, e) + "@" + std::to_string(e.depth) + "=" + v);
    EXPECT_EQ(t.sites[e.site].kind, SiteKind::value);
  }
  const std::vector<std::string> want = {"begin outer",    "n@1=int:42",
                                         "begin inner",    "x@2=double:2.500000",
                                         "u@2=int:7",      std::string("path@2=text:").append(hostile),
                                         "empty@2=text:",  "end inner",
                                         "after@1=int:-5", "end outer"};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(t.stats.recorded, t.events.size());
  EXPECT_EQ(t.stats.late_events, 0u);  // values read no clock and are never "late"
}

TEST(RichCapture, LongTextsAreCutAndMarked) {
  std::string big(5000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  Config small;
  small.buffer_records = 64;  // the smallest ring, 4096 bytes: a quarter of it is still 1024
  for (const auto& [config, cut] : {std::pair{Config{}, std::size_t{1024}}, std::pair{small, std::size_t{1024}}}) {
    const std::size_t limit = cut;  // a copy: lambdas cannot capture structured bindings before C++20's fix in clang 16
    const RecordedTrace t = record(config, [&] {
      RINGTRACE_ZONE("z");
      RINGTRACE_ZONE_TEXT("big", big.data(), big.size());
      RINGTRACE_ZONE_TEXT("fits", big.data(), limit);
    });
    const RecordedTraceContext context(t);
    std::vector<std::pair<std::string, bool>> texts;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::arg) {
        texts.emplace_back(std::string(context.text(e)), (e.flags & EventFlags::truncated) != 0);
      }
    }
    ASSERT_EQ(texts.size(), 2u) << limit;
    EXPECT_EQ(texts[0].first, big.substr(0, limit));
    EXPECT_TRUE(texts[0].second);
    EXPECT_EQ(texts[1].first, big.substr(0, limit));
    EXPECT_FALSE(texts[1].second);
  }
}

TEST(RichCapture, TextsWrapAroundTheRingIntact) {
  Config config;
  config.buffer_records = 64;
  config.overflow = OverflowPolicy::block;  // lossless: every text must come back
  constexpr int kTexts = 3000;
  const RecordedTrace t = record(config, [&] {
    for (int i = 0; i < kTexts; ++i) {
      RINGTRACE_ZONE("z");
      std::string text = std::to_string(i) + ":";
      text.append(static_cast<std::size_t>(i * 7 % 200), static_cast<char>('A' + i % 26));
      RINGTRACE_ZONE_TEXT("t", text.data(), text.size());
    }
  });
  const RecordedTraceContext context(t);
  int next = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::arg) continue;
    std::string want = std::to_string(next) + ":";
    want.append(static_cast<std::size_t>(next * 7 % 200), static_cast<char>('A' + next % 26));
    ASSERT_EQ(context.text(e), want) << next;
    ++next;
  }
  EXPECT_EQ(next, kTexts);
  EXPECT_EQ(t.stats.dropped, 0u);
}

TEST(RichCapture, FlowsAndAsyncSpansAcrossThreads) {
  constexpr int kItems = 200;
  const RecordedTrace t = record(Config{}, [&] {
    std::atomic<int> handed{-1};
    std::thread producer([&] {
      for (int i = 0; i < kItems; ++i) {
        {
          RINGTRACE_ZONE("produce");
          RINGTRACE_FLOW_OUT(i + 1);
          RINGTRACE_ASYNC_BEGIN("job", i + 1);
        }
        handed.store(i, std::memory_order_release);
        while (handed.load(std::memory_order_acquire) != -2 - i) std::this_thread::yield();
      }
    });
    std::thread consumer([&] {
      for (int i = 0; i < kItems; ++i) {
        while (handed.load(std::memory_order_acquire) != i) std::this_thread::yield();
        {
          RINGTRACE_ZONE("consume");
          RINGTRACE_FLOW_IN(i + 1);
          RINGTRACE_ASYNC_END("job", i + 1);
        }
        handed.store(-2 - i, std::memory_order_release);
      }
    });
    producer.join();
    consumer.join();
  });
  std::map<std::uint64_t, std::pair<ThreadId, ThreadId>> flows, spans;
  std::map<ThreadId, std::string> open;
  for (const Event& e : t.events) {
    switch (e.kind) {
      case EventKind::zone_begin:
        open[e.thread] = name_of(t, e);
        break;
      case EventKind::zone_end:
        open.erase(e.thread);
        break;
      case EventKind::flow_out:
        EXPECT_EQ(open[e.thread], "produce");
        EXPECT_EQ(e.depth, 1u);
        flows[e.value.u].first = e.thread;
        break;
      case EventKind::flow_in:
        EXPECT_EQ(open[e.thread], "consume");
        flows[e.value.u].second = e.thread;
        break;
      case EventKind::async_begin:
        EXPECT_EQ(name_of(t, e), "job");
        spans[e.value.u].first = e.thread;
        break;
      case EventKind::async_end:
        EXPECT_EQ(name_of(t, e), "job");
        spans[e.value.u].second = e.thread;
        break;
      default:
        break;
    }
  }
  ASSERT_EQ(flows.size(), static_cast<std::size_t>(kItems));
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(kItems));
  for (const auto& [id, ends] : flows) EXPECT_NE(ends.first, ends.second) << id;
  for (const auto& [id, ends] : spans) EXPECT_NE(ends.first, ends.second) << id;
  EXPECT_EQ(t.stats.dropped, 0u);
}

// Threads record while the category is switched between phases: exactly the zones of
// the phases in which it was on are kept, with their values; nothing is counted lost.
TEST(RichCapture, CategoriesSwitchedWhileThreadsRecord) {
  constexpr int kThreads = 4, kPhases = 10, kZones = 100;
  Config config;
  config.overflow = OverflowPolicy::block;
  set_category_enabled("rt_net", true);
  std::map<std::int64_t, int> kept;  // phase -> zones
  const RecordedTrace t = record(config, [&] {
    std::barrier sync(kThreads + 1);
    std::vector<std::thread> threads;
    for (int w = 0; w < kThreads; ++w) {
      threads.emplace_back([&] {
        for (int p = 0; p < kPhases; ++p) {
          sync.arrive_and_wait();  // the category is set for phase p
          for (int i = 0; i < kZones; ++i) {
            RINGTRACE_ZONE_IN("rt_net", "recv");
            RINGTRACE_ZONE_VALUE("phase", p);
            RINGTRACE_ZONE("child");  // recorded, and its parent is not
          }
          sync.arrive_and_wait();  // phase p is over
        }
      });
    }
    for (int p = 0; p < kPhases; ++p) {
      set_category_enabled("rt_net", p % 3 != 1);
      sync.arrive_and_wait();
      sync.arrive_and_wait();
    }
    for (auto& th : threads) th.join();
  });
  set_category_enabled("rt_net", true);
  int recv = 0, child = 0;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) (name_of(t, e) == "recv" ? recv : child) += 1;
    if (e.kind == EventKind::arg) {
      EXPECT_EQ(e.depth, 1u);  // on "recv", never on another zone
      kept[e.value.i] += 1;
    }
  }
  for (int p = 0; p < kPhases; ++p) EXPECT_EQ(kept[p], p % 3 != 1 ? kThreads * kZones : 0) << "phase " << p;
  EXPECT_EQ(recv, 7 * kThreads * kZones);
  EXPECT_EQ(child, kPhases * kThreads * kZones);
  EXPECT_EQ(t.stats.dropped, 0u);
  for (const RecordedSite& s : t.sites) {
    if (s.name == "recv") {
      EXPECT_EQ(s.category, "rt_net");
    }
  }
}

TEST(RichCapture, ConfigDisabledCategoriesAndTheSwitch) {
  set_category_enabled("rt_db", true);
  Config config;
  config.disabled_categories = {"rt_db"};
  const RecordedTrace t = record(config, [] {
    { RINGTRACE_ZONE_IN("rt_db", "query"); }
    { RINGTRACE_ZONE_IN("rt_other", "kept"); }
    EXPECT_FALSE(category_enabled("rt_db"));
    set_category_enabled("rt_db", true);
    { RINGTRACE_ZONE_IN("rt_db", "query2"); }
  });
  std::vector<std::string> names;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) names.push_back(name_of(t, e));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"kept", "query2"}));
  EXPECT_TRUE(category_enabled("rt_db"));
}

// A zone recorded inside a zone whose category is off (issue 31's matrix): its values and
// texts are its own and recorded; those of the switched-off zone are left out with it, and
// nothing is counted as dropped.
TEST(RichCapture, ValuesOfAZoneInsideASwitchedOffOneAreRecorded) {
  Config config;
  config.disabled_categories = {"rt_off"};
  SessionStats stats;
  const RecordedTrace t = record(
      config,
      [] {
        for (int i = 0; i < 3; ++i) {
          RINGTRACE_ZONE_IN("rt_off", "hidden");
          RINGTRACE_ZONE_VALUE("left_out", 1);
          {
            RINGTRACE_ZONE("inner");
            RINGTRACE_ZONE_VALUE("k", 7);
            RINGTRACE_ZONE_TEXT("label", "mine");
            {
              RINGTRACE_ZONE_IN("rt_off", "hidden_again");
              RINGTRACE_ZONE_VALUE("left_out_too", 2);
            }
            RINGTRACE_ZONE_VALUE("k_after", 9);
          }
          RINGTRACE_ZONE_VALUE("left_out", 3);
        }
      },
      &stats);
  std::map<std::string, int> args;
  int begins = 0;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) {
      ++begins;
      EXPECT_EQ(name_of(t, e), "inner");
    }
    if (e.kind == EventKind::arg) ++args[name_of(t, e)];
  }
  EXPECT_EQ(begins, 3);
  EXPECT_EQ(args, (std::map<std::string, int>{{"k", 3}, {"k_after", 3}, {"label", 3}}));
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.recorded, 3u * 5);  // begin, three args, end
}

// Drop mode with a tiny ring: inner zones are dropped whole, and what attaches to a
// dropped zone must never land on the zone outside it; it is counted as dropped.
TEST(RichCapture, AttachmentsOfDroppedZonesAreDroppedNotMisplaced) {
  Config config;
  config.buffer_records = 64;
  config.drain_interval = std::chrono::microseconds(50000);  // the ring fills between passes
  config.yield_to_drainer = false;                           // drops must happen: no yield to let the drainer keep up
  std::uint64_t produced = 0;
  const RecordedTrace t = record(config, [&] {
    for (int round = 0; round < 50; ++round) {
      RINGTRACE_ZONE("outer");  // may be dropped too: then everything inside is
      produced += 2;
      for (int i = 0; i < 100; ++i) {
        RINGTRACE_ZONE("inner");
        RINGTRACE_ZONE_VALUE("i", i);
        RINGTRACE_FLOW_OUT(i);
        produced += 4;
      }
    }
  });
  std::vector<std::string> stack;
  std::uint64_t attached = 0;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) stack.push_back(name_of(t, e));
    if (e.kind == EventKind::zone_end) stack.pop_back();
    if (e.kind == EventKind::arg || e.kind == EventKind::flow_out) {
      ASSERT_FALSE(stack.empty());
      EXPECT_EQ(stack.back(), "inner");
      ++attached;
    }
  }
  EXPECT_GT(t.stats.dropped, 0u);
  EXPECT_GT(attached, 0u);
  EXPECT_EQ(t.stats.recorded + t.stats.dropped, produced);
}

}  // namespace
}  // namespace ringtrace
