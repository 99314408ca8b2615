// A live session with rich events for the `clients` tests: a producer thread hands
// items to a consumer thread; each item is a flow from the producer's zone to the
// consumer's, an async span that begins on the producer and ends on the consumer, and
// values and texts (hostile bytes included) on both zones; messages on both threads (a
// literal, and run-time strings with hostile bytes). Writes, into the folder
// given as argument:
//   rich.json           Chrome trace
//   rich.perfetto-trace Perfetto's protobuf format
//   expected.json       what the readers must report, from the MemoryExporter stream:
//                       zones [tid, name, begin ns, duration ns, {args}], flows
//                       [[tid, begin ns of the zone that starts it], [tid, begin ns of
//                       the zone that ends it]], async spans [name, id, begin ns, end ns],
//                       messages [tid, ns, text]
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "output.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

constexpr int kItems = 40;
// Quotes, backslash, newline, a control character and invalid UTF-8.
const std::string kHostile = "say \"hi\"\\\n\x01\xFF";

std::string json(std::string_view s) {
  std::string out;
  ringtrace::detail::append_json_string(out, s);
  return out;
}

void spin(int n) {
  volatile double x = 1;
  for (int i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rich_live <output folder>\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = "rich live";
  config.overflow = ringtrace::OverflowPolicy::block;  // lossless: the expectations are exact
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "rich.json"));
  session.add_exporter(ringtrace::perfetto_exporter(dir / "rich.perfetto-trace"));

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<int> queue;
  session.start();
  std::thread producer([&] {
    ringtrace::set_thread_name("producer");
    for (int i = 0; i < kItems; ++i) {
      {
        RINGTRACE_ZONE("produce");
        RINGTRACE_ZONE_VALUE("item", i);
        RINGTRACE_ZONE_VALUE("ratio", i / 4.0);
        const std::string label = kHostile + std::to_string(i);
        RINGTRACE_ZONE_TEXT("label", label.data(), label.size());
        spin(2000);
        if (i % 10 == 0) RINGTRACE_MESSAGE("cache flushed");  // a literal
        RINGTRACE_FLOW_OUT(1000 + i);
        RINGTRACE_ASYNC_BEGIN("job", 1000 + i);
      }
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(i);
      ready.notify_one();
    }
  });
  std::thread consumer([&] {
    ringtrace::set_thread_name("consumer");
    for (int n = 0; n < kItems; ++n) {
      int i;
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return !queue.empty(); });
        i = queue.front();
        queue.pop_front();
      }
      RINGTRACE_ZONE("consume");
      RINGTRACE_FLOW_IN(1000 + i);
      {
        RINGTRACE_ZONE("work");  // the flow stays on "consume", not on its child
        spin(1000);
      }
      RINGTRACE_ZONE_VALUE("item", i);
      if (i % 8 == 0) {  // a run-time string, hostile bytes included
        const std::string said = "item " + std::to_string(i) + " consumed " + kHostile;
        RINGTRACE_MESSAGE(said);
      }
      RINGTRACE_ASYNC_END("job", 1000 + i);
    }
  });
  producer.join();
  consumer.join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  for (const auto& e : stats.exporter_errors) std::fprintf(stderr, "exporter error: %s\n", e.c_str());
  if (!stats.exporter_errors.empty() || stats.dropped != 0) return 1;

  // expected.json from the recorded stream (not from any exporter).
  const ringtrace::RecordedTrace trace = memory->trace();
  const ringtrace::RecordedTraceContext context(trace);
  struct Zone {
    std::uint64_t tid, begin, end = 0;
    std::string name, args;
  };
  std::vector<Zone> zones;
  std::map<ringtrace::ThreadId, std::vector<std::size_t>> open;
  std::map<std::uint64_t, std::string> flow_from, flow_to;  // id -> [tid, begin]
  std::map<std::uint64_t, std::uint64_t> async_begin;
  std::string asyncs, messages;
  std::size_t message_count = 0;
  for (const ringtrace::Event& e : trace.events) {
    const std::uint64_t tid = trace.threads[e.thread].os_tid;
    auto& stack = open[e.thread];
    const auto where = [&] {
      const Zone& z = zones[stack.back()];
      return std::string("[").append(std::to_string(z.tid)).append(",").append(std::to_string(z.begin)).append("]");
    };
    switch (e.kind) {
      case ringtrace::EventKind::zone_begin:
        zones.push_back(Zone{tid, e.time_ns, 0, trace.sites[e.site].name, ""});
        stack.push_back(zones.size() - 1);
        break;
      case ringtrace::EventKind::zone_end:
        zones[stack.back()].end = e.time_ns;
        stack.pop_back();
        break;
      case ringtrace::EventKind::arg: {
        std::string& args = zones[stack.back()].args;
        if (!args.empty()) args += ',';
        args.append(json(trace.sites[e.site].name)).append(":");
        if ((e.flags & ringtrace::EventFlags::text) != 0) {
          args += json(context.text(e));
        } else if ((e.flags & ringtrace::EventFlags::value_double) != 0) {
          args += std::to_string(e.value.d);
        } else {
          args += std::to_string(e.value.i);
        }
        break;
      }
      case ringtrace::EventKind::flow_out:
        flow_from[e.value.u] = where();
        break;
      case ringtrace::EventKind::flow_in:
        flow_to[e.value.u] = where();
        break;
      case ringtrace::EventKind::async_begin:
        async_begin[e.value.u] = e.time_ns;
        break;
      case ringtrace::EventKind::async_end:
        asyncs.append(asyncs.empty() ? "\n[" : ",\n[").append(json(trace.sites[e.site].name)).append(",");
        asyncs.append(std::to_string(e.value.u)).append(",").append(std::to_string(async_begin.at(e.value.u)));
        asyncs.append(",").append(std::to_string(e.time_ns)).append("]");
        break;
      case ringtrace::EventKind::message:
        messages.append(messages.empty() ? "\n[" : ",\n[").append(std::to_string(tid)).append(",");
        messages.append(std::to_string(e.time_ns)).append(",").append(json(context.text(e))).append("]");
        ++message_count;
        break;
      default:
        break;
    }
  }
  std::string out = "{\"zones\":[";
  for (std::size_t i = 0; i < zones.size(); ++i) {
    const Zone& z = zones[i];
    out.append(i ? ",\n[" : "\n[").append(std::to_string(z.tid)).append(",").append(json(z.name)).append(",");
    out.append(std::to_string(z.begin)).append(",").append(std::to_string(z.end - z.begin));
    out.append(",{").append(z.args).append("}]");
  }
  out += "],\n\"flows\":[";
  bool first = true;
  for (const auto& [id, from] : flow_from) {
    out.append(first ? "\n[" : ",\n[").append(from).append(",").append(flow_to.at(id)).append("]");
    first = false;
  }
  out.append("],\n\"asyncs\":[").append(asyncs).append("],\n\"messages\":[").append(messages).append("]}\n");
  std::FILE* f = std::fopen((dir / "expected.json").c_str(), "wb");
  if (f == nullptr || std::fwrite(out.data(), 1, out.size(), f) != out.size() || std::fclose(f) != 0) return 1;
  std::printf("rich_live: %zu zones, %zu flows, %d async spans, %zu messages\n", zones.size(), flow_from.size(), kItems,
              message_count);
  return 0;
}
