// The one decoder of ring records into events (include/ringtrace/detail/record.hpp), for
// the live drainer (a thread's ring) and the binary file's reader (a chunk's packed
// records unpacked into ring records, or a ring file's rings). Every rule that turns a
// thread's records into its events is here, once:
//
// - time: a thread's ticks never go back (a thread that migrates between cores can read
//   a TSC a few cycles behind), and its zone boundaries are `gap` ticks apart at least
//   (boundary_gap_ticks(): a nanosecond of their own, so that nesting is never a guess);
//   ticks convert to CLOCK_MONOTONIC ns with the session's clock segments, and a
//   thread's nanoseconds never go back either;
// - what is held back: a record stamped after `until` (a pass's watermark) waits for a
//   later call; one stamped after `stop` is not part of the capture, nor is anything the
//   thread recorded after it;
// - zones: an end closes the innermost zone open on the thread (site, flags and region
//   id of its begin); an end with none open is unbalanced (counted, dropped); a step
//   marker becomes the step zones' end and begin on the steps track (steps.hpp);
// - values, counters, flows and async spans by their site's kind; texts stored by the
//   owner (Texts policy); drop markers become `dropped` events.
// Late events (older than what was already delivered across threads) are the merge's
// rule (merge.hpp); closing what is open at the end is close_zones() below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "clock_calibration.hpp"
#include "heap.hpp"  // kMemoryPayloadBytes
#include "ring_records.hpp"
#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"
#include "steps.hpp"

namespace ringtrace::detail {

// A zone open on a thread (not "OpenZone": exporters/common/zone_tracker.hpp has one in
// the same namespace, and two layouts under one name break std::vector's instances):
// two whole words, written and read whole (a stack entry
// popped right after it was pushed then comes from store forwarding).
struct OpenRecordZone {
  std::uint64_t site_and_flags;  // site | flags << 32
  std::uint64_t value;           // region id
  SiteId site() const { return static_cast<SiteId>(site_and_flags); }
  std::uint8_t flags() const { return static_cast<std::uint8_t>(site_and_flags >> 32); }
  static OpenRecordZone make(SiteId site, std::uint8_t flags, std::uint64_t value) {
    return OpenRecordZone{site | (static_cast<std::uint64_t>(flags) << 32), value};
  }
};

// One thread's decoding state between calls.
struct ThreadDecodeState {
  ThreadId thread = 0;
  std::vector<OpenRecordZone> open;  // open[0, depth): the zones open, innermost last (slots above are kept)
  std::size_t depth = 0;
  std::uint64_t last_ticks = 0;  // the previous record's ticks, as the rules raised them
  std::uint64_t last_ns = 0;
  std::uint64_t recorded = 0;        // events decoded (drop markers are not events recorded)
  std::uint64_t reported_drops = 0;  // the counts of the drop markers decoded
  std::uint64_t first_ticks = 0;     // of the thread's first record decoded
  bool started = false;              // first_ticks is known
  bool past_stop = false;            // a record after the stop time was read: the rest are too
};

// The session's steps track (steps.hpp): its step zone, open or not, as of the latest
// step marker decoded by time (threads are decoded one after the other, but markers are
// recorded one at a time, so the latest by time is the last one recorded).
struct StepTrack {
  bool open = false;          // a step's zone is open
  std::uint64_t number = 0;   // its step number
  std::uint64_t last_ns = 0;  // the latest marker's time
  bool seen = false;          // a marker was decoded
};

// What a decoder keeps for the whole session, across threads.
struct DecodeCounts {
  std::uint64_t unbalanced_ends = 0;
  std::uint64_t skipped_extended = 0;  // record_extended subtypes this version does not know
  std::uint64_t too_large_bytes = 0;   // the size of the memory record that stopped a decode (DecodeStop::too_large)
  StepTrack steps;
};

enum class DecodeStop : std::uint8_t {
  end,        // every record given was decoded
  room,       // the output is full
  held,       // the next record is stamped after `until`: a later call takes it
  waiting,    // the next record's header is 0: it is being written (live rings only)
  past_stop,  // a record after the stop time: the thread's capture is over
  unknown,    // a record this version cannot read (an unknown kind, a size past the end)
  no_site,    // the Sites policy knows no call site for a record (a damaged file)
  too_large,  // a file's memory record of kAddressSpaceBytes or more (DecodeCounts::too_large_bytes)
};

// What value and async records become, by their site's kind.
inline EventKind value_event_kind(SiteKind kind) {
  switch (kind) {
    case SiteKind::value:
      return EventKind::arg;
    case SiteKind::flow_out:
      return EventKind::flow_out;
    case SiteKind::flow_in:
      return EventKind::flow_in;
    case SiteKind::async_begin:
      return EventKind::async_begin;
    case SiteKind::async_end:
      return EventKind::async_end;
    default:
      return EventKind::counter;
  }
}

// The decoder. Policies (each a small class of the drainer's or the reader's):
//   Sites: SiteId site(std::uint64_t header)     the record's call site (kInvalidSite: none)
//          const SiteInfo& info(SiteId)           its description (the kind of a value)
//          SiteId step_site()                      the step zones' site (steps.hpp)
//          ThreadId steps_thread()                 the steps track's thread
//          SiteId function(std::uint64_t header)  a function entry's zone site (kInvalidSite: none)
//          SiteId named(std::uint64_t header, std::string_view name)
//                                                 a zone named at run time: its site (runtime_names.hpp)
//          SiteId dropped()                       the site of `dropped` events
//          SiteId memory(ExtendedKind)            the site of `alloc` / `free` events
//   Texts: std::uint64_t store(const char*, std::size_t)   keeps a text (or an alloc's or
//                                                 free's payload, heap.hpp); returns Event::value.u
//   Clock: std::uint64_t to_ns(std::uint64_t ticks) const    any ticks to ns
//          ClockSegment fast() const     a line that converts every ticks from its base on
//                                        as to_ns() does (kept in registers by decode())
inline constexpr SiteId kInvalidSite = 0xFFFFFFFFu;

template <class Sites, class Texts, class Clock>
class RingDecoder {
 public:
  RingDecoder(Sites& sites, Texts& texts, const Clock& clock, std::uint64_t gap, DecodeCounts& counts)
      : sites_(sites), texts_(texts), clock_(clock), gap_(gap), counts_(counts) {}

  struct Limits {
    std::uint64_t until = ~std::uint64_t{0};  // records stamped after this wait
    std::uint64_t stop = ~std::uint64_t{0};   // records stamped after this are not captured
  };

  // Decodes the records at `records` (whole records, or a header still 0 where one is
  // being written) into out[n, capacity), moving both on; returns why it stopped.
  // `live`: a header 0 means "being written" (else a record this version cannot read).
  // Not live, the records are a file's, untrusted: a memory record of kAddressSpaceBytes
  // or more (heap.hpp) stops the decode (too_large). A live ring's were written by this
  // process, of blocks its allocator gave it.
  //
  // The decoder's hot loop: zone ends and begins, the bulk of a trace, are decoded first
  // and apart from the other kinds. The thread's state is in locals while it runs (the
  // stores of events could alias its fields) and put back on the way out; the open zones
  // are open[0, depth) of a vector whose slots above depth are kept, so that the loop
  // writes them without growing it.
  DecodeStop decode(ThreadDecodeState& s, std::span<const std::uint8_t>& records, Event* out, std::size_t& n,
                    std::size_t capacity, Limits limits, bool live) {
    if (s.past_stop) return DecodeStop::past_stop;
    const std::uint8_t* at = records.data();
    const std::uint8_t* const end = at + records.size();
    const std::uint8_t* const start = at;
    std::uint64_t last_ticks = s.last_ticks, last_ns = s.last_ns, recorded = s.recorded;
    std::size_t count = n, depth = s.depth;
    OpenRecordZone* open = s.open.data();
    std::size_t slots = s.open.size();
    // The sites of the last begins' headers, by a hash of the header: a loop's zones are a
    // few call sites' (a local array: no store of an event can alias it).
    constexpr unsigned kCache = 8;
    std::uint64_t cached_header[kCache] = {};
    SiteId cached_site[kCache];
    DecodeStop why = DecodeStop::end;
    const std::uint64_t gap = gap_;
    const std::uint64_t stop = limits.stop < limits.until ? limits.stop : limits.until;
    const ThreadId thread = s.thread;
    // The clock's newest segment in locals: the stores of events could alias the policy's.
    const ClockSegment line = clock_.fast();
    const auto to_ns = [&](std::uint64_t ticks) {
      if (ticks >= line.base_ticks) [[likely]]
        return line.base_ns + SegmentClock::scale(ticks - line.base_ticks, line.mult);
      return clock_.to_ns(ticks);
    };
    // A record whose time is past `stop` (the until or the stop limit): which one.
    const auto past = [&](std::uint64_t ticks) {
      if (ticks > limits.stop) {
        s.past_stop = true;
        return DecodeStop::past_stop;
      }
      return DecodeStop::held;
    };
    while (at < end) {
      if (count == capacity) {
        why = DecodeStop::room;
        break;
      }
      const std::uint64_t header = load_header(at);
      if ((header & kRecordEndBit) != 0) {  // a zone end: one slot
        const std::uint64_t raw = header >> 1;
        const std::uint64_t ticks = raw < last_ticks + gap ? last_ticks + gap : raw;
        if (ticks > stop) {
          why = past(ticks);
          break;
        }
        last_ticks = ticks;
        at += sizeof(EndRecord);
        if (depth == 0) {
          ++counts_.unbalanced_ends;
          continue;
        }
        std::uint64_t ns = to_ns(ticks);
        ns = ns < last_ns ? last_ns : ns;
        last_ns = ns;
        const OpenRecordZone zone = open[--depth];
        Event& e = out[count++];
        e = Event{ns, zone.site(), thread, EventKind::zone_end, zone.flags(), 0, static_cast<std::uint32_t>(depth), {}};
        e.value.u = zone.value;
        ++recorded;
        continue;
      }
      if ((header & kRecordKindMask) == (std::uint64_t{record_zone_begin} << kRecordKindShift) &&
          end - at >= static_cast<std::ptrdiff_t>(sizeof(TimedRecord)) && depth < slots) {
        const std::uint64_t raw = field_at(at, offsetof(TimedRecord, ticks));
        const std::uint64_t ticks = raw < last_ticks + gap ? last_ticks + gap : raw;
        if (ticks > stop) {
          why = past(ticks);
          break;
        }
        const unsigned slot = static_cast<unsigned>((header >> 5) ^ (header >> 9)) % kCache;
        if (header != cached_header[slot]) {
          const SiteId site = sites_.site(header);
          if (site == kInvalidSite) {
            why = DecodeStop::no_site;
            break;
          }
          cached_header[slot] = header;
          cached_site[slot] = site;
        }
        const SiteId last_site = cached_site[slot];
        last_ticks = ticks;
        at += sizeof(TimedRecord);
        std::uint64_t ns = to_ns(ticks);
        ns = ns < last_ns ? last_ns : ns;
        last_ns = ns;
        open[depth] = OpenRecordZone::make(last_site, 0, 0);
        Event& e = out[count++];
        e = Event{ns, last_site, thread, EventKind::zone_begin, 0, 0, static_cast<std::uint32_t>(depth), {}};
        e.value.u = 0;
        ++depth;
        ++recorded;
        continue;
      }
      // Any other record.
      if (header == 0) {
        why = live ? DecodeStop::waiting : DecodeStop::unknown;
        break;
      }
      const std::uint64_t bytes = ring_record_bytes(header, at, static_cast<std::uint64_t>(end - at));
      if (bytes == 0) {
        why = DecodeStop::unknown;
        break;
      }
      const RecordKind kind = kind_of(header);
      const bool timed = record_has_time(header);
      const bool boundary = kind_begins_zone(kind);  // (an end is a boundary too: not here)
      std::uint64_t ticks = last_ticks;
      std::uint64_t ns = last_ns;
      if (timed) {
        const std::uint64_t raw = field_at(at, offsetof(TimedRecord, ticks));  // every timed record's ticks are there
        const std::uint64_t least = last_ticks + (boundary ? gap : 0);
        ticks = raw < least ? least : raw;
        if (ticks > stop) {
          why = past(ticks);
          break;
        }
        ns = to_ns(ticks);
        ns = ns < last_ns ? last_ns : ns;
      }
      bool format1_step = false;  // a step marker of format 1: a zone of this thread (the switch below)
      if (kind == record_region_begin) [[unlikely]] {
        // A step marker: the step zones' end and begin on the steps track (steps.hpp).
        const SiteId marker = sites_.site(header);
        if (marker == kInvalidSite) {
          why = DecodeStop::no_site;
          break;
        }
        const std::uint64_t v = field_at(at, offsetof(TimedValueRecord, value));
        const bool step_marker = is_step_marker(sites_.info(marker));
        format1_step = step_marker && is_format1_marker(v);
        if (step_marker && !format1_step) {
          if (capacity - count < 2) {
            why = DecodeStop::room;
            break;
          }
          const std::size_t made = step_zones(v, ns, out + count);
          count += made;
          recorded += made;
          at += bytes;
          last_ticks = ticks;
          last_ns = ns;
          continue;
        }
      }
      if (boundary && depth == slots) {  // deeper than the thread has been: room for one more
        s.open.resize(slots < 16 ? 16 : 2 * slots);
        open = s.open.data();
        slots = s.open.size();
      }
      Event& e = out[count];
      e = Event{ns, 0, thread, EventKind::instant, 0, 0, static_cast<std::uint32_t>(depth), {}};
      e.value.u = 0;
      bool emitted = true;
      bool too_large = false;  // a file's memory record of a size no process allocates
      SiteId site = kInvalidSite;
      switch (kind) {
        case record_zone_begin:
        case record_function_entry:
          site = kind == record_function_entry ? sites_.function(header) : sites_.site(header);
          if (site == kInvalidSite) break;
          e.kind = EventKind::zone_begin;
          e.site = site;
          open[depth++] = OpenRecordZone::make(site, 0, 0);
          break;
        case record_zone_begin_named: {
          // The name's bytes give the zone its site; a name cut at recording flags the begin.
          const std::uint64_t size = field_at(at, offsetof(TimedTextRecord, size));
          site = named_site(header, at, size);
          if (site == kInvalidSite) break;
          e.kind = EventKind::zone_begin;
          e.site = site;
          if ((size & kTextTruncated) != 0) e.flags = EventFlags::truncated;
          open[depth++] = OpenRecordZone::make(site, 0, 0);
          break;
        }
        case record_region_begin: {
          site = sites_.site(header);
          if (site == kInvalidSite) break;
          e.kind = EventKind::zone_begin;
          const std::uint64_t id = field_at(at, offsetof(TimedValueRecord, value));
          if (format1_step) [[unlikely]] {
            // Step N's zone on the thread that recorded the marker, ended by that thread's
            // next zone end (which format 1's step() wrote before its next marker).
            e.site = sites_.step_site();
            e.value.u = id;
            open[depth++] = OpenRecordZone::make(e.site, 0, id);
            break;
          }
          e.site = site;
          e.flags = EventFlags::region;
          e.value.u = id;
          open[depth++] = OpenRecordZone::make(site, EventFlags::region, id);
          break;
        }
        case record_instant:
          site = sites_.site(header);
          e.site = site;
          break;
        case record_timed_int:
        case record_timed_double:
        case record_arg_int:
        case record_arg_double:
          site = sites_.site(header);
          if (site == kInvalidSite) break;
          e.site = site;
          e.kind = value_event_kind(sites_.info(site).kind);
          if (kind == record_timed_double || kind == record_arg_double) e.flags = EventFlags::value_double;
          e.value.u = field_at(at, timed ? offsetof(TimedValueRecord, value) : offsetof(ArgRecord, value));
          break;
        case record_arg_text:
        case record_message: {
          site = sites_.site(header);
          if (site == kInvalidSite) break;
          // A TextRecord or a TimedTextRecord: the size slot last, then the text.
          const std::uint64_t size_at = text_size_offset(kind);
          const std::uint64_t size = field_at(at, size_at);
          const std::uint64_t text = text_bytes(size);
          e.site = site;
          e.kind = kind == record_arg_text ? EventKind::arg : EventKind::message;
          e.flags = EventFlags::text | ((size & kTextTruncated) != 0 ? EventFlags::truncated : 0);
          e.text_size = static_cast<std::uint16_t>(text);
          e.value.u = texts_.store(reinterpret_cast<const char*>(at + size_at + 8), static_cast<std::size_t>(text));
          break;
        }
        case record_dropped:
          site = sites_.dropped();
          e.site = site;
          e.kind = EventKind::dropped;
          e.value.u = field_at(at, offsetof(TimedValueRecord, value));
          s.reported_drops += e.value.u;
          --recorded;  // a marker is not a recorded event
          break;
        default: {  // record_extended
          const std::uint64_t subtype = extended_subtype(header);
          if (is_memory_record(header)) {  // timed, of its subtype's slots (else skipped as an unknown one)
            // An allocation or a free: its address, size, caller and stack go with the
            // event through the owner's store to the heap's accounting after the merge
            // (heap.hpp), which gives exporters the size in value.u.
            const bool free = subtype == extended_free;
            const std::uint64_t size = field_at(at, offsetof(MemoryRecord, size));
            if (!live && size >= kAddressSpaceBytes) [[unlikely]] {
              counts_.too_large_bytes = size;
              too_large = true;
              break;
            }
            site = sites_.memory(free ? extended_free : extended_alloc);
            if (site == kInvalidSite) break;
            e.site = site;
            e.kind = free ? EventKind::free : EventKind::alloc;
            const bool with_caller = subtype == extended_alloc_at;
            const std::uint64_t frames = with_caller ? alloc_frames(header) : 0;
            std::uint64_t stack[kMaxAllocFrames];
            for (std::uint64_t f = 0; f < frames; ++f) stack[f] = field_at(at, sizeof(AllocRecord) + 8 * f);
            alignas(8) char payload[kMaxMemoryPayloadBytes];
            e.text_size =
                write_memory_payload(payload, field_at(at, offsetof(MemoryRecord, address)), size,
                                     with_caller ? field_at(at, offsetof(AllocRecord, caller)) : 0,
                                     ((header & kMemorySampledOut) != 0 ? kPayloadSampledOut : 0) |
                                         (!free && (header & kMemoryRestore) != 0 ? kPayloadRestore : 0) |
                                         (with_caller && (header & kMemoryStackSampled) != 0 ? kPayloadSampled : 0),
                                     stack, static_cast<std::size_t>(frames));
            e.value.u = texts_.store(payload, e.text_size);
            break;
          }
          // Padding, or a subtype of a later version (skipped, counted).
          site = 0;
          if (subtype != extended_padding) ++counts_.skipped_extended;
          emitted = false;
          break;
        }
      }
      if (too_large) [[unlikely]] {
        why = DecodeStop::too_large;
        break;
      }
      if (site == kInvalidSite) {
        why = DecodeStop::no_site;
        break;
      }
      at += bytes;
      last_ticks = ticks;
      last_ns = ns;
      if (emitted) {
        ++count;
        ++recorded;
      }
    }
    if (!s.started && at != start) {
      s.started = true;
      const std::uint64_t first = load_header(start);
      s.first_ticks = record_has_time(first) ? record_ticks(first, start, 0) : s.last_ticks;
    }
    records = std::span<const std::uint8_t>(at, end);
    s.last_ticks = last_ticks;
    s.last_ns = last_ns;
    s.recorded = recorded;
    s.depth = depth;
    n = count;
    return why;
  }

 private:
  // Out of line: the interning of a run-time name stays out of decode()'s loop.
  __attribute__((noinline)) SiteId named_site(std::uint64_t header, const std::uint8_t* at, std::uint64_t size) {
    return sites_.named(header, std::string_view(reinterpret_cast<const char*>(at + sizeof(TimedTextRecord)),
                                                 static_cast<std::size_t>(text_bytes(size))));
  }

  // A step marker's zones (steps.hpp) on the steps track, at `ns`, into out[0, 2): the end
  // of step N - 1 and the begin of step N, as its value `v` says. Returns how many. Keeps
  // the track's open step as of the latest marker by time.
  __attribute__((noinline)) std::size_t step_zones(std::uint64_t v, std::uint64_t ns, Event* out) {
    const std::uint64_t number = v & kStepNumberMask;
    const SiteId step_site = sites_.step_site();
    const ThreadId track = sites_.steps_thread();
    StepTrack& steps = counts_.steps;
    const bool latest = !steps.seen || ns >= steps.last_ns;
    std::size_t made = 0;
    if ((v & kStepEnds) != 0 && number != 0) {
      Event& end_event = out[made++];
      end_event = Event{ns, step_site, track, EventKind::zone_end, 0, 0, 0, {}};
      end_event.value.u = number - 1;
      if (latest) steps.open = false;
    }
    if ((v & kStepBegins) != 0) {
      Event& begin_event = out[made++];
      begin_event = Event{ns, step_site, track, EventKind::zone_begin, 0, 0, 0, {}};
      begin_event.value.u = number;
      if (latest) {
        steps.open = true;
        steps.number = number;
      }
    }
    if (latest) {
      steps.last_ns = ns;
      steps.seen = true;
    }
    return made;
  }

  Sites& sites_;
  Texts& texts_;
  const Clock& clock_;
  std::uint64_t gap_;
  DecodeCounts& counts_;
};

// Closes every zone still open on the thread at `ns` with `flags` (closed_at_stop, or
// closed_at_window_end), innermost first; `next()` gives the Event to write each into.
// Returns how many it closed.
template <class Next>
std::size_t close_zones(ThreadDecodeState& s, std::uint64_t ns, std::uint8_t flags, Next&& next) {
  const std::size_t closed = s.depth;
  while (s.depth > 0) {
    const OpenRecordZone zone = s.open[--s.depth];
    Event& e = next();
    e = Event{ns,
              zone.site(),
              s.thread,
              EventKind::zone_end,
              static_cast<std::uint8_t>(zone.flags() | flags),
              0,
              static_cast<std::uint32_t>(s.depth),
              {}};
    e.value.u = zone.value;
  }
  return closed;
}

}  // namespace ringtrace::detail
