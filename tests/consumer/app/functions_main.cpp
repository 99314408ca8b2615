// The consumer of ringtrace::functions: instrumented calls (functions_work.cpp, built with
// -finstrument-functions -g) recorded by a session of the program's, each named, placed in
// its file and line, and nested as called. main() itself is not instrumented.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ringtrace/recorded_trace.hpp>
#include <ringtrace/ringtrace.hpp>

namespace consumer {
int work(int n);
extern const int kTwiceLine;
extern const int kWorkLine;
}  // namespace consumer

namespace {
struct Seen {
  int calls = 0, nested_in_work = 0;
  std::string file;
  std::uint32_t line = 0;
};
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

int main() {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  const int result = consumer::work(3);
  session.stop();
  const auto trace = memory->trace();
  std::map<std::string, Seen> seen;
  std::vector<std::string> open;  // the one thread's open zones
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind == ringtrace::EventKind::zone_begin) {
      const auto& site = trace.sites.at(e.site);
      Seen& s = seen[site.name];
      ++s.calls;
      if (!open.empty() && open.back() == "consumer::work(int)") ++s.nested_in_work;
      s.file = site.file;
      s.line = site.line;
      open.push_back(site.name);
    } else if (e.kind == ringtrace::EventKind::zone_end && !open.empty()) {
      open.pop_back();
    }
  }
  const Seen& work = seen["consumer::work(int)"];
  const Seen& twice = seen["consumer::twice(int)"];
  const bool ok = result == 6 && seen.size() == 2 && open.empty() && work.calls == 1 && twice.calls == 3 &&
                  twice.nested_in_work == 3 && ends_with(work.file, "functions_work.cpp") &&
                  ends_with(twice.file, "functions_work.cpp") &&
                  work.line == static_cast<std::uint32_t>(consumer::kWorkLine) &&
                  twice.line == static_cast<std::uint32_t>(consumer::kTwiceLine);
  if (!ok) {
    std::printf(
        "consumer_functions: expected consumer::work(int) once at functions_work.cpp:%d and "
        "consumer::twice(int) 3 times inside it at functions_work.cpp:%d, and nothing else; recorded:\n",
        consumer::kWorkLine, consumer::kTwiceLine);
    for (const auto& [name, s] : seen)
      std::printf("  %s: %d calls (%d inside work) at %s:%u\n", name.c_str(), s.calls, s.nested_in_work, s.file.c_str(),
                  s.line);
    return 1;
  }
  std::printf("consumer_functions: ok\n");
  return 0;
}
