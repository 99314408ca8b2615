// Threads are listed by the time of their first event, identically in stats() and in
// every exporter, whatever order the drainer happened to see them in.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::string worker_name(int k) { return std::string("w").append(std::to_string(k)); }

TEST(ThreadOrder, ByFirstEventInStatsAndEveryExporter) {
  constexpr int kThreads = 5;
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "ringtrace_thread_order.json";
  // Rings of 64 records: each thread's 1000 zones overflow it, so that the table lists
  // threads in dropped_by_thread (the drop policy never makes a thread wait).
  ringtrace::Config config;
  config.buffer_records = 64;
  // The drainer only when a ring is full (a drop wakes it) or at stop: with the defaults
  // a thread woke it at half a ring and yielded to it, and on a loaded machine it often
  // kept up (no drop: 12 failures in 60 runs).
  config.high_water = 1.0;
  config.yield_to_drainer = false;
  config.drain_interval = std::chrono::seconds(10);
  ringtrace::Session session(config);
  std::ostringstream summary_text, table_text;
  auto summary = ringtrace::ops_summary_exporter(summary_text);
  auto table = ringtrace::table_exporter(table_text);
  session.add_exporter(table);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(ringtrace::chrome_trace_exporter(path));
  session.add_exporter(summary);
  session.add_exporter(memory);
  session.start();
  // Threads are created in reverse; thread k records its first zone only after thread
  // k-1 has recorded its own, so the order of first events is 0, 1, 2, ...
  std::atomic<int> turn{0};
  std::vector<std::thread> threads;
  for (int k = kThreads - 1; k >= 0; --k) {
    threads.emplace_back([k, &turn] {
      ringtrace::set_thread_name(worker_name(k));
      while (turn.load() != k) std::this_thread::yield();
      { RINGTRACE_ZONE("first"); }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      turn.store(k + 1);
      for (int i = 0; i < 1000; ++i) {
        RINGTRACE_ZONE("more");
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();

  const ringtrace::SessionStats stats = session.stats();
  ASSERT_EQ(stats.threads.size(), static_cast<std::size_t>(kThreads));
  for (int k = 0; k < kThreads; ++k) EXPECT_EQ(stats.threads[k].name, worker_name(k)) << "stats row " << k;

  const ringtrace::RecordedTrace trace = memory->trace();
  std::map<std::string, std::uint32_t> index_by_name;
  for (const auto& info : trace.threads) index_by_name[info.name] = info.sort_index;
  for (int k = 0; k < kThreads; ++k) EXPECT_EQ(index_by_name[worker_name(k)], static_cast<std::uint32_t>(k));

  // Chrome: the thread_sort_index of each tid.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  for (const ringtrace::ThreadStats& row : stats.threads) {
    const std::string want = "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(::getpid()) +
                             ",\"tid\":" + std::to_string(row.os_tid) +
                             ",\"args\":{\"sort_index\":" + std::to_string(index_by_name[row.name]) + "}}";
    EXPECT_NE(text.str().find(want), std::string::npos) << want;
  }

  // Chrome: thread metadata appears in the same order (each thread's at its first event).
  std::size_t previous = 0;
  for (const ringtrace::ThreadStats& row : stats.threads) {
    const std::size_t at =
        text.str().find("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(::getpid()) +
                        ",\"tid\":" + std::to_string(row.os_tid) + ",");
    ASSERT_NE(at, std::string::npos) << row.name;
    EXPECT_GT(at, previous) << row.name << " named out of order";
    previous = at;
  }

  // The table's threads that lost events, in the same order.
  const auto& drops = dynamic_cast<ringtrace::TableExporter&>(*table).table().dropped_by_thread;
  EXPECT_FALSE(drops.empty()) << "no thread overflowed its 64-record ring";
  for (std::size_t i = 1; i < drops.size(); ++i) {
    EXPECT_LT(index_by_name[drops[i - 1].name], index_by_name[drops[i].name]) << drops[i].name;
  }

  // The captured-ops summary lists its threads in the same order.
  const auto& typed = dynamic_cast<ringtrace::OpsSummaryExporter&>(*summary);
  ASSERT_EQ(typed.summary().threads.size(), static_cast<std::size_t>(kThreads));
  for (int k = 0; k < kThreads; ++k) EXPECT_EQ(typed.summary().threads[k].name, worker_name(k));
  std::filesystem::remove(path);
}

}  // namespace
