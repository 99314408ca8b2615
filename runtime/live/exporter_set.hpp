// The session's exporters as the drainer calls them: every call isolated (an exporter
// that throws anything is disabled and its error kept for SessionStats::exporter_errors,
// as "exporter <index> <callback>: <what>"), and the raw sides of those that store the
// rings' records as they are (RawSink).
//
// Drainer thread, under its pass lock. Drainer::drain_own (a thread packing its own ring,
// under the same lock) reads failed() and calls the one raw sink directly.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "raw_sink.hpp"
#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

class ExporterSet {
 public:
  explicit ExporterSet(std::vector<std::shared_ptr<Exporter>> exporters);

  // Calls `call(exporter)` on every exporter not yet disabled, in the session's order.
  template <typename Call>
  void each(const char* callback, Call&& call) {
    for (std::size_t i = 0; i < exporters_.size(); ++i) isolated(i, callback, [&] { call(*exporters_[i]); });
  }
  // Calls `call(raw_sink)` on the raw side of every exporter not yet disabled.
  template <typename Call>
  void each_raw(const char* callback, Call&& call) {
    for (const auto& sink : raw_sinks_) isolated(sink.first, callback, [&] { call(*sink.second); });
  }

  bool has_raw() const { return !raw_sinks_.empty(); }
  std::size_t raw_count() const { return raw_sinks_.size(); }
  // The first raw sink: its exporter's index and its raw side (has_raw() first).
  const std::pair<std::size_t, RawSink*>& first_raw() const { return raw_sinks_.front(); }
  // Every exporter is a raw sink that wants no events: nothing to decode.
  bool raw_only() const { return raw_only_; }
  bool failed(std::size_t index) const { return failed_[index]; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  // The one place an exporter's call is isolated: anything it throws disables it.
  template <typename Call>
  void isolated(std::size_t index, const char* callback, Call&& call) {
    if (failed_[index]) return;
    try {
      call();
    } catch (const std::exception& e) {
      fail(index, callback, e.what());
    } catch (...) {  // an int, a string literal, anything: never std::terminate
      fail(index, callback, "threw something that is not a std::exception");
    }
  }
  void fail(std::size_t index, const char* callback, const char* what);

  std::vector<std::shared_ptr<Exporter>> exporters_;
  std::vector<bool> failed_;
  std::vector<std::pair<std::size_t, RawSink*>> raw_sinks_;  // exporter index, its raw side
  bool raw_only_ = false;
  std::vector<std::string> errors_;
};

}  // namespace ringtrace::detail
