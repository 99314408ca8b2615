#include "taps.hpp"

#include <algorithm>

namespace ringtrace::detail {

void Taps::attach(std::shared_ptr<Exporter> tap) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(tap));
  any_.store(true, std::memory_order_release);
}

void Taps::detach(const Exporter* tap) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto waiting = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.get() == tap; });
  if (waiting != pending_.end()) {
    pending_.erase(waiting);
  } else {
    leaving_.push_back(tap);
  }
}

void Taps::update(const TraceContext& context) {
  std::vector<std::shared_ptr<Exporter>> joining;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Room first: short of memory (a pass that throws std::bad_alloc is counted and the
    // next one tries again) the joining taps stay pending rather than being lost.
    active_.reserve(active_.size() + pending_.size());
    joining.swap(pending_);
    for (const Exporter* gone : leaving_) {
      std::erase_if(active_, [&](const auto& a) { return a.get() == gone; });
    }
    leaving_.clear();
  }
  for (auto& tap : joining) {
    active_.push_back(std::move(tap));
    Exporter* joined = active_.back().get();
    each([&](Exporter& x) {
      if (&x == joined) x.on_start(context);
    });
  }
  if (active_.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.empty()) any_.store(false, std::memory_order_release);
  }
}

void Taps::deliver(std::span<const Event> events, const TraceContext& context) {
  each([&](Exporter& x) { x.on_events(events, context); });
}

void Taps::flush(const TraceContext& context) {
  each([&](Exporter& x) { x.on_flush(context); });
}

void Taps::finish(const TraceContext& context, const SessionStats& stats) {
  update(context);
  each([&](Exporter& x) { x.on_finish(context, stats); });
  active_.clear();
  any_.store(false, std::memory_order_release);
}

template <typename Call>
void Taps::each(Call&& call) {
  for (std::size_t i = 0; i < active_.size();) {
    bool failed = false;
    try {
      call(*active_[i]);
    } catch (...) {  // anything: the tap is dropped, the session goes on
      failed = true;
    }
    if (failed) {
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace ringtrace::detail
