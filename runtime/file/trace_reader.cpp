// Reading a binary trace file (replay_file): its process sections (one, or several in a
// merged file) read side by side (section.hpp), their streams merged by time and handed
// to the exporters with the tables that name them. Layout: runtime/file/trace_file_format.hpp,
// docs/file-format.md.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "file_paths.hpp"  // open_input
#include "frame_reader.hpp"
#include "merge.hpp"
#include "replay_tables.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/files.hpp"  // output_of_partial
#include "section.hpp"
#include "trace_file_format.hpp"

namespace ringtrace {
namespace {

namespace tf = detail::trace_file;
using detail::Delivery;
using detail::Events;
using detail::kSpan;
using detail::ReplayTables;
using detail::Section;

// A whole file: its process sections (one, or several in a merged file) read side by
// side, their streams merged by time, delivered to the exporters.
class FileReplay final : private Delivery {
 public:
  FileReplay(const std::filesystem::path& path, std::span<Exporter* const> exporters, const ReplayOptions& options)
      : path_(path.string()), exporters_(exporters), progress_(options.progress) {
    if (options.recover_rings) rings_ = options.rings.empty() ? default_rings(path_) : options.rings.string();
    for (const std::filesystem::path& p : options.symbol_paths) symbol_paths_.push_back(p.string());
  }

  ReplayResult run() {
    find_sections();
    if (!header_.merged && !rings_.empty()) sections_.front()->set_rings(rings_);
    for (auto& s : sections_) {
      s->set_symbol_paths(symbol_paths_);
      s->open_session();
    }
    name_processes();
    // A file of one process: its deliveries go to the exporters as the merge gives them.
    if (sections_.size() == 1) sections_.front()->deliver_to(this);
    for (Exporter* x : exporters_) x->on_start(tables_);
    for (;;) {
      Section* next = nullptr;
      for (auto& s : sections_) {
        if (!s->done() && (next == nullptr || s->horizon() < next->horizon())) next = s.get();
      }
      if (next != nullptr) next->step();
      flush();
      if (next == nullptr) break;
      if (progress_) {
        std::uint64_t done = size_ - bytes_in_sections_;
        for (auto& s : sections_) done += s->bytes_read();
        progress_(done, size_);
      }
    }
    if (progress_) progress_(size_, size_);
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(path_ + ": " + what); }

  // run.rtrace, or a killed run's temporary run.rtrace.partial.XXXXXXXX: run.rtrace.rings
  // (BinaryTraceExporter::rings_path).
  static std::string default_rings(const std::string& path) {
    const std::filesystem::path output = output_of_partial(path);
    return (output.empty() ? path : output.string()) + ".rings";
  }

  // A file of one process is one section; a merged file (`ringtrace merge`) is a process
  // frame, then that process's frames, for each process.
  void find_sections() {
    std::FILE* file = ::fdopen(detail::open_input(path_), "rb");  // throws naming the file
    if (file == nullptr) fail(std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
      std::FILE* f;
      ~Closer() { std::fclose(f); }
    } closer{file};
    std::fseek(file, 0, SEEK_END);
    size_ = static_cast<std::uint64_t>(std::ftell(file));
    try {
      header_ = detail::read_file_header(file, size_);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (!header_.merged) {
      sections_.push_back(std::make_unique<Section>(tables_, path_, tf::kHeaderBytes, size_, ReplayProcess{}, header_));
      bytes_in_sections_ = size_ - tf::kHeaderBytes;
      return;
    }
    std::uint64_t at = tf::kHeaderBytes;
    detail::Frame frame;
    while (at < size_) {
      detail::FrameReader one(file, at, size_, header_);
      if (!one.next(frame)) {
        problem_ = one.problem().find("cut short") != std::string::npos
                       ? "file cut short at byte " + std::to_string(at) + " (inside a process frame)"
                       : one.problem();
        break;
      }
      if (frame.type != tf::frame_process || frame.payload.size() < tf::kProcessFrameFixedBytes + 4) {
        problem_ = "no process frame at byte " + std::to_string(at) + " of a merged file: damaged or cut short";
        break;
      }
      std::uint64_t bytes = 0;
      std::memcpy(&bytes, frame.payload.data(), 8);
      ReplayProcess meta;
      std::memcpy(&meta.offset_ns, frame.payload.data() + 8, 8);
      meta.realtime_aligned = (static_cast<unsigned char>(frame.payload[16]) & 1) != 0;
      std::uint32_t n = 0;
      std::memcpy(&n, frame.payload.data() + 24, 4);
      if (n > frame.payload.size() - 28) {
        problem_ = "malformed process frame at byte " + std::to_string(at);
        break;
      }
      meta.source.assign(frame.payload, 28, n);
      read_clock_check(frame.payload, 28 + std::size_t{n}, meta);
      const std::uint64_t begin = one.offset();
      const std::uint64_t end = bytes > size_ - begin ? size_ : begin + bytes;
      sections_.push_back(std::make_unique<Section>(tables_, path_, begin, end, std::move(meta), header_));
      bytes_in_sections_ += end - begin;
      at = end;
    }
    if (sections_.empty() && problem_.empty()) problem_ = "a merged file with no process in it";
  }

  // Format 2.3: how merge checked the section's offset against the flows between hosts,
  // after the process frame's source (a 2.2 frame ends there).
  static void read_clock_check(const std::string& payload, std::size_t at, ReplayProcess& meta) {
    const auto flags = static_cast<unsigned char>(payload[16]);
    if (payload.size() < at + tf::kProcessClockBytes) return;
    ClockCheck& c = meta.clock;
    std::memcpy(&c.realtime_offset_ns, payload.data() + at, 8);
    std::memcpy(&c.low_ns, payload.data() + at + 8, 8);
    std::memcpy(&c.high_ns, payload.data() + at + 16, 8);
    std::memcpy(&c.messages, payload.data() + at + 24, 8);
    c.measured = (flags & tf::kProcessMeasured) != 0;
    c.agrees = (flags & tf::kProcessAgrees) != 0;
    c.contradicted = (flags & tf::kProcessContradicted) != 0;
  }

  // The clock of a process placed through CLOCK_REALTIME, as trace metadata
  // (TraceContext::metadata: the Chrome trace's ringtrace_metadata, the Perfetto trace's
  // metadata), keyed by the pid its threads carry.
  void add_clock_facts(std::uint32_t pid, const ReplayProcess& m) {
    if (!m.realtime_aligned) return;
    const std::string key = "clock.pid " + std::to_string(pid);
    tables_.add_fact({key, describe_clock(m)});
    tables_.add_fact({key + ".offset_ns", m.offset_ns});
    if (!m.clock.measured) return;
    tables_.add_fact({key + ".realtime_offset_ns", m.clock.realtime_offset_ns});
    tables_.add_fact({key + ".messages", static_cast<std::int64_t>(m.clock.messages)});
    const std::uint64_t u = m.clock.uncertainty_ns(m.offset_ns);
    if (u != UINT64_MAX) tables_.add_fact({key + ".uncertainty_ns", static_cast<std::int64_t>(u)});
    tables_.add_fact({key + ".agrees_with_realtime", std::int64_t{m.clock.agrees ? 1 : 0}});
    tables_.add_fact({key + ".contradicted", std::int64_t{m.clock.contradicted ? 1 : 0}});
  }

  // The file's process is its first one; in a merged file every thread carries its
  // process's pid, a pid seen twice (two hosts, or reused) made unique and the process
  // named after where it came from.
  void name_processes() {
    const bool several = sections_.size() > 1;
    std::map<std::uint32_t, bool> used;
    std::uint32_t next_free = 4194305;  // above Linux's largest pid_max
    bool first = true;
    for (auto& s : sections_) {
      const ReplayProcess& m = s->meta();
      std::uint32_t pid = m.pid;
      std::string name = m.name;
      if (several && (pid == 0 || used.count(pid) != 0)) {
        while (used.count(next_free) != 0) ++next_free;
        name += " (pid " + std::to_string(m.pid) + (m.host.empty() ? "" : " on " + m.host) + ")";
        pid = next_free++;
      }
      used[pid] = true;
      s->place(pid, name, several);
      if (several) add_clock_facts(pid, s->meta());
      if (first && s->has_session()) {
        tables_.name = name;
        tables_.pid = pid;
        tables_.clock_info = s->clock();
        first = false;
      }
    }
    for (auto& s : sections_) {
      if (s->has_session()) tables_.clock_info.start_ns = std::min(tables_.clock_info.start_ns, s->clock().start_ns);
    }
  }

  // Hands the exporters every event that no section can precede any more, by time.
  void flush() {
    if (sections_.size() == 1) {
      Section& s = *sections_.front();
      if (s.out.empty()) return;
      emit(std::span<const Event>(s.out.data(), s.out.size()));
      s.out.clear();
      return;
    }
    std::uint64_t horizon = std::numeric_limits<std::uint64_t>::max();
    for (auto& s : sections_) horizon = std::min(horizon, s->horizon());
    batch_.clear();
    for (;;) {
      Section* best = nullptr;
      for (auto& s : sections_) {
        if (s->out_pos < s->out.size() && s->out[s->out_pos].time_ns <= horizon &&
            (best == nullptr || s->out[s->out_pos].time_ns < best->out[best->out_pos].time_ns)) {
          best = s.get();
        }
      }
      if (best == nullptr) break;
      batch_.push_back(best->out[best->out_pos++]);
    }
    for (auto& s : sections_) {
      if (s->out_pos == s->out.size()) {
        s->out.clear();
        s->out_pos = 0;
      }
    }
    if (!batch_.empty()) emit(batch_);
  }

  void emit(std::span<const Event> events) {
    place_threads(events);
    for (std::size_t i = 0; i < events.size(); i += kSpan) {
      hand_over(std::span<const Event>(events.data() + i, std::min(kSpan, events.size() - i)));
    }
    forget_texts();
  }

  // The same, from the section of a file of one process, as its merge goes.
  void first_events(std::span<const std::pair<std::uint64_t, ThreadId>> firsts) override {
    if (seen_count_ == tables_.threads.size()) return;
    fresh_.clear();
    for (const auto& [time, thread] : firsts) note_first(time, thread);
    place_fresh();
  }
  void events(std::span<const Event> span) override { hand_over(span); }
  void end() override { forget_texts(); }

  void hand_over(std::span<const Event> span) {
    for (Exporter* x : exporters_) x->on_events(span, tables_);
    result_.events += span.size();
    if (sections_.size() > 1) combine_heaps(span);
    // Texts are kept until the batch of their event is handed over (a trace without
    // texts skips the pass).
    if (tables_.texts.empty()) return;
    for (const Event& e : span) {
      if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) handed_texts_.push_back(e.value.u);
    }
  }
  void forget_texts() {
    for (const std::uint64_t id : handed_texts_) tables_.texts.erase(id);
    handed_texts_.clear();
  }

  // Sort indices, as live: by the time of each thread's first event, ties by OS tid.
  // Once every thread known has had an event, no event can be a thread's first.
  void place_threads(std::span<const Event> events) {
    if (seen_count_ == tables_.threads.size()) return;
    fresh_.clear();
    for (const Event& e : events) note_first(e.time_ns, e.thread);
    place_fresh();
  }
  void note_first(std::uint64_t time, ThreadId thread) {
    if (seen_.size() < tables_.threads.size()) seen_.resize(tables_.threads.size(), 0);
    if (seen_[thread] != 0) return;
    seen_[thread] = 1;
    ++seen_count_;
    fresh_.emplace_back(time, thread);
  }
  void place_fresh() {
    std::sort(fresh_.begin(), fresh_.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first
                                : tables_.threads[a.second].os_tid < tables_.threads[b.second].os_tid;
    });
    for (const auto& [time, id] : fresh_) tables_.threads[id].sort_index = next_sort_index_++;
  }

  // Several processes' heaps (a merged file), after each one's accounting: their live
  // bytes together at every moment of the merged stream, and the highest.
  void combine_heaps(std::span<const Event> span) {
    for (const Event& e : span) {
      if ((e.kind != EventKind::alloc && e.kind != EventKind::free) || (e.flags & EventFlags::untracked) != 0) continue;
      if (e.kind == EventKind::alloc) {
        combined_live_ += e.value.u;
        if (combined_live_ > combined_peak_) {
          combined_peak_ = combined_live_;
          combined_peak_ns_ = e.time_ns;
        }
      } else {
        combined_live_ -= std::min(combined_live_, e.value.u);
      }
    }
  }

  // Several processes' heaps: counts add up, the leaks are listed together, each row with
  // its process; the peak is theirs together (combine_heaps), not one process's.
  static void add_memory_stats(MemoryStats& into, const MemoryStats& p, std::uint32_t pid) {
    if (!p.known) return;
    MemoryStats own = p;
    for (MemoryStats::Leak& l : own.leaks) l.pid = pid;
    if (!into.known) {
      into = std::move(own);
      return;
    }
    into.allocations += p.allocations;
    into.frees += p.frees;
    into.allocated_bytes += p.allocated_bytes;
    into.freed_bytes += p.freed_bytes;
    into.live_bytes += p.live_bytes;
    into.live_blocks += p.live_blocks;
    if (p.peak_live_bytes > into.peak_live_bytes) {
      into.peak_live_bytes = p.peak_live_bytes;
      into.peak_time_ns = p.peak_time_ns;
    }
    into.frees_unmatched += p.frees_unmatched;
    into.frees_size_unknown += p.frees_size_unknown;
    into.untracked_blocks += p.untracked_blocks;
    into.lost_frees += p.lost_frees;
    into.unrecorded_nested += p.unrecorded_nested;
    for (auto [sum, part] : {std::pair{&into.nested, &p.nested}, std::pair{&into.after_exit, &p.after_exit},
                             std::pair{&into.dropped, &p.dropped}}) {
      sum->allocations += part->allocations;
      sum->frees += part->frees;
      sum->bytes += part->bytes;
    }
    into.blocks_known = into.blocks_known && p.blocks_known;
    into.leaks.insert(into.leaks.end(), own.leaks.begin(), own.leaks.end());
    std::stable_sort(into.leaks.begin(), into.leaks.end(),
                     [](const MemoryStats::Leak& a, const MemoryStats::Leak& b) { return a.bytes > b.bytes; });
    into.sites.insert(into.sites.end(), p.sites.begin(), p.sites.end());
    into.stacks.insert(into.stacks.end(), p.stacks.begin(), p.stacks.end());
  }

  static void add_function_stats(FunctionStats& into, const FunctionStats& p) {
    into.unwound += p.unwound;
    into.too_deep += p.too_deep;
    into.short_calls += p.short_calls;
    into.excluded += p.excluded;
    into.inlined += p.inlined;
    const auto merge = [](std::vector<std::pair<std::string, std::uint64_t>>& a,
                          const std::vector<std::pair<std::string, std::uint64_t>>& b) {
      if (b.empty()) return;
      std::map<std::string, std::uint64_t> by_name(a.begin(), a.end());
      for (const auto& [name, n] : b) by_name[name] += n;
      a.assign(by_name.begin(), by_name.end());
      std::stable_sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    };
    merge(into.short_by_function, p.short_by_function);
    merge(into.inlined_by_function, p.inlined_by_function);
  }

  ReplayResult finish() {
    // Threads that recorded nothing still get a place.
    seen_.resize(tables_.threads.size(), 0);
    for (ThreadId t = 0; t < tables_.threads.size(); ++t) {
      if (seen_[t] == 0) tables_.threads[t].sort_index = next_sort_index_++;
    }
    SessionStats stats;
    bool first = true;
    std::uint64_t stop_ns = 0;
    for (auto& s : sections_) {
      if (!s->has_session()) continue;
      const SessionStats& p = s->stats();
      if (first) {
        stats = p;
        if (sections_.size() > 1) {
          stats.memory = MemoryStats{};
          add_memory_stats(stats.memory, p.memory, s->meta().pid);
        }
        first = false;
      } else {
        stats.threads.insert(stats.threads.end(), p.threads.begin(), p.threads.end());
        stats.recorded += p.recorded;
        stats.dropped += p.dropped;
        stats.dropped_without_ring += p.dropped_without_ring;
        stats.late_events += p.late_events;
        stats.unbalanced_ends += p.unbalanced_ends;
        stats.runtime_names += p.runtime_names;
        stats.runtime_names_overflowed += p.runtime_names_overflowed;
        stats.closed_at_stop += p.closed_at_stop;
        stats.drain_passes += p.drain_passes;
        stats.folded_threads += p.folded_threads;
        stats.context_switches += p.context_switches;
        stats.context_switches_lost += p.context_switches_lost;
        stats.threads_without_switches += p.threads_without_switches;
        if (stats.context_switches_unavailable.empty())
          stats.context_switches_unavailable = p.context_switches_unavailable;
        add_function_stats(stats.functions, p.functions);
        add_memory_stats(stats.memory, p.memory, s->meta().pid);
      }
      stop_ns = std::max(stop_ns, s->clock().stop_ns);
    }
    std::stable_sort(stats.threads.begin(), stats.threads.end(), [&](const ThreadStats& a, const ThreadStats& b) {
      return tables_.threads[a.thread].sort_index < tables_.threads[b.thread].sort_index;
    });
    tables_.clock_info.stop_ns = std::max(stop_ns, tables_.clock_info.start_ns);
    stats.clock = tables_.clock_info;
    if (sections_.size() > 1 && stats.memory.known) {
      stats.memory.peak_live_bytes = combined_peak_;
      stats.memory.peak_time_ns = combined_peak_ns_;
    }
    for (Exporter* x : exporters_) x->on_finish(tables_, stats);

    ReplayResult r;
    r.events = result_.events;
    r.bytes = size_;
    r.version = header_.major;
    r.minor_version = header_.minor;
    r.complete = problem_.empty() && !sections_.empty();
    r.problem = problem_;
    for (auto& s : sections_) {
      const ReplayProcess& m = s->meta();
      r.processes.push_back(m);
      r.recovered += m.recovered;
      if (s->rings_read()) r.rings = rings_;
      if (!m.complete) r.complete = false;
      if (r.problem.empty() && !m.problem.empty()) {
        r.problem = sections_.size() == 1 ? m.problem
                                          : "process " + std::to_string(m.pid) +
                                                (m.source.empty() ? "" : " (from " + m.source + ")") + ": " + m.problem;
      }
      if (s->has_session() && (r.realtime_start_ns == 0 || s->realtime_start_ns() < r.realtime_start_ns)) {
        r.realtime_start_ns = s->realtime_start_ns();
      }
    }
    if (!sections_.empty()) {
      r.host = sections_.front()->meta().host;
      r.pid = sections_.front()->meta().pid;
    }
    return r;
  }

  std::string path_;
  std::string rings_;                      // the ring file to read if the file is cut short ("" never)
  std::vector<std::string> symbol_paths_;  // ReplayOptions::symbol_paths
  std::span<Exporter* const> exporters_;
  ProgressFunction progress_;
  std::uint64_t size_ = 0;
  std::uint64_t bytes_in_sections_ = 0;  // of size_: the rest (headers) counts as done
  detail::FileHeader header_;
  std::string problem_;
  ReplayTables tables_;
  std::vector<std::unique_ptr<Section>> sections_;
  std::vector<Event> batch_;
  std::vector<char> seen_;
  std::size_t seen_count_ = 0;                             // of seen_, set
  std::vector<std::pair<std::uint64_t, ThreadId>> fresh_;  // place_threads(): threads first seen, by first event
  std::vector<std::uint64_t> handed_texts_;                // texts of the events handed over in the batch so far
  std::uint32_t next_sort_index_ = 0;
  ReplayResult result_;
  std::uint64_t combined_live_ = 0, combined_peak_ = 0, combined_peak_ns_ = 0;  // combine_heaps
};

}  // namespace

ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters,
                         const ReplayOptions& options) {
  FileReplay replay(path, exporters, options);
  return replay.run();
}

ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters) {
  return replay_file(path, exporters, ReplayOptions{});
}

ReplayResult replay_file(const std::filesystem::path& path, Exporter& exporter) {
  Exporter* const one[] = {&exporter};
  return replay_file(path, std::span<Exporter* const>(one));
}

}  // namespace ringtrace
