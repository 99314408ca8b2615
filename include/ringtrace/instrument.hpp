// ringtrace/instrument.hpp: what an instrumented source file includes. The macros and
// the inline hot path only; the session that records them is in ringtrace/session.hpp
// (ringtrace/ringtrace.hpp includes both).
//
//   RINGTRACE_ZONE("parse");               scoped zone named by a string literal
//   RINGTRACE_ZONE("send", "bytes", n, "peer", id);  with up to four key/value arguments
//   RINGTRACE_ZONE_DYNAMIC(name);          scoped zone named by a std::string_view at run time
//   RINGTRACE_ZONE_BEGIN("load"); ... RINGTRACE_ZONE_END();  begun and ended apart (one thread)
//   RINGTRACE_FUNCTION();                  scoped zone named "ns::Class::method" (enclosing function)
//   RINGTRACE_MESSAGE("cache flushed");    a line of text (a literal or any std::string_view)
//   RINGTRACE_INSTANT("checkpoint");       point event
//   RINGTRACE_COUNTER("queue_depth", 17);  integer or floating-point sample
//   RINGTRACE_REGION("compiled_graph", 3); scoped capture-region zone with an integer id
//   ringtrace::set_thread_name("worker-1");
//
// Rich events, attached to the innermost zone open on the thread:
//   RINGTRACE_ZONE_VALUE("bytes", n);         integer or floating-point argument
//   RINGTRACE_ZONE_TEXT("path", text);        text argument (std::string_view, std::string, literal)
//   RINGTRACE_ZONE_TEXT("path", text, size);  text argument of `size` bytes, copied (cut at 1024 bytes, marked)
//   RINGTRACE_ZONE_FLOPS(n);                  the zone did n floating-point operations (value "flops")
//   RINGTRACE_FLOW_OUT(id);                   this zone starts flow `id` (64-bit)
//   RINGTRACE_FLOW_IN(id);                    this zone (any thread, later) ends it
// and on their own:
//   RINGTRACE_ASYNC_BEGIN("upload", id);      a span that may end on another thread
//   RINGTRACE_ASYNC_END("upload", id);
//   RINGTRACE_ZONE_IN("net", "recv");         a zone in category "net"
//   ringtrace::set_category_enabled("net", false);  at any time
//   RINGTRACE_COUNTER_PER_THREAD("depth", v); a counter with a track per thread
//   RINGTRACE_FRAME();                        a frame boundary: ringtrace::frame_mark()
//
// Define RINGTRACE_DISABLED=1 (CMake: -DRINGTRACE_ENABLED=OFF) and every macro expands
// to nothing: no code, no static data, arguments not evaluated.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

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
// further names share one (a warning in docs/guide.md, not an error).
RINGTRACE_API void set_category_enabled(std::string_view category, bool enabled);
RINGTRACE_API bool category_enabled(std::string_view category);

// A frame boundary (Tracy's FrameMark): the running session's step(), from any thread,
// without the Session object. Frames are the zones "step #N" on the "steps" track, and
// drive a schedule's windows as step() does. Nothing when no session runs. Takes a
// short spin lock that step() shares: not from a signal handler.
RINGTRACE_API void frame_mark() noexcept;

}  // namespace ringtrace

#if defined(RINGTRACE_DISABLED) && RINGTRACE_DISABLED

#define RINGTRACE_ZONE(...) static_cast<void>(0)
#define RINGTRACE_ZONE_DYNAMIC(name) static_cast<void>(0)
#define RINGTRACE_ZONE_BEGIN(name) static_cast<void>(0)
#define RINGTRACE_ZONE_END() static_cast<void>(0)
#define RINGTRACE_MESSAGE(text) static_cast<void>(0)
#define RINGTRACE_FUNCTION() static_cast<void>(0)
#define RINGTRACE_INSTANT(name) static_cast<void>(0)
#define RINGTRACE_COUNTER(name, value) static_cast<void>(0)
#define RINGTRACE_REGION(name, id) static_cast<void>(0)
#define RINGTRACE_ZONE_SITE(site) static_cast<void>(0)
#define RINGTRACE_INSTANT_SITE(site) static_cast<void>(0)
#define RINGTRACE_COUNTER_SITE(site, value) static_cast<void>(0)
#define RINGTRACE_ZONE_VALUE(key, value) static_cast<void>(0)
#define RINGTRACE_ZONE_FLOPS(count) static_cast<void>(0)
#define RINGTRACE_ZONE_TEXT(...) static_cast<void>(0)
#define RINGTRACE_FLOW_OUT(id) static_cast<void>(0)
#define RINGTRACE_FLOW_IN(id) static_cast<void>(0)
#define RINGTRACE_ASYNC_BEGIN(name, id) static_cast<void>(0)
#define RINGTRACE_ASYNC_END(name, id) static_cast<void>(0)
#define RINGTRACE_ZONE_IN(category, name) static_cast<void>(0)
#define RINGTRACE_ZONE_SAMPLED(name, every) static_cast<void>(0)
#define RINGTRACE_COUNTER_PER_THREAD(name, value) static_cast<void>(0)
#define RINGTRACE_FRAME() static_cast<void>(0)

#else

#define RINGTRACE_FRAME() ::ringtrace::frame_mark()

#include "ringtrace/detail/function_name.hpp"  // RINGTRACE_FUNCTION's qualified name

// Every name a macro declares ends with a number of its own (__COUNTER__), so that any
// number of macros may share a line (and a macro may expand another).
#define RINGTRACE_SITE_FULL_(var, name, kind, options, category)                                               \
  static constexpr ::ringtrace::SiteInfo var {                                                                 \
    (name), __builtin_FUNCTION(), __FILE__, static_cast<std::uint32_t>(__LINE__), ::ringtrace::SiteKind::kind, \
        (options), (category)                                                                                  \
  }
#define RINGTRACE_SITE_(var, name, kind) RINGTRACE_SITE_FULL_(var, name, kind, 0, "")
#define RINGTRACE_ID_(prefix, id) RINGTRACE_CAT(prefix, id)

// How many arguments a variadic macro was given (1 to 9).
#define RINGTRACE_NARGS_(...) RINGTRACE_NARGS_PICK_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define RINGTRACE_NARGS_PICK_(a1, a2, a3, a4, a5, a6, a7, a8, a9, n, ...) n

// RINGTRACE_ZONE(name) and RINGTRACE_ZONE(name, key, value, ...): up to four key/value
// pairs, keys string literals, values integers or floating-point numbers. The values
// are evaluated only when a session runs; the begin and its arguments are one
// reservation of the ring (zone_open_args).
#define RINGTRACE_ZONE(...) RINGTRACE_ZONE_N_(RINGTRACE_NARGS_(__VA_ARGS__), __COUNTER__, __VA_ARGS__)
#define RINGTRACE_ZONE_N_(n, id, ...) RINGTRACE_CAT(RINGTRACE_ZONE_ARGS_, n)(id, __VA_ARGS__)
#define RINGTRACE_ZONE_ARGS_1(id, name)                            \
  RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, id), name, zone); \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, id) { &RINGTRACE_ID_(ringtrace_site_, id) }
#define RINGTRACE_ZONE_KEY_(id, n, key) RINGTRACE_SITE_(RINGTRACE_CAT(RINGTRACE_ID_(ringtrace_key_, id), n), key, value)
#define RINGTRACE_ZONE_ARG_(id, n, v) \
  ::ringtrace::detail::zone_arg(&RINGTRACE_CAT(RINGTRACE_ID_(ringtrace_key_, id), n), (v))
#define RINGTRACE_ZONE_WITH_ARGS_(id, name, ...)                                                  \
  RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, id), name, zone);                                \
  const std::uint32_t RINGTRACE_ID_(ringtrace_epoch_, id) =                                       \
      ::ringtrace::detail::g_epoch.load(std::memory_order_relaxed);                               \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, id) {                            \
    ::ringtrace::detail::ZoneToken {                                                              \
      RINGTRACE_ID_(ringtrace_epoch_, id) == 0                                                    \
          ? ::ringtrace::detail::kNoSession                                                       \
          : ::ringtrace::detail::zone_open_args(RINGTRACE_ID_(ringtrace_epoch_, id),              \
                                                &RINGTRACE_ID_(ringtrace_site_, id), __VA_ARGS__) \
    }                                                                                             \
  }
#define RINGTRACE_ZONE_ARGS_3(id, name, k1, v1) \
  RINGTRACE_ZONE_KEY_(id, 1, k1);               \
  RINGTRACE_ZONE_WITH_ARGS_(id, name, RINGTRACE_ZONE_ARG_(id, 1, v1))
#define RINGTRACE_ZONE_ARGS_5(id, name, k1, v1, k2, v2) \
  RINGTRACE_ZONE_KEY_(id, 1, k1);                       \
  RINGTRACE_ZONE_KEY_(id, 2, k2);                       \
  RINGTRACE_ZONE_WITH_ARGS_(id, name, RINGTRACE_ZONE_ARG_(id, 1, v1), RINGTRACE_ZONE_ARG_(id, 2, v2))
#define RINGTRACE_ZONE_ARGS_7(id, name, k1, v1, k2, v2, k3, v3)                                       \
  RINGTRACE_ZONE_KEY_(id, 1, k1);                                                                     \
  RINGTRACE_ZONE_KEY_(id, 2, k2);                                                                     \
  RINGTRACE_ZONE_KEY_(id, 3, k3);                                                                     \
  RINGTRACE_ZONE_WITH_ARGS_(id, name, RINGTRACE_ZONE_ARG_(id, 1, v1), RINGTRACE_ZONE_ARG_(id, 2, v2), \
                            RINGTRACE_ZONE_ARG_(id, 3, v3))
#define RINGTRACE_ZONE_ARGS_9(id, name, k1, v1, k2, v2, k3, v3, k4, v4)                               \
  RINGTRACE_ZONE_KEY_(id, 1, k1);                                                                     \
  RINGTRACE_ZONE_KEY_(id, 2, k2);                                                                     \
  RINGTRACE_ZONE_KEY_(id, 3, k3);                                                                     \
  RINGTRACE_ZONE_KEY_(id, 4, k4);                                                                     \
  RINGTRACE_ZONE_WITH_ARGS_(id, name, RINGTRACE_ZONE_ARG_(id, 1, v1), RINGTRACE_ZONE_ARG_(id, 2, v2), \
                            RINGTRACE_ZONE_ARG_(id, 3, v3), RINGTRACE_ZONE_ARG_(id, 4, v4))
#define RINGTRACE_ZONE_BAD_ARGS_ static_assert(false, "RINGTRACE_ZONE takes a name, then up to four key/value pairs")
#define RINGTRACE_ZONE_ARGS_2(...) RINGTRACE_ZONE_BAD_ARGS_
#define RINGTRACE_ZONE_ARGS_4(...) RINGTRACE_ZONE_BAD_ARGS_
#define RINGTRACE_ZONE_ARGS_6(...) RINGTRACE_ZONE_BAD_ARGS_
#define RINGTRACE_ZONE_ARGS_8(...) RINGTRACE_ZONE_BAD_ARGS_

// RINGTRACE_ZONE_DYNAMIC(name): a scoped zone named by a std::string_view known at run
// time (anything that converts to one): the name is copied into the ring (at most
// kMaxRuntimeName = 256 bytes; a longer one is cut and its begin flagged truncated),
// and the drainer interns it into a site of its own (Config::max_runtime_names).
#define RINGTRACE_ZONE_DYNAMIC(name) RINGTRACE_ZONE_DYNAMIC_(__COUNTER__, name)
#define RINGTRACE_ZONE_DYNAMIC_(id, name)                                                               \
  RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, id), "", zone);                                        \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, id) {                                  \
    ::ringtrace::detail::ZoneToken {                                                                    \
      ::ringtrace::detail::zone_open_named(&RINGTRACE_ID_(ringtrace_site_, id), std::string_view(name)) \
    }                                                                                                   \
  }

// RINGTRACE_ZONE_BEGIN(name) ... RINGTRACE_ZONE_END(): a zone begun and ended in
// different scopes or functions of one thread (its own stack of tokens: at most 64
// open at once per thread, deeper ones not recorded). An end closes the innermost zone
// open on the thread; manual and scoped zones nest as any zones do. An end with no
// manual zone open is counted (SessionStats::unbalanced_ends); a zone still open at
// stop() is closed at the stop time, flagged closed_at_stop.
#define RINGTRACE_ZONE_BEGIN(name) RINGTRACE_ZONE_BEGIN_(__COUNTER__, name)
#define RINGTRACE_ZONE_BEGIN_(id, name)                                          \
  do {                                                                           \
    RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, id), name, zone);             \
    ::ringtrace::detail::manual_zone_begin(&RINGTRACE_ID_(ringtrace_site_, id)); \
  } while (0)
#define RINGTRACE_ZONE_END() ::ringtrace::detail::manual_zone_end()

// RINGTRACE_MESSAGE(text): a line of text at this point in time on the thread (a
// literal or anything that converts to std::string_view), copied (cut at 1024 bytes,
// marked).
#define RINGTRACE_MESSAGE(text) RINGTRACE_MESSAGE_(__COUNTER__, text)
#define RINGTRACE_MESSAGE_(id, text)                                                           \
  do {                                                                                         \
    RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, id), "message", instant);                   \
    ::ringtrace::detail::message(&RINGTRACE_ID_(ringtrace_site_, id), std::string_view(text)); \
  } while (0)

// RINGTRACE_FUNCTION(): a scoped zone named by the enclosing function's qualified name
// ("ns::Class::method"; a lambda "ns::f::<lambda>"), cut out of __PRETTY_FUNCTION__ at
// compile time (detail/function_name.hpp).
#define RINGTRACE_FUNCTION() RINGTRACE_FUNCTION_(__COUNTER__)
#define RINGTRACE_FUNCTION_(id)                                                                                  \
  static constexpr ::ringtrace::detail::QualifiedFunctionName<::ringtrace::detail::qualified_function_name_size( \
      __PRETTY_FUNCTION__)>                                                                                      \
      RINGTRACE_ID_(ringtrace_function_, id){__PRETTY_FUNCTION__};                                               \
  RINGTRACE_ZONE_ARGS_1(id, RINGTRACE_ID_(ringtrace_function_, id).text)

#define RINGTRACE_INSTANT(name)                      \
  do {                                               \
    RINGTRACE_SITE_(ringtrace_site_, name, instant); \
    ::ringtrace::detail::instant(&ringtrace_site_);  \
  } while (0)

#define RINGTRACE_COUNTER(name, value)                       \
  do {                                                       \
    RINGTRACE_SITE_(ringtrace_site_, name, counter);         \
    ::ringtrace::detail::counter(&ringtrace_site_, (value)); \
  } while (0)

#define RINGTRACE_REGION(name, id) RINGTRACE_REGION_(__COUNTER__, name, id)
#define RINGTRACE_REGION_(n, name, id)                                \
  RINGTRACE_SITE_(RINGTRACE_ID_(ringtrace_site_, n), name, region);   \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, n) { \
    &RINGTRACE_ID_(ringtrace_site_, n), static_cast<std::int64_t>(id) \
  }

#define RINGTRACE_ZONE_IN(category, name) RINGTRACE_ZONE_IN_(__COUNTER__, category, name)
#define RINGTRACE_ZONE_IN_(id, category, name)                                                 \
  RINGTRACE_SITE_FULL_(RINGTRACE_ID_(ringtrace_site_, id), name, zone, 0, category);           \
  static constinit ::ringtrace::detail::CategorySlot RINGTRACE_ID_(ringtrace_category_, id){}; \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, id) {                         \
    &RINGTRACE_ID_(ringtrace_site_, id), RINGTRACE_ID_(ringtrace_category_, id)                \
  }

// A zone recorded one time in `every` (a constant; 0: the session's
// Config::sample_every) per thread, the first recorded; a zone left out takes
// everything its thread records inside it along (see zone_open_sampled).
#define RINGTRACE_ZONE_SAMPLED(name, every) RINGTRACE_ZONE_SAMPLED_(__COUNTER__, name, every)
#define RINGTRACE_ZONE_SAMPLED_(id, name, every)                                                                  \
  static constexpr ::ringtrace::SiteInfo RINGTRACE_ID_(ringtrace_site_, id){(name),                               \
                                                                            __builtin_FUNCTION(),                 \
                                                                            __FILE__,                             \
                                                                            static_cast<std::uint32_t>(__LINE__), \
                                                                            ::ringtrace::SiteKind::zone,          \
                                                                            ::ringtrace::SiteOptions::sampled,    \
                                                                            "",                                   \
                                                                            static_cast<std::uint32_t>(every)};   \
  static constinit thread_local ::ringtrace::detail::SampleCount RINGTRACE_ID_(ringtrace_sample_left_, id){};     \
  ::ringtrace::detail::SampledZone RINGTRACE_ID_(ringtrace_zone_, id) {                                           \
    &RINGTRACE_ID_(ringtrace_site_, id), RINGTRACE_ID_(ringtrace_sample_left_, id)                                \
  }

#define RINGTRACE_ZONE_VALUE(key, number)                        \
  do {                                                           \
    RINGTRACE_SITE_(ringtrace_site_, key, value);                \
    ::ringtrace::detail::zone_value(&ringtrace_site_, (number)); \
  } while (0)

// RINGTRACE_ZONE_FLOPS(count): the innermost open zone did `count` floating-point
// operations: the integer argument "flops" (RINGTRACE_ZONE("matmul", "flops", n) says the
// same), which the key-averages table sums per row into its Total FLOPs column.
#define RINGTRACE_ZONE_FLOPS(count) RINGTRACE_ZONE_VALUE("flops", static_cast<std::int64_t>(count))

// RINGTRACE_ZONE_TEXT(key, text): a literal, std::string, std::string_view (or a
// NUL-terminated char*), the size implied; RINGTRACE_ZONE_TEXT(key, text, size): `size`
// bytes at `text`.
#define RINGTRACE_ZONE_TEXT(...) RINGTRACE_CAT(RINGTRACE_ZONE_TEXT_, RINGTRACE_NARGS_(__VA_ARGS__))(__VA_ARGS__)
#define RINGTRACE_ZONE_TEXT_2(key, text)                                      \
  do {                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, key, value);                             \
    ::ringtrace::detail::zone_text(&ringtrace_site_, std::string_view(text)); \
  } while (0)
#define RINGTRACE_ZONE_TEXT_3(key, text, size)                                                \
  do {                                                                                        \
    RINGTRACE_SITE_(ringtrace_site_, key, value);                                             \
    ::ringtrace::detail::zone_text(&ringtrace_site_, (text), static_cast<std::size_t>(size)); \
  } while (0)

#define RINGTRACE_FLOW_OUT(id)                                                                        \
  do {                                                                                                \
    RINGTRACE_SITE_(ringtrace_site_, "flow", flow_out);                                               \
    ::ringtrace::detail::attach<::ringtrace::detail::record_arg_int>(&ringtrace_site_,                \
                                                                     static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_FLOW_IN(id)                                                                         \
  do {                                                                                                \
    RINGTRACE_SITE_(ringtrace_site_, "flow", flow_in);                                                \
    ::ringtrace::detail::attach<::ringtrace::detail::record_arg_int>(&ringtrace_site_,                \
                                                                     static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_ASYNC_BEGIN(name, id)                                                 \
  do {                                                                                  \
    RINGTRACE_SITE_(ringtrace_site_, name, async_begin);                                \
    ::ringtrace::detail::timed_value(&ringtrace_site_, static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_ASYNC_END(name, id)                                                   \
  do {                                                                                  \
    RINGTRACE_SITE_(ringtrace_site_, name, async_end);                                  \
    ::ringtrace::detail::timed_value(&ringtrace_site_, static_cast<std::uint64_t>(id)); \
  } while (0)

#define RINGTRACE_COUNTER_PER_THREAD(name, value)                                                         \
  do {                                                                                                    \
    RINGTRACE_SITE_FULL_(ringtrace_site_, name, counter, ::ringtrace::SiteOptions::per_thread_track, ""); \
    ::ringtrace::detail::counter(&ringtrace_site_, (value));                                              \
  } while (0)

// With a site from ringtrace::intern(): names known only at run time.
#define RINGTRACE_ZONE_SITE(site) RINGTRACE_ZONE_SITE_(__COUNTER__, site)
#define RINGTRACE_ZONE_SITE_(id, site) \
  ::ringtrace::detail::ScopedZone RINGTRACE_ID_(ringtrace_zone_, id) { (site) }
#define RINGTRACE_INSTANT_SITE(site) ::ringtrace::detail::instant(site)
#define RINGTRACE_COUNTER_SITE(site, value) ::ringtrace::detail::counter((site), (value))

#endif
