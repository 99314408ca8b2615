// A program's own code, built with -finstrument-functions by own_code_test.sh (g++ and
// clang, -O0 and -O2): it includes every installed public header and uses every macro
// of README's table and the API around them, in a session and without one. Its hooks
// keep every function address entered; the script names them and fails on any of
// ringtrace's: ringtrace's own code (every inline, constexpr or template function of its
// headers, member, constructor, lambda) is never instrumented in a user's build.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ringtrace/config.hpp"
#include "ringtrace/detail/function_name.hpp"
#include "ringtrace/detail/functions.hpp"
#include "ringtrace/detail/platform.hpp"
#include "ringtrace/detail/record.hpp"
#include "ringtrace/detail/ticks.hpp"
#include "ringtrace/detail/writer.hpp"
#include "ringtrace/event.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/instrument.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/requires_cxx20.hpp"
#include "ringtrace/ringtrace.hpp"
#include "ringtrace/session.hpp"
#include "ringtrace/site.hpp"
#include "ringtrace/stats.hpp"
#if defined(OWN_CODE_BENCHMARK)
#include "ringtrace/benchmark.hpp"  // its macros need ringtrace::benchmark: included, not used
#endif

// ringtrace's plain structs are aggregates (designated initializers: Config{.x = ...}):
// their constructors, destructors and assignments are the compiler's, defined in the
// program where it uses them, and cannot carry no_instrument_function (a declared one
// would make the struct no aggregate). own_code_test.sh allows those members of these
// types only, read from the lines below, and each type must stay an aggregate: one that
// stops being one can declare its members with RINGTRACE_NO_INSTRUMENT, and must.
#define OWN_CODE_AGGREGATE(type)                      \
  static_assert(std::is_aggregate_v<ringtrace::type>, \
                #type ": not an aggregate, so its special members can carry the attribute");
OWN_CODE_AGGREGATE(Schedule)
OWN_CODE_AGGREGATE(FlightRecorder)
OWN_CODE_AGGREGATE(Trigger)
OWN_CODE_AGGREGATE(FunctionOptions)
OWN_CODE_AGGREGATE(ControlChannel)
OWN_CODE_AGGREGATE(Config)
OWN_CODE_AGGREGATE(Event)
OWN_CODE_AGGREGATE(ThreadInfo)
OWN_CODE_AGGREGATE(TraceMetadata)
OWN_CODE_AGGREGATE(RecordedSite)
OWN_CODE_AGGREGATE(RecordedTrace)
OWN_CODE_AGGREGATE(WindowInfo)
OWN_CODE_AGGREGATE(SiteInfo)
OWN_CODE_AGGREGATE(ClockInfo)
OWN_CODE_AGGREGATE(ThreadStats)
OWN_CODE_AGGREGATE(FunctionStats)
OWN_CODE_AGGREGATE(MemoryStats)
OWN_CODE_AGGREGATE(MemoryStats::Leak)
OWN_CODE_AGGREGATE(MemoryStats::LeftOut)
OWN_CODE_AGGREGATE(MemoryStats::Site)
OWN_CODE_AGGREGATE(MemoryStats::Stack)
OWN_CODE_AGGREGATE(SessionStats)
OWN_CODE_AGGREGATE(BinaryTraceOptions)
OWN_CODE_AGGREGATE(ReplayProcess)
OWN_CODE_AGGREGATE(ReplayResult)
OWN_CODE_AGGREGATE(ReplayOptions)
OWN_CODE_AGGREGATE(MergeResult)
OWN_CODE_AGGREGATE(ChromeTraceOptions)
OWN_CODE_AGGREGATE(FoldedStacksOptions)
OWN_CODE_AGGREGATE(OpsSummaryOptions)
OWN_CODE_AGGREGATE(CaptureCounts)
OWN_CODE_AGGREGATE(OpsSummaryThread)
OWN_CODE_AGGREGATE(MissingOp)
OWN_CODE_AGGREGATE(OpsSummary)
OWN_CODE_AGGREGATE(PerfettoOptions)
OWN_CODE_AGGREGATE(PstatsFunction)
OWN_CODE_AGGREGATE(PstatsEdge)
OWN_CODE_AGGREGATE(PstatsTable)
OWN_CODE_AGGREGATE(PstatsReportOptions)
OWN_CODE_AGGREGATE(PstatsOptions)
OWN_CODE_AGGREGATE(TableOptions)
OWN_CODE_AGGREGATE(TableRow)
OWN_CODE_AGGREGATE(ThreadDrops)
OWN_CODE_AGGREGATE(KeyAverages)

// The hooks: every function entered, once, in an open-addressed set (no function call,
// nothing of the standard library: the hooks must not reach instrumented code). Neither
// inlined nor cloned (g++ would make a `.constprop` of them): the objdump check looks
// for their calls.
#if defined(__clang__)
#define OWN_CODE_HOOK extern "C" __attribute__((no_instrument_function, noinline))
#else
#define OWN_CODE_HOOK extern "C" __attribute__((no_instrument_function, noipa))
#endif
namespace {
constexpr std::size_t kSlots = 8192;
std::uintptr_t g_entered[kSlots];
bool g_done = false;
}  // namespace

OWN_CODE_HOOK void __cyg_profile_func_enter(void* function, void*) {
  if (__atomic_load_n(&g_done, __ATOMIC_RELAXED)) return;
  const auto fn = reinterpret_cast<std::uintptr_t>(function);
  for (std::size_t i = (fn >> 4) % kSlots, n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    std::uintptr_t seen = __atomic_load_n(&g_entered[i], __ATOMIC_RELAXED);
    if (seen == fn) return;
    if (seen == 0 && __atomic_compare_exchange_n(&g_entered[i], &seen, fn, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      return;
    }
    if (seen == fn) return;
  }
}
OWN_CODE_HOOK void __cyg_profile_func_exit(void*, void*) {}

namespace own_code {

// An exporter of the program's own: its members are the program's (instrumented).
class Counting final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    count_ += events.size();
  }
  std::size_t count_ = 0;
};

struct Widget {
  int parse(int v) {
    RINGTRACE_FUNCTION();
    return v + 1;
  }
};

// Every macro of README's table, each at least once.
void every_macro(int i, const ringtrace::SiteInfo* interned) {
  RINGTRACE_ZONE("plain");
  RINGTRACE_ZONE("one", "a", i);
  RINGTRACE_ZONE("two", "a", i, "b", 2.5);
  RINGTRACE_ZONE("three", "a", i, "b", 2.5, "c", 3u);
  RINGTRACE_ZONE("four", "a", i, "b", 2.5, "c", 3u, "d", -4L);
  RINGTRACE_FUNCTION();
  const std::string name = "dynamic " + std::to_string(i % 3);
  RINGTRACE_ZONE_DYNAMIC(name);
  RINGTRACE_ZONE_IN("own_code", "categorised");
  RINGTRACE_ZONE_SAMPLED("sampled", 2);
  RINGTRACE_ZONE_SAMPLED("sampled at the session's rate", 0);
  RINGTRACE_ZONE_BEGIN("manual");
  RINGTRACE_ZONE_VALUE("int", i);
  RINGTRACE_ZONE_VALUE("double", i * 0.5);
  RINGTRACE_ZONE_TEXT("text", name);
  RINGTRACE_ZONE_TEXT("sized", name.data(), name.size());
  RINGTRACE_INSTANT("instant");
  RINGTRACE_MESSAGE("a message");
  RINGTRACE_MESSAGE(name);
  RINGTRACE_COUNTER("counter", i);
  RINGTRACE_COUNTER("float counter", i * 0.25);
  RINGTRACE_COUNTER_PER_THREAD("per thread", i);
  {
    RINGTRACE_REGION("region", i);
    RINGTRACE_FLOW_OUT(i + 1);
  }
  {
    RINGTRACE_ZONE("flow target");
    RINGTRACE_FLOW_IN(i + 1);
  }
  RINGTRACE_ASYNC_BEGIN("async", i);
  RINGTRACE_ASYNC_END("async", i);
  {
    RINGTRACE_ZONE_SITE(interned);
    RINGTRACE_INSTANT_SITE(interned);
    RINGTRACE_COUNTER_SITE(interned, i);
  }
  RINGTRACE_ZONE_END();
  RINGTRACE_ZONE_END();  // unbalanced: counted
  RINGTRACE_FRAME();
  ringtrace::frame_mark();
  Widget().parse(i);
  [&] {
    RINGTRACE_FUNCTION();
    RINGTRACE_ZONE_VALUE("in a lambda", i);
  }();
}

// A TraceContext of the program's own (copied and assigned below).
class Context final : public ringtrace::TraceContext {
 public:
  const ringtrace::SiteInfo& site(ringtrace::SiteId) const override { return site_; }
  std::uint32_t site_count() const override { return 1; }
  const ringtrace::ThreadInfo& thread(ringtrace::ThreadId) const override { return thread_; }
  std::uint32_t thread_count() const override { return 1; }
  const ringtrace::ClockInfo& clock() const override { return clock_; }
  const std::string& process_name() const override { return name_; }

 private:
  ringtrace::SiteInfo site_{"site", "", "", 0, ringtrace::SiteKind::zone};
  ringtrace::ThreadInfo thread_;
  ringtrace::ClockInfo clock_;
  std::string name_ = "own code";
};

// The headers' other functions, called at run time with values the compiler does not know
// (constexpr ones too), so that each is compiled into the program, and the special
// members the headers declare, each used.
std::uint64_t every_helper(int seed) {
  namespace d = ringtrace::detail;
  const ringtrace::SiteInfo site{"helper",
                                 "every_helper",
                                 "own_code.cpp",
                                 1,
                                 ringtrace::SiteKind::counter,
                                 ringtrace::SiteOptions::sampled,
                                 "",
                                 static_cast<std::uint32_t>(seed)};
  std::uint64_t sum = d::record_header(&site, d::record_instant) + d::function_header(seed) +
                      d::extended_header(d::extended_padding, seed) + d::end_slot(seed) + d::text_record_slots(3, seed);
  sum += d::effective_sample_every(site) + d::effective_options(site, seed != 0);
  sum += d::function_key(seed, seed) + (d::inlined_into(d::FunctionFrame{0, 0}, seed) ? 1 : 0);
  sum += d::monotonic_ns() + d::read_ticks(seed != 0) + d::read_ticks_fast();
  const char* pretty = seed > 1000 ? "void f()" : "int own_code::Widget::parse(int) const";
  const d::QualifiedFunctionName<64> name{pretty};
  sum += d::qualified_function_name_size(pretty) + static_cast<unsigned char>(name.text[0]);
  sum += ringtrace::is_step_site(site) ? 1 : 0;
  sum += ringtrace::output_path_key("own_code.cpp").string().size();

  ringtrace::TraceBuilder builder;
  builder.site("copied");
  ringtrace::TraceBuilder copy(builder);
  ringtrace::TraceBuilder moved(std::move(copy));
  copy = moved;
  moved = std::move(copy);
  const ringtrace::RecordedTrace trace = moved.build();
  const ringtrace::RecordedTraceContext context(trace);
  ringtrace::RecordedTraceContext context_copy(context);
  const ringtrace::RecordedTraceContext context_moved(std::move(context_copy));
  sum += context_moved.site_count() + context_moved.thread_count() + context_moved.process_name().size();
  sum += context_moved.clock().tsc ? 1 : 0;
  Context own, other;
  own = other;
  sum += own.process_id() + own.text(ringtrace::Event{}).size() + own.metadata().size() + own.process_name_of(1).size();
  Counting counting, counting_copy(counting);
  counting = counting_copy;
  counting.on_start(own);
  counting.on_flush(own);
  counting.on_finish(own, ringtrace::SessionStats{});
  sum += counting.output_paths().size();
  const auto pstats = std::make_shared<ringtrace::PstatsExporter>("own_code.prof", ringtrace::PstatsOptions{});
  sum += pstats->path().size();
  return sum;
}

int run() {
  ringtrace::set_thread_name("own code");
  const ringtrace::SiteInfo* interned = ringtrace::intern("interned");
  ringtrace::set_category_enabled("own_code", true);
  every_macro(0, interned);  // no session: every macro's disabled path

  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.functions.max_depth = 64;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  auto counting = std::make_shared<Counting>();
  std::ostringstream chrome, perfetto, folded, table, summary;
  session.add_exporter(memory);
  session.add_exporter(counting);
  session.add_exporter(ringtrace::chrome_trace_exporter(chrome));
  session.add_exporter(ringtrace::perfetto_exporter(perfetto));
  session.add_exporter(ringtrace::folded_stacks_exporter(folded));
  session.add_exporter(ringtrace::table_exporter(table));
  session.add_exporter(ringtrace::ops_summary_exporter(summary));
  session.start();
  for (int i = 1; i < 200; ++i) {
    every_macro(i, interned);
    if (i % 50 == 0) session.step();
    if (i == 100) ringtrace::set_category_enabled("own_code", false);
  }
  ringtrace::set_category_enabled("own_code", true);
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  const ringtrace::RecordedTrace trace = memory->trace();

  // What a program does with a recorded trace, beside exporters.
  ringtrace::TraceBuilder builder("built");
  const ringtrace::ThreadId thread = builder.thread("main");
  const ringtrace::SiteId site = builder.site("zone");
  builder.begin(thread, site, 10).end(thread, 20);
  const ringtrace::RecordedTrace built = builder.build();
  ringtrace::MemoryExporter copy;
  ringtrace::replay(built, copy);
  const ringtrace::RecordedTraceContext context(trace);
  const ringtrace::PstatsTable pstats = ringtrace::pstats_table(trace);
  const ringtrace::KeyAverages averages = ringtrace::key_averages(trace);
  const std::string report = ringtrace::format_table(averages) + ringtrace::format_pstats_report(pstats) +
                             ringtrace::format_ops_summary(ringtrace::ops_summary(trace));
  const bool same = ringtrace::same_file("own_code.cpp", "./own_code.cpp");
  const bool step_site = ringtrace::is_step_site(context.site(0));
  const std::uint64_t helpers = every_helper(static_cast<int>(stats.recorded % 7));

  std::fprintf(stderr, "own_code: %llu recorded, %zu events, %zu exported, %zu report bytes, %zu sites, %d %d %llu\n",
               static_cast<unsigned long long>(stats.recorded), trace.events.size(), counting->count_, report.size(),
               static_cast<std::size_t>(context.site_count()), same ? 1 : 0, step_site ? 1 : 0,
               static_cast<unsigned long long>(helpers));
  return stats.recorded != 0 && trace.events.size() != 0 && copy.trace().events.size() == 2 ? 0 : 1;
}

}  // namespace own_code

// Prints every function entered, one a line, as its distance in bytes from the entry hook
// (which the script finds in the symbol table: the executable is position independent).
int main() {
  const int status = own_code::run();
  __atomic_store_n(&g_done, true, __ATOMIC_RELAXED);
  const auto anchor = reinterpret_cast<std::uintptr_t>(&__cyg_profile_func_enter);
  for (std::uintptr_t fn : g_entered) {
    if (fn != 0) std::printf("%lld\n", static_cast<long long>(fn - anchor));
  }
  return status;
}
