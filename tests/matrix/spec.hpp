// The configuration matrix (issue 31): what the workload records and what the checker
// expects, written down once for both. Nothing here comes from the runtime: the checker
// rebuilds each thread's events from these rules and compares what arrived with them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace matrix {

// --- The configurations ---

enum class Clock { tsc, monotonic };
enum class Policy { drop, block };
// exporter:          an in-process Exporter that collects the stream, alone
// file_selfdrain:    the binary trace file alone, Config::self_drain on
// file_noselfdrain:  the binary trace file alone, Config::self_drain off
// ringfile:          the binary trace file alone with its rings in a file (rings_in_file)
// all:               the collecting exporter, a plain binary file and a ring-file binary file at once
enum class Outputs { exporter, file_selfdrain, file_noselfdrain, ringfile, all };

struct MatrixConfig {
  Clock clock = Clock::tsc;
  Policy policy = Policy::drop;
  Outputs outputs = Outputs::exporter;
  bool switches = false;

  bool collector() const { return outputs == Outputs::exporter || outputs == Outputs::all; }
  bool plain_file() const {
    return outputs == Outputs::file_selfdrain || outputs == Outputs::file_noselfdrain || outputs == Outputs::all;
  }
  bool ring_file() const { return outputs == Outputs::ringfile || outputs == Outputs::all; }
};

inline const char* name_of(Clock c) { return c == Clock::tsc ? "tsc" : "monotonic"; }
inline const char* name_of(Policy p) { return p == Policy::drop ? "drop" : "block"; }
inline const char* name_of(Outputs o) {
  switch (o) {
    case Outputs::exporter:
      return "exporter";
    case Outputs::file_selfdrain:
      return "file_selfdrain";
    case Outputs::file_noselfdrain:
      return "file_noselfdrain";
    case Outputs::ringfile:
      return "ringfile";
    case Outputs::all:
      return "all";
  }
  return "?";
}

// "tsc_drop_exporter_switches": a gtest- and file-name-safe name.
inline std::string name_of(const MatrixConfig& c) {
  return std::string(name_of(c.clock)) + "_" + name_of(c.policy) + "_" + name_of(c.outputs) + "_" +
         (c.switches ? "switches" : "noswitches");
}

inline std::vector<MatrixConfig> all_configs() {
  std::vector<MatrixConfig> out;
  for (Clock clock : {Clock::tsc, Clock::monotonic}) {
    for (Policy policy : {Policy::drop, Policy::block}) {
      for (Outputs outputs :
           {Outputs::exporter, Outputs::file_selfdrain, Outputs::file_noselfdrain, Outputs::ringfile, Outputs::all}) {
        for (bool switches : {false, true}) out.push_back(MatrixConfig{clock, policy, outputs, switches});
      }
    }
  }
  return out;
}

inline bool parse_config(const std::string& name, MatrixConfig& out) {
  for (const MatrixConfig& c : all_configs()) {
    if (name_of(c) == name) {
      out = c;
      return true;
    }
  }
  return false;
}

// File names inside a configuration's directory.
inline constexpr const char* kManifestFile = "manifest.txt";
inline constexpr const char* kCollectedFile = "collected.bin";  // the collecting exporter's stream
inline constexpr const char* kPlainTraceFile = "trace.rtrace";
inline constexpr const char* kRingTraceFile = "rings.rtrace";
inline constexpr const char* kChildLog = "child.log";

// --- Who records ---
//
// Every recording thread has a slot. Slot 0 is the main thread, slots 1-16 workers
// (long ones first, then short ones that come and go), 17 the framer, slots from
// kFirstOtherSlot on are threads the workload did not start (the runtime's own, such as
// the drainer), which only a signal handler records on.
inline constexpr int kMaxSlots = 64;
inline constexpr int kFirstOtherSlot = 48;

enum class Role { main, long_worker, short_worker, framer, other };
inline const char* name_of(Role r) {
  switch (r) {
    case Role::main:
      return "main";
    case Role::long_worker:
      return "long_worker";
    case Role::short_worker:
      return "short_worker";
    case Role::framer:
      return "framer";
    case Role::other:
      return "other";
  }
  return "?";
}

// --- What each thread records (the main flow) ---
//
// A thread's first event is the counter "m.hello" with its slot as value: the checker
// knows each thread by it (also where the kernel reuses an OS thread id). Then
// `iterations` times iteration(slot, i), each iteration's values carrying (slot, i),
// then the end of an async span left open.

// (slot, i) in one value: the checker can tell exactly which iteration an event is from.
inline std::int64_t key(int slot, std::uint64_t i) {
  return (static_cast<std::int64_t>(slot) << 32) | static_cast<std::int64_t>(i);
}
inline double dkey(int slot, std::uint64_t i) { return static_cast<double>(key(slot, i)) + 0.5; }  // exact in a double
inline double dcounter(int slot, std::uint64_t i) { return static_cast<double>(i) * 0.25 + slot; }
inline std::uint64_t flow_id(int slot, std::uint64_t i) {
  return (std::uint64_t{1} << 60) | static_cast<std::uint64_t>(key(slot, i));
}

inline constexpr std::size_t kTextLimit = 1024;  // texts and messages are cut here (docs/guide.md)

// Any bytes, NULs and invalid UTF-8 included; now and then longer than the limit.
inline std::string text_of(int slot, std::uint64_t i) {
  std::string s = "T";  // appended piece by piece: g++ 12 warns (-Wrestrict) at "T" + std::string
  s += std::to_string(slot);
  s += '.';
  s += std::to_string(i);
  s += ':';
  std::size_t len = (i * 37 + static_cast<std::uint64_t>(slot) * 11) % 200;
  if (i % 97 == 5) len = 1500;
  for (std::size_t k = 0; k < len; ++k) s += static_cast<char>((slot * 131 + i * 7 + k * 13) & 0xFF);
  return s;
}
inline std::string message_of(int slot, std::uint64_t i) {
  std::string s = "message ";
  s += std::to_string(slot);
  s += '/';
  s += std::to_string(i);
  s += ' ';
  std::size_t len = (i * 13) % 120;
  if (i % 101 == 7) len = 1100;
  for (std::size_t k = 0; k < len; ++k) s += static_cast<char>('a' + (i + k) % 26);
  return s;
}
// Run-time zone names: few distinct ones (each becomes a site).
inline std::string dynamic_name_of(int slot, std::uint64_t i) {
  std::string s = "dyn.";
  s += std::to_string(slot % 3);
  s += '.';
  s += std::to_string(i % 5);
  return s;
}
inline int recursion_of(std::uint64_t i) { return static_cast<int>(i % 4); }  // extra nesting levels
inline bool sampled_in(std::uint64_t i) { return i % 3 == 0; }                // RINGTRACE_ZONE_SAMPLED(…, 3)
inline bool async_begins(std::uint64_t i) { return i % 4 == 0; }
inline bool async_ends(std::uint64_t i) { return i % 4 == 3; }

// Frames: one thread of their own, the framer (slot kFramerSlot), records its hello,
// marks a frame (RINGTRACE_FRAME), then `marks - 1` times a burst of kFrameFill messages
// (fill_text_of(n), n counting from 0; 64 KiB a burst, four rings) and a frame mark: in
// drop mode a mark often finds the ring full. Its counts hold nothing but its messages
// and its marks: a mark's events (the steps track's end of a step and begin of the
// next; the first mark only begins one) are its own.
inline constexpr int kFramerSlot = 17;
inline constexpr std::uint64_t kFrameFill = 64;
inline std::string fill_text_of(std::uint64_t n) {
  std::string s = "fill ";
  s += std::to_string(n);
  s += ' ';
  while (s.size() < 1000) s += static_cast<char>('A' + (n + s.size()) % 26);
  return s;
}

// Workers with an odd slot get a per-thread timer signal whose handler records.
inline bool signalled_worker(int slot) { return slot >= 1 && slot < kFramerSlot && slot % 2 == 1; }

// A thread pauses after every kBurst iterations (so signals land, threads overlap, and
// the drainer sometimes keeps up and sometimes not).
inline constexpr std::uint64_t kBurst = 16;

// --- What a signal handler records ---
//
// Each handler run on slot s (its k-th there) records a zone "sig.zone" with the value
// "sig.seq", an instant "sig.instant" and a counter "sig.counter", the values
// handler_value(s, k): 5 events.
inline std::int64_t handler_value(int slot, std::uint64_t k) {
  return (std::int64_t{1} << 62) | (static_cast<std::int64_t>(slot) << 32) | static_cast<std::int64_t>(k);
}
inline constexpr std::uint64_t kHandlerEvents = 5;

// Names used by the workload (the checker compares them exactly).
inline constexpr const char* kHello = "m.hello";
inline constexpr const char* kFunctionZone = "matrix_workload::recurse";  // RINGTRACE_FUNCTION's qualified name
inline constexpr const char* kInternedZone = "m.interned";
inline constexpr const char* kInternedInstant = "m.interned_instant";

// --- Memory (issue 42) ---
//
// The memory configurations run tests/matrix/memory_workload.cpp (its own process each,
// as above), whose allocations the checker (memory_checker.cpp) compares with the truth:
// the counting preload tests/memtruth (libmemtruth_counter.so, preloaded behind
// ringtrace's allocation functions, counting by window: each of the workload's memory
// zones is also a window of the counter, opened just inside the zone and closed just
// before its end) and the workload's own count of the calls it makes itself. Dimensions:
//
//   how      config: links ringtrace::memory, Session in code with Config::memory
//            env: links ringtrace::memory, RINGTRACE_OUTPUT and RINGTRACE_MEMORY=1 set by hand
//            preload: `ringtrace record --memory` of the workload built without ringtrace
//                     (matrix_memory_plain: its zones are its functions, -finstrument-functions)
//            both: `ringtrace record --memory` of the workload that links ringtrace::memory
//   policy   drop / block
//   sampled  allocations inside RINGTRACE_ZONE_SAMPLED zones (not in preload: no macros)
//   signals  a worker's timer signal handler allocates in a zone of its own
//   exit     a worker exits holding a block in a pthread key (destructor free) and one in a
//            thread_local's destructor
//   children the main thread starts the workload's child role by fork+exec, posix_spawn or
//            system(); each child writes its own %p file
//   windows  Config::schedule windows (a window exporter per step) or a flight-recorder
//            snapshot (Session::snapshot): config only (they need the Session)
//   limit    Config::memory_max_blocks 100 (config only: no variable sets it)
//
// Not every product: the 19 below cover every pair of values the constraints allow
// (generated greedily, the named case first), which include the cases:
// linked under record --memory (both, block: point 1); preload with each kind of child
// (point 2); thread exits under the preload (point 3); sampled zones and signal handlers
// (point 4); the limit (point 5); drops, windows and snapshots (point 6).

enum class MemHow { config, env, preload, both };
enum class Children { none, fork_exec, spawn, system };
enum class MemWindows { none, window, snapshot };

struct MemoryConfig {
  MemHow how = MemHow::config;
  Policy policy = Policy::block;
  bool sampled = false;
  bool signals = false;
  bool thread_exit = false;
  Children children = Children::none;
  MemWindows windows = MemWindows::none;
  bool small_limit = false;
  bool linked() const { return how != MemHow::preload; }
  bool recorded_by_tool() const { return how == MemHow::preload || how == MemHow::both; }
};

inline const char* name_of(MemHow h) {
  switch (h) {
    case MemHow::config:
      return "config";
    case MemHow::env:
      return "env";
    case MemHow::preload:
      return "preload";
    case MemHow::both:
      return "both";
  }
  return "?";
}
inline const char* name_of(Children c) {
  switch (c) {
    case Children::none:
      return "nochild";
    case Children::fork_exec:
      return "forkexec";
    case Children::spawn:
      return "spawn";
    case Children::system:
      return "system";
  }
  return "?";
}
inline const char* name_of(MemWindows w) {
  switch (w) {
    case MemWindows::none:
      return "nowindow";
    case MemWindows::window:
      return "window";
    case MemWindows::snapshot:
      return "snapshot";
  }
  return "?";
}

// "mem_both_block_plain_nosig_noexit_nochild_nowindow_nolimit"
inline std::string name_of(const MemoryConfig& c) {
  std::string s = "mem_";
  s += name_of(c.how);
  s += "_";
  s += name_of(c.policy);
  s += c.sampled ? "_sampled" : "_plain";
  s += c.signals ? "_sig" : "_nosig";
  s += c.thread_exit ? "_exit" : "_noexit";
  s += "_";
  s += name_of(c.children);
  s += "_";
  s += name_of(c.windows);
  s += c.small_limit ? "_limit100" : "_nolimit";
  return s;
}

inline std::vector<MemoryConfig> memory_configs() {
  using H = MemHow;
  using C = Children;
  using W = MemWindows;
  const Policy drop = Policy::drop, block = Policy::block;
  // how, policy, sampled, signals, exit, children, windows, limit
  return {
      {H::both, block, false, false, false, C::none, W::none, false},  // point 1
      {H::config, drop, true, true, true, C::none, W::window, true},
      {H::env, drop, false, true, true, C::fork_exec, W::none, false},
      {H::config, block, true, false, false, C::spawn, W::none, true},
      {H::preload, drop, false, false, false, C::system, W::none, false},
      {H::config, block, false, false, true, C::none, W::snapshot, false},
      {H::env, block, true, true, false, C::system, W::none, false},
      {H::both, drop, false, true, true, C::spawn, W::none, false},
      {H::config, block, false, false, false, C::fork_exec, W::none, true},
      {H::config, block, false, false, false, C::none, W::window, false},
      {H::config, drop, true, true, false, C::none, W::snapshot, true},
      {H::preload, block, false, true, true, C::none, W::none, false},
      {H::both, drop, true, false, false, C::fork_exec, W::none, false},
      {H::config, drop, false, false, true, C::system, W::none, true},
      {H::env, drop, false, false, false, C::none, W::none, false},
      {H::env, drop, false, false, false, C::spawn, W::none, false},
      {H::preload, drop, false, false, false, C::fork_exec, W::none, false},
      {H::preload, drop, false, false, false, C::spawn, W::none, false},
      {H::both, drop, false, false, false, C::system, W::none, false},
  };
}

inline bool parse_memory_config(const std::string& name, MemoryConfig& out) {
  for (const MemoryConfig& c : memory_configs()) {
    if (name_of(c) == name) {
      out = c;
      return true;
    }
  }
  return false;
}

// --- What the memory workload allocates (its own count is in its manifest too) ---
//
// Zones (each a window of the counter, and in the plain build a function of that name):
//   main thread:  mw_spawn_threads (std::thread's own allocations), mw_handoff (kHandoff
//                 blocks the workers free), mw_sampled_outer (sampled zones inside),
//                 mw_hold / mw_unhold (kHold blocks past a limit of 100, freed in another
//                 zone), mw_window_phase / mw_snapshot_phase, mw_children, mw_join
//   workers:      mw_churn, mw_takeback, mw_release, mw_spin and mw_sig (signals),
//                 mw_exit_keys (thread exit)
//   child:        mw_child_work
inline constexpr int kMemWorkers = 3;
inline constexpr std::uint64_t kHandoff = 90;  // handed to the workers in turn
inline constexpr std::uint64_t kHold = 300;
inline constexpr std::uint64_t kExitKeyBlock = 1111, kExitLocalBlock = 2222;
inline std::uint64_t churn_size(int slot, std::uint64_t i) {
  return 16 + (static_cast<std::uint64_t>(slot) * 131 + i * 37) % 900;
}
inline std::uint64_t handoff_size(std::uint64_t k) { return 40 + k; }
inline bool churn_kept(std::uint64_t i) { return i % 2 == 1; }     // freed at once otherwise
inline bool churn_leaked(std::uint64_t i) { return i % 14 == 1; }  // of the kept: never freed

// The files of a memory configuration's directory.
inline constexpr const char* kMemoryManifest = "memory.%p.txt";  // one per process of the workload

}  // namespace matrix
