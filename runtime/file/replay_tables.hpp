// What the reader of a trace file keeps for the whole file: the tables that resolve the
// ids of the merged stream (a TraceContext: sites, threads, texts, processes, facts), a
// growable event array, and the interface a process section delivers through.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/mman.h>  // madvise

#include "heap.hpp"  // the memory sites' names
#include "ringtrace/exporter.hpp"
#include "switch_events.hpp"  // the switch sites' names

namespace ringtrace::detail {

struct ReplaySite {
  std::string name, function, file, category;
  SiteInfo info{};
};

// The tables of a file's merged stream; each process section adds its sites and threads
// with ids of the whole file.
class ReplayTables final : public TraceContext {
 public:
  ReplayTables() {
    ReplaySite& dropped = sites.emplace_back();  // SiteId 0, for every process
    dropped.name = "ringtrace: dropped events";
    dropped.info = SiteInfo{dropped.name.c_str(), "", "", 0, SiteKind::instant, 0, ""};
  }
  const SiteInfo& site(SiteId id) const override { return sites[id].info; }
  std::uint32_t site_count() const override { return static_cast<std::uint32_t>(sites.size()); }
  const ThreadInfo& thread(ThreadId id) const override { return threads[id]; }
  std::uint32_t thread_count() const override { return static_cast<std::uint32_t>(threads.size()); }
  const ClockInfo& clock() const override { return clock_info; }
  const std::string& process_name() const override { return name; }
  std::uint32_t process_id() const override { return pid; }
  const std::string& process_name_of(std::uint32_t p) const override {
    const auto it = process_names.find(p);
    return it == process_names.end() ? name : it->second;
  }
  std::string_view node_id_of(std::uint32_t p) const override {
    const auto it = node_ids.find(p == 0 ? pid : p);
    return it == node_ids.end() ? std::string_view{} : std::string_view(it->second);
  }
  std::string_view text(const Event& e) const override {
    if ((e.kind != EventKind::arg && e.kind != EventKind::message) || (e.flags & EventFlags::text) == 0) return {};
    const auto it = texts.find(e.value.u);
    return it == texts.end() ? std::string_view{} : std::string_view(it->second);
  }
  std::span<const TraceMetadata> metadata() const override { return facts; }

  // A site of the file's (its strings owned here); returns its id.
  SiteId add_site(ReplaySite site, std::uint32_t line, SiteKind kind, std::uint8_t options, std::uint32_t every) {
    ReplaySite& s = sites.emplace_back(std::move(site));
    s.info = SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(),         line, kind,
                      options,        s.category.c_str(), every == 0 ? 1u : every};
    return static_cast<SiteId>(sites.size() - 1);
  }
  // The site of switch_out (out) or switch_in events, made at the file's first switch.
  SiteId switch_site(bool out) {
    return builtin_site(out ? switch_out_site_ : switch_in_site_, out ? kSwitchOutName : kSwitchInName);
  }
  // The site of alloc or free events (Config::memory), made at the file's first one.
  SiteId memory_site(bool alloc) {
    return builtin_site(alloc ? alloc_site_ : free_site_, alloc ? kAllocName : kFreeName);
  }
  // A fact of the file's metadata frames: a key given twice keeps its last value.
  void add_fact(TraceMetadata fact) {
    for (TraceMetadata& f : facts) {
      if (f.key == fact.key) {
        f.value = std::move(fact.value);
        return;
      }
    }
    facts.push_back(std::move(fact));
  }

  std::deque<ReplaySite> sites;  // a deque: SiteInfo's pointers into its strings stay valid
  std::vector<ThreadInfo> threads;
  // Args' texts, and alloc and free events' payloads (heap.hpp) until the heap's
  // accounting takes them out.
  std::unordered_map<std::uint64_t, std::string> texts;
  std::uint64_t next_text = 0;
  std::map<std::uint32_t, std::string> process_names;  // by ThreadInfo::pid (merged files)
  std::map<std::uint32_t, std::string> node_ids;       // by the pid process_names has
  std::vector<TraceMetadata> facts;
  std::string name;
  std::uint32_t pid = 0;
  ClockInfo clock_info;

 private:
  // An instant site of ringtrace's own named `name`, made at its first use (`id` 0: not yet).
  SiteId builtin_site(SiteId& id, const char* name) {
    if (id == 0) {
      ReplaySite s;
      s.name = name;
      id = add_site(std::move(s), 0, SiteKind::instant, 0, 1);
    }
    return id;
  }
  SiteId switch_out_site_ = 0, switch_in_site_ = 0;  // 0: not made yet
  SiteId alloc_site_ = 0, free_site_ = 0;
};

// Events per Exporter::on_events() call: a batch of events is handed over in spans of
// this many (the last one shorter).
inline constexpr std::size_t kSpan = 16384;

// Where a section hands its deliveries when nothing merges them with another's: straight
// to the exporters (a file of one process). A delivery is its threads' first events (by
// time, then thread; the time each is delivered at), then its events in spans of kSpan,
// then its end.
class Delivery {
 public:
  virtual void first_events(std::span<const std::pair<std::uint64_t, ThreadId>> firsts) = 0;
  virtual void events(std::span<const Event> span) = 0;
  virtual void end() = 0;

 protected:
  ~Delivery() = default;
};

// A growable array of events, as std::vector<Event> but grown without writing the new
// slots first: the decoder and the merge write each event once where resize() would
// zero it before.
class Events {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Event* data() { return data_.get(); }
  const Event* data() const { return data_.get(); }
  Event& operator[](std::size_t i) { return data_[i]; }
  const Event& operator[](std::size_t i) const { return data_[i]; }
  Event& back() { return data_[size_ - 1]; }
  void clear() { size_ = 0; }
  void push_back(const Event& e) {
    if (size_ == capacity_) grow(1);
    data_[size_++] = e;
  }
  // Room for `n` more events after the last: the caller writes them there, then keeps
  // those it wrote with resize().
  Event* reserve_more(std::size_t n) {
    if (capacity_ - size_ < n) grow(n);
    return data_.get() + size_;
  }
  void resize(std::size_t n) { size_ = n; }  // n <= the room reserved
  void erase_front(std::size_t n) {
    std::memmove(data_.get(), data_.get() + n, (size_ - n) * sizeof(Event));
    size_ -= n;
  }

 private:
  // Blocks of 2 MiB and more are whole huge pages, marked for the kernel's transparent
  // huge pages: faulting one in takes a fault per 2 MiB rather than per 4 KiB page (in a
  // virtual machine a fault is dear: they took a tenth of reading 8 threads' file, 9000
  // of them). Smaller blocks grow with realloc(), which moves a block's pages rather
  // than copy them to fresh ones that fault in again.
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  void grow(std::size_t n) {
    std::size_t capacity = std::max({size_ + n, 2 * capacity_, std::size_t{1024}});
    if (capacity * sizeof(Event) >= kHugePage) {
      const std::size_t bytes = (capacity * sizeof(Event) + kHugePage - 1) / kHugePage * kHugePage;
      auto* grown = static_cast<Event*>(std::aligned_alloc(kHugePage, bytes));
      if (grown == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(grown, bytes, MADV_HUGEPAGE);  // a hint: without it, plain pages
#endif
      if (size_ != 0) std::memcpy(grown, data_.get(), size_ * sizeof(Event));
      data_.reset(grown);
      capacity = bytes / sizeof(Event);
    } else {
      void* grown = std::realloc(data_.get(), capacity * sizeof(Event));
      if (grown == nullptr) throw std::bad_alloc();
      (void)data_.release();
      data_.reset(static_cast<Event*>(grown));
    }
    capacity_ = capacity;
  }

  struct Free {
    void operator()(Event* p) const { std::free(p); }
  };
  std::unique_ptr<Event[], Free> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace ringtrace::detail
