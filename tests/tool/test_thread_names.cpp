// Thread names: a thread the program never named with set_thread_name takes its kernel
// name (`comm`: pthread_setname_np, prctl(PR_SET_NAME), or its creator's), read by the
// thread itself at its first event, in every output; an explicit set_thread_name always
// wins. Checked in stats().threads and in the Chrome trace's thread_name metadata.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::uint64_t this_tid() { return static_cast<std::uint64_t>(::gettid()); }

// The thread names of a Chrome trace's metadata, by tid: the last one given (a name that
// changes is written again). A tid may appear once only for the checks below.
std::map<std::uint64_t, std::string> chrome_thread_names(const std::filesystem::path& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::uint64_t, std::string> names;
  const std::regex metadata(
      R"re(\{"ph":"M","name":"thread_name","pid":\d+,"tid":(\d+),"args":\{"name":"([^"]*)"\}\})re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), metadata); it != std::sregex_iterator(); ++it) {
    names[std::stoull((*it)[1].str())] = (*it)[2].str();
  }
  return names;
}

std::string stats_name(const ringtrace::SessionStats& stats, std::uint64_t tid) {
  for (const ringtrace::ThreadStats& t : stats.threads) {
    if (t.os_tid == tid) return t.name;
  }
  return "<no row for tid " + std::to_string(tid) + ">";
}

TEST(ThreadNames, KernelNameUnlessTheProgramNamedTheThread) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("thread_names_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path json = dir / "names.json";
  ringtrace::Session session;
  session.add_exporter(ringtrace::chrome_trace_exporter(json));
  session.start();
  std::atomic<std::uint64_t> kernel_named{0}, explicit_named{0}, renamed_late{0}, inherited{0};
  // Named with pthread_setname_np only, then records and exits at once (before any
  // drainer pass is likely to have seen it).
  std::thread([&] {
    ASSERT_EQ(pthread_setname_np(pthread_self(), "kernel-named"), 0);
    { RINGTRACE_ZONE("work"); }
    kernel_named = this_tid();
  }).join();
  // set_thread_name before the kernel's name changes: the explicit name wins.
  std::thread([&] {
    ringtrace::set_thread_name("explicit");
    ASSERT_EQ(pthread_setname_np(pthread_self(), "kernel-other"), 0);
    { RINGTRACE_ZONE("work"); }
    explicit_named = this_tid();
  }).join();
  // A kernel name first, then set_thread_name after the thread's first event: the
  // explicit name replaces the kernel's.
  std::thread([&] {
    ASSERT_EQ(prctl(PR_SET_NAME, "kernel-first", 0, 0, 0), 0);
    { RINGTRACE_ZONE("work"); }
    ringtrace::set_thread_name("renamed");
    { RINGTRACE_ZONE("work"); }
    renamed_late = this_tid();
  }).join();
  // Never named by anyone: the name it inherited from its creator (this thread's).
  char creator[16] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, creator, 0, 0, 0), 0);
  std::thread([&] {
    { RINGTRACE_ZONE("work"); }
    inherited = this_tid();
  }).join();
  session.stop();

  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats_name(stats, kernel_named), "kernel-named");
  EXPECT_EQ(stats_name(stats, explicit_named), "explicit");
  EXPECT_EQ(stats_name(stats, renamed_late), "renamed");
  EXPECT_EQ(stats_name(stats, inherited), creator);
  for (const ringtrace::ThreadStats& t : stats.threads) {
    if (t.os_tid != 0) {
      EXPECT_FALSE(t.name.empty()) << "tid " << t.os_tid << " has no name";
    }
  }

  const std::map<std::uint64_t, std::string> chrome = chrome_thread_names(json);
  ASSERT_EQ(chrome.count(kernel_named), 1u);
  EXPECT_EQ(chrome.at(kernel_named), "kernel-named");
  EXPECT_EQ(chrome.at(explicit_named), "explicit");
  EXPECT_EQ(chrome.at(renamed_late), "renamed");
  EXPECT_EQ(chrome.at(inherited), creator);
  for (const auto& [tid, name] : chrome) {
    EXPECT_NE(name, "thread " + std::to_string(tid)) << "tid " << tid << " is unnamed in the Chrome trace";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
