// ringtrace dump: the merged event stream of a binary trace file as text, one event a
// line, in the order a live session's exporters get it: what a file holds, exactly, in a
// form that diffs well. tools/python/rtrace.py prints the same lines from the file
// format's description alone (docs/file-format.md); CI compares the two.
//
// A line: TIME PID TID KIND "NAME" [FIELDS] [FLAGS], space-separated, where
//   TIME   nanoseconds on the trace's CLOCK_MONOTONIC timeline
//   PID    the thread's process; TID its OS thread id
//   KIND   zone_begin, zone_end, instant, counter, dropped, arg, flow_out, flow_in,
//          async_begin, async_end, message, switch_out, switch_in (and kinds of later
//          versions by number)
//   NAME   the call site's name (a value's key), quoted
//   FIELDS by kind: id=N (a region zone's id, a flow's or async span's id), step=N (a
//          step's zone, of the site "step" on the "steps" track), i=N or d=X
//          (counter and value; X printed with %.17g), text="..." (text values and
//          messages), count=N (dropped), bits=N (switches: SwitchBits)
//   FLAGS  late, closed_at_stop, closed_at_window_end, truncated (size_unknown for a free,
//          restored for a failed realloc's alloc): those the event has
// Quoted strings escape '"' as \", '\' as \\, and every byte outside 0x20-0x7E as \xHH.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"

namespace ringtrace::tool {

namespace {

void quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b == '"' || b == '\\') {
      out += '\\';
      out += c;
    } else if (b >= 0x20 && b <= 0x7E) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  out += '"';
}

const char* kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::zone_begin:
      return "zone_begin";
    case EventKind::zone_end:
      return "zone_end";
    case EventKind::instant:
      return "instant";
    case EventKind::counter:
      return "counter";
    case EventKind::dropped:
      return "dropped";
    case EventKind::arg:
      return "arg";
    case EventKind::flow_out:
      return "flow_out";
    case EventKind::flow_in:
      return "flow_in";
    case EventKind::async_begin:
      return "async_begin";
    case EventKind::async_end:
      return "async_end";
    case EventKind::message:
      return "message";
    case EventKind::switch_out:
      return "switch_out";
    case EventKind::switch_in:
      return "switch_in";
    case EventKind::alloc:
      return "alloc";
    case EventKind::free:
      return "free";
  }
  return nullptr;
}

class Printer final : public Exporter {
 public:
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) line(e, context);
    flush();
  }
  void on_finish(const TraceContext&, const SessionStats&) override { flush(); }

 private:
  void line(const Event& e, const TraceContext& context) {
    char number[64];
    const ThreadInfo& thread = context.thread(e.thread);
    const std::uint32_t pid = thread.pid != 0 ? thread.pid : context.process_id();
    std::snprintf(number, sizeof number, "%" PRIu64 " %u %" PRIu64 " ", e.time_ns, pid, thread.os_tid);
    out_ += number;
    if (const char* kind = kind_name(e.kind)) {
      out_ += kind;
    } else {
      out_ += "kind" + std::to_string(static_cast<unsigned>(e.kind));
    }
    out_ += ' ';
    quoted(out_, context.site(e.site).name);
    const bool is_double = (e.flags & EventFlags::value_double) != 0;
    const auto value = [&] {
      if (is_double) {
        std::snprintf(number, sizeof number, " d=%.17g", e.value.d);
      } else {
        std::snprintf(number, sizeof number, " i=%" PRId64, e.value.i);
      }
      out_ += number;
    };
    const auto field = [&](const char* name, std::uint64_t v) {
      std::snprintf(number, sizeof number, " %s=%" PRIu64, name, v);
      out_ += number;
    };
    switch (e.kind) {
      case EventKind::zone_begin:
      case EventKind::zone_end:
        if ((e.flags & EventFlags::region) != 0) {
          field("id", e.value.u);
        } else if (is_step_site(context.site(e.site))) {
          field("step", e.value.u);
        }
        break;
      case EventKind::counter:
        value();
        break;
      case EventKind::arg:
        if ((e.flags & EventFlags::text) != 0) {
          out_ += " text=";
          quoted(out_, context.text(e));
        } else {
          value();
        }
        break;
      case EventKind::message:
        out_ += " text=";
        quoted(out_, context.text(e));
        break;
      case EventKind::flow_out:
      case EventKind::flow_in:
      case EventKind::async_begin:
      case EventKind::async_end:
        field("id", e.value.u);
        break;
      case EventKind::dropped:
        field("count", e.value.u);
        break;
      case EventKind::switch_out:
      case EventKind::switch_in:
        field("bits", e.value.u);  // SwitchBits: 1 preempted, 2 stream_start, 4 after_loss
        break;
      case EventKind::alloc:
      case EventKind::free:
        field("bytes", e.value.u);
        break;
      default:
        break;
    }
    if ((e.flags & EventFlags::late) != 0) out_ += " late";
    if ((e.flags & EventFlags::closed_at_stop) != 0) out_ += " closed_at_stop";
    if ((e.flags & EventFlags::closed_at_window_end) != 0) out_ += " closed_at_window_end";
    if ((e.flags & EventFlags::truncated) != 0 && e.kind != EventKind::alloc) out_ += " truncated";
    if ((e.flags & EventFlags::size_unknown) != 0 && e.kind == EventKind::free) out_ += " size_unknown";
    if ((e.flags & EventFlags::restored) != 0 && e.kind == EventKind::alloc) out_ += " restored";
    out_ += '\n';
  }
  void flush() {
    if (!out_.empty() && std::fwrite(out_.data(), 1, out_.size(), stdout) != out_.size()) {
      throw std::runtime_error("cannot write to standard output");
    }
    out_.clear();
  }
  std::string out_;
};

}  // namespace

int dump(const std::vector<std::string>& args) {
  const bool rings = !(args.size() == 2 && args[1] == "--no-rings");
  if (wants_help(args) || args.empty() || (args.size() == 2 && rings) || args.size() > 2) {
    return usage(
        args,
        "usage: ringtrace dump FILE [--no-rings]\n"
        "\n"
        "Prints the file's events as a live session delivered them, one a line:\n"
        "  TIME PID TID KIND \"NAME\" [FIELDS] [FLAGS]\n"
        "TIME in nanoseconds (CLOCK_MONOTONIC), KIND zone_begin, zone_end, instant, counter,\n"
        "dropped, arg, flow_out, flow_in, async_begin, async_end or message; FIELDS id=N,\n"
        "step=N, i=N, d=X, text=\"...\" or count=N as the event has them; FLAGS late,\n"
        "closed_at_stop, closed_at_window_end, truncated. Strings are quoted with \\\", \\\\ and \\xHH escapes.\n"
        "A file cut short is printed up to where it ends (and on from its ring file, unless\n"
        "--no-rings); what went wrong goes to standard error, and dump exits 1.\n"
        "docs/file-format.md describes the file; tools/python/rtrace.py prints the same.\n");
  }
  check_input(args[0], rings);
  Printer printer;
  ReplayOptions options;
  options.recover_rings = rings;
  if (rings) options.rings = ring_file_of(args[0]);
  Exporter* const one[] = {&printer};
  const ReplayResult r = replay_file(args[0], std::span<Exporter* const>(one), options);
  if (std::fflush(stdout) != 0) return error("dump", "cannot write to standard output");
  if (!r.complete) return error("dump", args[0] + ": " + r.problem);
  return 0;
}

}  // namespace ringtrace::tool
