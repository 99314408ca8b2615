// ringtrace/instrument.hpp: what an instrumented source file includes. The macros and
// the inline hot path only; the session that records them is in ringtrace/session.hpp
// (ringtrace/ringtrace.hpp includes both).
//
//   RINGTRACE_ZONE("parse");               scoped zone named by a string literal
//   RINGTRACE_FUNCTION();                  scoped zone named after the enclosing function
//   RINGTRACE_INSTANT("checkpoint");       point event
//   RINGTRACE_COUNTER("queue_depth", 17);  integer or floating-point sample
//   RINGTRACE_REGION("compiled_graph", 3); scoped capture-region zone with an integer id
//   ringtrace::set_thread_name("worker-1");
//
// Rich events, attached to the innermost zone open on the thread:
//   RINGTRACE_ZONE_VALUE("bytes", n);         integer or floating-point argument
//   RINGTRACE_ZONE_TEXT("path", text, size);  text argument, copied (cut at 1024 bytes, marked)
//   RINGTRACE_FLOW_OUT(id);                   this zone starts flow `id` (64-bit)
//   RINGTRACE_FLOW_IN(id);                    this zone (any thread, later) ends it
// and on their own:
//   RINGTRACE_ASYNC_BEGIN("upload", id);      a span that may end on another thread
//   RINGTRACE_ASYNC_END("upload", id);
//   RINGTRACE_ZONE_IN("net", "recv");         a zone in category "net"
//   ringtrace::set_category_enabled("net", false);  at any time
//   RINGTRACE_COUNTER_PER_THREAD("depth", v); a counter with a track per thread
//
// Define RINGTRACE_DISABLED=1 (CMake: -DRINGTRACE_ENABLED=OFF) and every macro expands
// to nothing: no code, no static data, arguments not evaluated.
#pragma once

#include <cstddef>      // text sizes
#include <cstdint>      // region ids
#include <string_view>  // runtime names

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API, RINGTRACE_CAT
#include "ringtrace/detail/writer.hpp"    // the inline hot path
#include "ringtrace/site.hpp"             // SiteInfo, SiteKind

namespace ringtrace {

// Names the calling thread in every exporter (may be called before or during a
// session; the last name wins). Cold path: takes a lock and copies the name.
RINGTRACE_API void set_thread_name(std::string_view name);

// A call site for a name only known at run time. The same (name, kind) gives the same
// pointer; the object lives until the process exits. Cold path: takes a lock and may
// allocate, so look a name up once and keep the pointer. Interned sites have file ""
// and line 0.
RINGTRACE_API const SiteInfo* intern(std::string_view name, SiteKind kind = SiteKind::zone);

// Switches a category on or off for the whole process, at any time (before, during or
// between sessions; Config::disabled_categories are switched off at each start()). A
// zone of a category that is off is not recorded, nor is what attaches to it; the
// decision is made at the zone's begin. Categories are on until switched off. Cold
// path: takes a lock. At most 254 distinct category names have a switch of their own;
// further names share one (a warning in the README, not an error).
RINGTRACE_API void set_category_enabled(std::string_view category, bool enabled);
RINGTRACE_API bool category_enabled(std::string_view category);

}  // namespace ringtrace

#if defined(RINGTRACE_DISABLED) && RINGTRACE_DISABLED

#define RINGTRACE_ZONE(name) static_cast<void>(0)
#define RINGTRACE_FUNCTION() static_cast<void>(0)
#define RINGTRACE_INSTANT(name) static_cast<void>(0)
#define RINGTRACE_COUNTER(name, value) static_cast<void>(0)
#define RINGTRACE_REGION(name, id) static_cast<void>(0)
#define RINGTRACE_ZONE_SITE(site) static_cast<void>(0)
#define RINGTRACE_INSTANT_SITE(site) static_cast<void>(0)
#define RINGTRACE_COUNTER_SITE(site, value) static_cast<void>(0)
#define RINGTRACE_ZONE_VALUE(key, value) static_cast<void>(0)
#define RINGTRACE_ZONE_TEXT(key, text, size) static_cast<void>(0)
#define RINGTRACE_FLOW_OUT(id) static_cast<void>(0)
#define RINGTRACE_FLOW_IN(id) static_cast<void>(0)
#define RINGTRACE_ASYNC_BEGIN(name, id) static_cast<void>(0)
#define RINGTRACE_ASYNC_END(name, id) static_cast<void>(0)
#define RINGTRACE_ZONE_IN(category, name) static_cast<void>(0)
#define RINGTRACE_ZONE_SAMPLED(name, every) static_cast<void>(0)
#define RINGTRACE_COUNTER_PER_THREAD(name, value) static_cast<void>(0)

#else

#define RINGTRACE_SITE_FULL_(var, name, kind, options, category)                                      \
  static constexpr ::ringtrace::SiteInfo var {                                                          \
    (name), __builtin_FUNCTION(), __FILE__, static_cast<std::uint32_t>(__LINE__), ::ringtrace::SiteKind::kind, \
        (options), (category)                                                                           \
  }
#define RINGTRACE_SITE_(var, name, kind) RINGTRACE_SITE_FULL_(var, name, kind, 0, "")

#define RINGTRACE_ZONE(name)                                          \
  RINGTRACE_SITE_(RINGTRACE_CAT(ringtrace_site_, __LINE__), name, zone); \
  const ::ringtrace::detail::ScopedZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) { \
    &RINGTRACE_CAT(ringtrace_site_, __LINE__)                         \
  }

#define RINGTRACE_FUNCTION() RINGTRACE_ZONE(__builtin_FUNCTION())

#define RINGTRACE_INSTANT(name)                                               \
  do {                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, name, instant);                          \
    ::ringtrace::detail::instant(&ringtrace_site_);                           \
  } while (0)

#define RINGTRACE_COUNTER(name, value)                                        \
  do {                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, name, counter);                          \
    ::ringtrace::detail::counter(&ringtrace_site_, (value));                  \
  } while (0)

#define RINGTRACE_REGION(name, id)                                              \
  RINGTRACE_SITE_(RINGTRACE_CAT(ringtrace_site_, __LINE__), name, region);      \
  const ::ringtrace::detail::ScopedZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) { \
    &RINGTRACE_CAT(ringtrace_site_, __LINE__), static_cast<std::int64_t>(id)    \
  }

#define RINGTRACE_ZONE_IN(category, name)                                                       \
  RINGTRACE_SITE_FULL_(RINGTRACE_CAT(ringtrace_site_, __LINE__), name, zone, 0, category);        \
  static constinit ::ringtrace::detail::CategorySlot RINGTRACE_CAT(ringtrace_category_, __LINE__){}; \
  const ::ringtrace::detail::ScopedZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) {                \
    &RINGTRACE_CAT(ringtrace_site_, __LINE__), RINGTRACE_CAT(ringtrace_category_, __LINE__)       \
  }

// A zone recorded one time in `every` (a constant; 0: the session's
// Config::sample_every) per thread, the first recorded; a zone left out takes
// everything its thread records inside it along (see zone_open_sampled).
#define RINGTRACE_ZONE_SAMPLED(name, every)                                                            \
  static constexpr ::ringtrace::SiteInfo RINGTRACE_CAT(ringtrace_site_, __LINE__) {                     \
    (name), __builtin_FUNCTION(), __FILE__, static_cast<std::uint32_t>(__LINE__), ::ringtrace::SiteKind::zone, \
        ::ringtrace::SiteOptions::sampled, "", static_cast<std::uint32_t>(every)                          \
  };                                                                                                    \
  static constinit thread_local std::uint32_t RINGTRACE_CAT(ringtrace_sample_left_, __LINE__) = 0;     \
  const ::ringtrace::detail::SampledZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) {                     \
    &RINGTRACE_CAT(ringtrace_site_, __LINE__), RINGTRACE_CAT(ringtrace_sample_left_, __LINE__)          \
  }

#define RINGTRACE_ZONE_VALUE(key, number)                                     \
  do {                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, key, value);                             \
    ::ringtrace::detail::zone_value(&ringtrace_site_, (number));              \
  } while (0)

#define RINGTRACE_ZONE_TEXT(key, text, size)                                  \
  do {                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, key, value);                             \
    ::ringtrace::detail::zone_text(&ringtrace_site_, (text), static_cast<std::size_t>(size)); \
  } while (0)

#define RINGTRACE_FLOW_OUT(id)                                                                        \
  do {                                                                                                \
    RINGTRACE_SITE_(ringtrace_site_, "flow", flow_out);                                               \
    ::ringtrace::detail::attach<::ringtrace::detail::record_value_int>(&ringtrace_site_,              \
                                                                       static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_FLOW_IN(id)                                                                         \
  do {                                                                                                \
    RINGTRACE_SITE_(ringtrace_site_, "flow", flow_in);                                                \
    ::ringtrace::detail::attach<::ringtrace::detail::record_value_int>(&ringtrace_site_,              \
                                                                       static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_ASYNC_BEGIN(name, id)                                                \
  do {                                                                                 \
    RINGTRACE_SITE_(ringtrace_site_, name, async_begin);                               \
    ::ringtrace::detail::timed_value(&ringtrace_site_, static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_ASYNC_END(name, id)                                                  \
  do {                                                                                 \
    RINGTRACE_SITE_(ringtrace_site_, name, async_end);                                 \
    ::ringtrace::detail::timed_value(&ringtrace_site_, static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_COUNTER_PER_THREAD(name, value)                                                   \
  do {                                                                                              \
    RINGTRACE_SITE_FULL_(ringtrace_site_, name, counter, ::ringtrace::SiteOptions::per_thread_track, ""); \
    ::ringtrace::detail::counter(&ringtrace_site_, (value));                                        \
  } while (0)

// With a site from ringtrace::intern(): names known only at run time.
#define RINGTRACE_ZONE_SITE(site) \
  const ::ringtrace::detail::ScopedZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) { (site) }
#define RINGTRACE_INSTANT_SITE(site) ::ringtrace::detail::instant(site)
#define RINGTRACE_COUNTER_SITE(site, value) ::ringtrace::detail::counter((site), (value))

#endif
