// The filter stage's state (stream_filter.cpp: the steps; filter_facts.cpp: what it
// says about itself, and the Exporter around it).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "duration_gate.hpp"
#include "open_state.hpp"
#include "ringtrace/stream_filter.hpp"
#include "zone_selection.hpp"

namespace ringtrace {

namespace detail {
inline bool has_text(const Event& e) {
  return (e.kind == EventKind::arg || e.kind == EventKind::message) && (e.flags & EventFlags::text) != 0;
}
}  // namespace detail

struct StreamFilter::Impl {
  enum class Phase : std::uint8_t { before, open, after };
  enum class TextSource : std::uint8_t { none, stream, own };

  // The stream as the filter hands it on.
  class Context final : public TraceContext {
   public:
    explicit Context(const Impl& impl) : impl_(impl) {}
    const SiteInfo& site(SiteId id) const override { return base().site(id); }
    std::uint32_t site_count() const override { return base().site_count(); }
    const ThreadInfo& thread(ThreadId id) const override {
      if (!impl_.listed(id)) return left_out_;
      return base().thread(id);
    }
    std::uint32_t thread_count() const override { return base().thread_count(); }
    const ClockInfo& clock() const override {
      clock_ = base().clock();
      const Run& r = impl_.run;
      if (r.has_from && clock_.start_ns < r.from_ns) clock_.start_ns = r.from_ns;
      if (r.has_to && clock_.stop_ns > r.to_ns) clock_.stop_ns = r.to_ns;
      return clock_;
    }
    const std::string& process_name() const override { return base().process_name(); }
    std::string_view text(const Event& e) const override {
      if (impl_.run.delivering != TextSource::own) return base().text(e);
      if (!detail::has_text(e)) return {};
      const Run& r = impl_.run;
      return r.texts[static_cast<std::size_t>(e.value.u - r.texts_base)];
    }
    std::uint32_t process_id() const override { return base().process_id(); }
    const std::string& process_name_of(std::uint32_t pid) const override { return base().process_name_of(pid); }
    std::string_view node_id_of(std::uint32_t pid) const override { return base().node_id_of(pid); }
    std::span<const TraceMetadata> metadata() const override {
      facts_.assign(base().metadata().begin(), base().metadata().end());
      impl_.add_facts(facts_);
      return facts_;
    }

   private:
    const TraceContext& base() const { return *impl_.base; }
    const Impl& impl_;
    mutable ClockInfo clock_;
    mutable std::vector<TraceMetadata> facts_;
    ThreadInfo left_out_{kFoldedThread, 0, "(thread left out by the filter)", 0, 0};
  };

  // Everything a run adds to, made afresh at on_start.
  struct Run {
    Phase phase = Phase::open;
    bool has_from = false, has_to = false;
    std::uint64_t from_ns = 0, to_ns = 0;
    bool track_all = false;    // what is open is tracked in the range (to end it at `to`)
    bool track_spans = false;  // async spans are (an end goes where its begin went)
    detail::OpenState open;
    std::optional<detail::DurationGate> gate;
    struct OutThread {
      std::uint32_t depth = 0;      // zones handed on, open
      std::uint32_t handed_on = 0;  // an event of it was handed on (1)
    };
    std::vector<OutThread> out;  // by thread
    std::vector<Event> batch;
    TextSource batch_texts = TextSource::none;
    TextSource delivering = TextSource::none;
    std::deque<std::string> texts;  // the filter's copies of texts it held
    std::uint64_t texts_base = 0;   // the number of texts.front()
    FilterCounts counts;
    std::vector<std::uint64_t> short_by_site;
    std::vector<detail::GateEvent> released;
    std::vector<detail::HeldEvent> made;
  };

  FilterOptions options;
  std::vector<std::shared_ptr<Exporter>> downstream;
  detail::ZoneSelection prototype;  // the patterns, compiled once
  std::optional<detail::ZoneSelection> selection;
  Run run;
  FilterCounts reported;  // counts()'s
  const TraceContext* base = nullptr;
  Context context{*this};

  Impl(FilterOptions o, std::vector<std::shared_ptr<Exporter>> d)
      : options(std::move(o)), downstream(std::move(d)), prototype(options) {}

  // Whether thread `t` is in the context's listing: every thread without --thread; else
  // those selected and those an event was handed on from (an async span's end).
  bool listed(ThreadId t) const {
    if (!selection || !selection->filters_threads() || selection->was_selected(t)) return true;
    return t < run.out.size() && run.out[t].handed_on != 0;
  }
  void start(const TraceContext& c);
  void feed(const Event& e);
  void feed_at_edges(const Event& e);
  void finish(const TraceContext& c, const SessionStats& stats);
  void flush();
  void add_facts(std::vector<TraceMetadata>& facts) const;
  // The counts so far (--min-duration's included).
  FilterCounts current_counts() const;
  std::string summary() const;
  std::string settings() const;

 private:
  RINGTRACE_ALWAYS_INLINE detail::ZoneSelection::Verdict judge(const Event& e, bool count_now);
  void count(detail::LeftOut why);
  void note_before(const Event& e, const detail::ZoneSelection::Verdict& v);
  void note_left_out(const Event& e, const detail::ZoneSelection::Verdict& v);
  void open_at_from();
  void close_at_to();
  void after_to(const Event& e);
  RINGTRACE_ALWAYS_INLINE void pass(const detail::GateEvent& g);
  RINGTRACE_ALWAYS_INLINE void deliver(const detail::GateEvent& g);
  std::int64_t keep_text(std::string_view text) {
    run.texts.emplace_back(text);
    return static_cast<std::int64_t>(run.texts_base + run.texts.size() - 1);
  }
};

}  // namespace ringtrace
