// What one connection of the control channel asks for, and what it owns
// (docs/control.md, "Requests"): the session it started (`record --pid`, or `top` when
// none ran) stops when it says stop or goes away; the live table it joined leaves the
// session. Runs on the channel's thread only.
#pragma once

#include <memory>
#include <string>

#include "control_protocol.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

class LiveTable;

control::Message error_reply(const std::string& code, const std::string& message);

class ControlWork {
 public:
  ControlWork() = default;
  ~ControlWork() { release(); }
  ControlWork(const ControlWork&) = delete;
  ControlWork& operator=(const ControlWork&) = delete;

  // The reply to one request.
  control::Message handle(const control::Message& request);
  // The connection is gone: what it started stops.
  void release() noexcept;
  // It owns a session or a live table (its connection is not closed for idleness).
  bool owns() const { return session_ != nullptr || table_ != nullptr; }

 private:
  control::Message status() const;
  control::Message record(const control::Message& request);
  control::Message stop();
  control::Message snapshot(const control::Message& request);
  control::Message top(const control::Message& request);
  control::Message sample();
  // Starts a session of `config` with `exporters`, recorded "from outside (described)".
  void start_session(const Config& config, const std::string& described);

  std::unique_ptr<Session> session_;  // the session this connection started
  bool recording_ = false;            // session_ is a recording (else top's)
  std::shared_ptr<LiveTable> table_;  // top's table, joined to the running session
  std::uint64_t rows_ = 50;           // top: rows per table
  std::uint64_t dropped_at_sample_ = 0;
};

}  // namespace ringtrace::detail
