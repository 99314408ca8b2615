// A split output (ringtrace/stream_filter.hpp, split_output): one exporter per piece,
// each started and finished as a run of its own. The stream goes to the current piece in
// chunks; before a chunk that could bring the piece within a margin of its bound, the
// piece ends (what is open ends in it at the chunk's time, marked) and the next one
// begins with what is open begun again (open_state.hpp), so each file holds its process,
// its threads' names and whole zones, and opens on its own.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "open_state.hpp"
#include "ringtrace/stream_filter.hpp"

namespace ringtrace {

using detail::HeldEvent;
using detail::OpenState;

namespace {
constexpr std::size_t kChunk = 512;                // events between two looks at a piece's size
constexpr std::uint64_t kMinBytes = 1'000'000;     // the smallest bound taken
constexpr std::uint64_t kFixedMargin = 64 * 1024;  // a piece's last packet or event: the session's counts
constexpr std::uint64_t kBytesPerOpen = 512;       // an open zone's or span's end, written when a piece ends
constexpr std::uint64_t kBytesPerThread = 512;     // a thread's name and row of counts at a piece's end
}  // namespace

struct SplitOutput::Impl {
  // A piece's view of the stream: its clock runs from its first time to its last, and
  // its metadata says which piece it is.
  class Context final : public TraceContext {
   public:
    explicit Context(const Impl& impl) : impl_(impl) {}
    const SiteInfo& site(SiteId id) const override { return base().site(id); }
    std::uint32_t site_count() const override { return base().site_count(); }
    const ThreadInfo& thread(ThreadId id) const override { return base().thread(id); }
    std::uint32_t thread_count() const override { return base().thread_count(); }
    const ClockInfo& clock() const override {
      clock_ = base().clock();
      clock_.start_ns = impl_.piece.begin_ns;
      if (impl_.piece.ended) clock_.stop_ns = impl_.piece.end_ns;
      return clock_;
    }
    const std::string& process_name() const override { return base().process_name(); }
    std::string_view text(const Event& e) const override { return base().text(e); }
    std::uint32_t process_id() const override { return base().process_id(); }
    const std::string& process_name_of(std::uint32_t pid) const override { return base().process_name_of(pid); }
    std::string_view node_id_of(std::uint32_t pid) const override { return base().node_id_of(pid); }
    std::span<const TraceMetadata> metadata() const override {
      facts_.assign(base().metadata().begin(), base().metadata().end());
      facts_.push_back({"split.piece", static_cast<std::int64_t>(impl_.index)});
      facts_.push_back({"split.begin_ns", static_cast<std::int64_t>(impl_.piece.begin_ns)});
      facts_.push_back({"split.end_ns", static_cast<std::int64_t>(clock().stop_ns)});
      return facts_;
    }

   private:
    const TraceContext& base() const { return *impl_.base; }
    const Impl& impl_;
    mutable ClockInfo clock_;
    mutable std::vector<TraceMetadata> facts_;
  };

  // What the current piece got: its span and counts.
  struct Piece {
    std::uint64_t begin_ns = 0, end_ns = 0;
    bool ended = false;
    std::uint64_t events = 0, made_up = 0, late = 0, closed_at_stop = 0;
    std::vector<ThreadStats> threads;  // by ThreadId; `thread` set once it had an event
  };

  Impl(std::uint64_t max, PieceFactory factory) : max_bytes(max), make(std::move(factory)) {
    if (max_bytes < kMinBytes)
      throw std::invalid_argument("a split output's pieces are at least 1 MB (1,000,000 bytes)");
    current = make(1);
    if (!current) throw std::runtime_error("a split output's piece factory returned no exporter");
  }

  void start(const TraceContext& c);
  void events(std::span<const Event> events);
  void finish(const TraceContext& c);
  std::uint64_t margin() const;
  void cut(std::uint64_t time_ns);
  void end_piece();
  void deliver(const std::vector<HeldEvent>& made);
  void count(std::span<const Event> events);

  std::uint64_t max_bytes;
  PieceFactory make;
  std::shared_ptr<Exporter> current;
  std::vector<SplitPiece> pieces;
  std::size_t index = 1;
  std::uint64_t runs = 0;
  Piece piece;
  OpenState open;
  const TraceContext* base = nullptr;
  Context context{*this};
  std::vector<HeldEvent> made;
  std::vector<Event> scratch;
};

void SplitOutput::Impl::start(const TraceContext& c) {
  base = &c;
  if (runs++ > 0) {  // a session's later run: its own sequence, from piece 1 again
    current = make(1);
    pieces.clear();
  }
  index = 1;
  open = OpenState();
  piece = Piece{};
  piece.begin_ns = c.clock().start_ns;
  current->on_start(context);
}

// What ending the piece now would add to it: its open zones' and spans' ends, its
// threads' names and counts, the session's counts; and what the next chunk may add, at
// twice the piece's bytes per event so far.
std::uint64_t SplitOutput::Impl::margin() const {
  const std::uint64_t per_event = piece.events == 0 ? 256 : current->output_bytes() / piece.events + 1;
  return kFixedMargin + kBytesPerOpen * (open.open_zones() + open.open_spans()) +
         kBytesPerThread * base->thread_count() + 2 * kChunk * per_event;
}

void SplitOutput::Impl::events(std::span<const Event> events) {
  for (std::size_t i = 0; i < events.size(); i += kChunk) {
    const std::span<const Event> chunk = events.subspan(i, std::min(kChunk, events.size() - i));
    if (piece.events != 0 && current->output_bytes() + margin() >= max_bytes) cut(chunk.front().time_ns);
    current->on_events(chunk, context);
    count(chunk);
    for (const Event& e : chunk) open.feed(e, *base);
  }
}

void SplitOutput::Impl::count(std::span<const Event> events) {
  for (const Event& e : events) {
    if (e.thread >= piece.threads.size()) [[unlikely]] {
      ThreadStats none;
      none.thread = kFoldedThread;  // no event yet
      piece.threads.resize(e.thread + 1, none);
    }
    ThreadStats& t = piece.threads[e.thread];
    t.thread = e.thread;
    if (e.kind == EventKind::dropped) {
      t.dropped += e.value.u;
    } else {
      ++t.recorded;
      ++piece.events;
    }
    if ((e.flags & EventFlags::late) != 0) ++piece.late;
    if (e.kind == EventKind::zone_end && (e.flags & EventFlags::closed_at_stop) != 0) ++piece.closed_at_stop;
    piece.end_ns = e.time_ns;
  }
}

void SplitOutput::Impl::deliver(const std::vector<HeldEvent>& held) {
  if (held.empty()) return;
  scratch.clear();
  for (const HeldEvent& h : held) scratch.push_back(h.event);
  current->on_events(scratch, context);
  piece.made_up += scratch.size();
}

// The piece ends at `time_ns`, and the next one begins there.
void SplitOutput::Impl::cut(std::uint64_t time_ns) {
  made.clear();
  open.closing(time_ns, made);
  deliver(made);
  piece.end_ns = time_ns;
  end_piece();
  current = make(++index);
  if (!current) throw std::runtime_error("a split output's piece factory returned no exporter");
  piece = Piece{};
  piece.begin_ns = piece.end_ns = time_ns;
  current->on_start(context);
  made.clear();
  open.reopening(time_ns, made);
  deliver(made);
}

// The piece's run finishes with its own counts.
void SplitOutput::Impl::end_piece() {
  piece.ended = true;
  SessionStats stats;
  stats.clock = context.clock();
  stats.closed_at_stop = piece.closed_at_stop;
  stats.late_events = piece.late;
  for (const ThreadStats& t : piece.threads) {
    if (t.thread == kFoldedThread) continue;
    ThreadStats row = t;
    const ThreadInfo& info = base->thread(t.thread);
    row.os_tid = info.os_tid;
    row.name = info.name;
    row.pid = info.pid;
    stats.recorded += row.recorded;
    stats.dropped += row.dropped;
    stats.threads.push_back(std::move(row));
  }
  current->on_finish(context, stats);
  pieces.push_back(SplitPiece{current->output_paths(), current->output_bytes(), piece.begin_ns, piece.end_ns,
                              piece.events + piece.made_up});
}

void SplitOutput::Impl::finish(const TraceContext& c) {
  base = &c;
  piece.end_ns = std::max(piece.end_ns, c.clock().stop_ns);
  end_piece();
}

SplitOutput::SplitOutput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SplitOutput::~SplitOutput() = default;

void SplitOutput::on_start(const TraceContext& context) { impl_->start(context); }

void SplitOutput::on_events(std::span<const Event> events, const TraceContext& context) {
  impl_->base = &context;
  impl_->events(events);
}

void SplitOutput::on_flush(const TraceContext& context) {
  impl_->base = &context;
  impl_->current->on_flush(impl_->context);
}

void SplitOutput::on_finish(const TraceContext& context, const SessionStats&) { impl_->finish(context); }

std::vector<std::filesystem::path> SplitOutput::output_paths() const {
  std::vector<std::filesystem::path> paths;
  for (const SplitPiece& p : impl_->pieces) paths.insert(paths.end(), p.paths.begin(), p.paths.end());
  if (impl_->pieces.size() < impl_->index) {
    for (auto& p : impl_->current->output_paths()) paths.push_back(std::move(p));
  }
  return paths;
}

std::uint64_t SplitOutput::output_bytes() const { return impl_->current->output_bytes(); }

const std::vector<SplitPiece>& SplitOutput::pieces() const { return impl_->pieces; }

std::shared_ptr<SplitOutput> split_output(std::uint64_t max_bytes, PieceFactory make_piece) {
  return std::make_shared<SplitOutput>(std::make_unique<SplitOutput::Impl>(max_bytes, std::move(make_piece)));
}

}  // namespace ringtrace
