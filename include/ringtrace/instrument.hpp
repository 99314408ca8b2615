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
// Define RINGTRACE_DISABLED=1 (CMake: -DRINGTRACE_ENABLED=OFF) and every macro expands
// to nothing: no code, no static data, arguments not evaluated.
#pragma once

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

#else

#define RINGTRACE_SITE_(var, name, kind)                                                             \
  static constexpr ::ringtrace::SiteInfo var {                                                       \
    (name), __builtin_FUNCTION(), __FILE__, static_cast<std::uint32_t>(__LINE__), ::ringtrace::SiteKind::kind \
  }

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

// With a site from ringtrace::intern(): names known only at run time.
#define RINGTRACE_ZONE_SITE(site) \
  const ::ringtrace::detail::ScopedZone RINGTRACE_CAT(ringtrace_zone_, __LINE__) { (site) }
#define RINGTRACE_INSTANT_SITE(site) ::ringtrace::detail::instant(site)
#define RINGTRACE_COUNTER_SITE(site, value) ::ringtrace::detail::counter((site), (value))

#endif
