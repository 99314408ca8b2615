// The control channel (docs/control.md): what it costs while no one uses it, what one
// request costs, and how long a snapshot of a full 64 MB flight recorder takes from the
// request to the written file.
//
// BM_IdleCompute: a fixed kernel (a 256 KiB buffer summed) in a process whose channel is
// open (the default) or off (RINGTRACE_CONTROL=off): bench/control_idle.sh runs this
// binary both ways, alternately, in the same minutes. Its counter channel_cpu_ticks is the
// CPU time (clock ticks: utime + stime of /proc/self/task/TID/stat) the channel's thread
// has used since the program started (-1 when there is none).
// BM_StatusRoundTrip: connect, a status request, its reply, close: what a client's
// request costs the process (on its channel thread) and the client.
// BM_Snapshot64MB: a session whose flight recorder keeps 60 s of up to 64 MiB, filled past
// that (1.1 M zones on one thread, block policy: none lost), then `ringtrace snapshot`'s
// request through the channel, timed from the request sent to the reply read (the
// binary file written and renamed into place).
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "control_channel.hpp"
#include "control_protocol.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace {

long channel_cpu_ticks() {
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  long ticks = -1;
  while (const dirent* e = ::readdir(tasks)) {
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(dir + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name != "ringtrace-ctl") continue;
    std::ifstream stat(dir + "/stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the command's closing parenthesis: state is the 3rd field, utime the 14th.
    std::size_t at = line.rfind(')') + 2;
    std::vector<long> fields;
    while (at < line.size() && fields.size() < 13) {
      const std::size_t next = line.find(' ', at);
      fields.push_back(std::atol(line.substr(at, next - at).c_str()));
      at = next == std::string::npos ? line.size() : next + 1;
    }
    if (fields.size() == 13) ticks = fields[11] + fields[12];
  }
  ::closedir(tasks);
  return ticks;
}

void BM_IdleCompute(benchmark::State& state) {
  std::vector<std::uint64_t> buffer(32768, 1);
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const std::uint64_t v : buffer) sum += v;
    benchmark::DoNotOptimize(sum);
  }
  state.counters["channel_cpu_ticks"] = static_cast<double>(channel_cpu_ticks());
  state.SetLabel(ringtrace::detail::control_socket_path().empty() ? "channel off" : "channel open");
}
BENCHMARK(BM_IdleCompute);

// A request and its reply through the channel at `path`.
ringtrace::control::Message ask(const std::string& path, const ringtrace::control::Message& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    throw std::runtime_error("connect " + path);
  }
  const std::string bytes = ringtrace::control::encode(request);
  if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) throw std::runtime_error("write");
  ringtrace::control::FrameReader reader(false, ringtrace::control::kMaxReplyPayload);
  char buffer[65536];
  for (;;) {
    if (std::optional<ringtrace::control::Message> reply = reader.next()) {
      ::close(fd);
      return *reply;
    }
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0 || !reader.feed(std::span<const char>(buffer, static_cast<std::size_t>(n)))) {
      ::close(fd);
      throw std::runtime_error("no reply: " + reader.error());
    }
  }
}

void BM_StatusRoundTrip(benchmark::State& state) {
  const std::string path = ringtrace::detail::control_socket_path();
  if (path.empty()) {
    state.SkipWithError("no channel (RINGTRACE_CONTROL=off)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ask(path, ringtrace::control::Message{}));
}
BENCHMARK(BM_StatusRoundTrip)->Unit(benchmark::kMicrosecond);

void BM_Snapshot64MB(benchmark::State& state) {
  const std::string path = ringtrace::detail::control_socket_path();
  if (path.empty()) {
    state.SkipWithError("no channel (RINGTRACE_CONTROL=off)");
    return;
  }
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.flight_recorder.keep = std::chrono::seconds(60);
  config.flight_recorder.max_bytes = std::size_t{64} << 20;
  ringtrace::Session session(config);
  session.start();
  for (int i = 0; i < 1'100'000; ++i) {  // 2.2 M events, 70 MB of them: past 64 MiB
    RINGTRACE_ZONE("filled");
  }
  ringtrace::detail::run_drainer_pass();
  const std::string out = "/tmp/ringtrace-bench-snapshot-" + std::to_string(::getpid()) + ".rtrace";
  ringtrace::control::Message request{ringtrace::control::Type::snapshot, {}};
  const char* format = std::getenv("SNAPSHOT_FORMAT");  // by hand: what the writing costs
  request.add("output", std::string(format != nullptr ? format : "rtrace") + ":" + out);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const ringtrace::control::Message reply = ask(path, request);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (reply.type != ringtrace::control::Type::ok) {
      const std::string* why = reply.find("message");
      state.SkipWithError(("the snapshot failed: " + (why != nullptr ? *why : std::string("?"))).c_str());
      break;
    }
  }
  std::ifstream file(out, std::ios::binary | std::ios::ate);
  state.counters["file_MB"] = static_cast<double>(file.tellg()) / 1e6;
  session.stop();
  ::unlink(out.c_str());
}
BENCHMARK(BM_Snapshot64MB)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
