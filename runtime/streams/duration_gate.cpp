#include "duration_gate.hpp"

#include <limits>

namespace ringtrace::detail {

std::uint64_t DurationGate::push(const GateEvent& e, State state) {
  Item it{e, state};
  if (it.e.text_id < 0 && (it.e.event.flags & EventFlags::text) != 0 &&
      (it.e.event.kind == EventKind::arg || it.e.event.kind == EventKind::message)) {
    it.e.text_id = keep_text_(it.e.event);  // held past the call that delivered it
  }
  queue_.push_back(std::move(it));
  return first_item_ + queue_.size() - 1;
}

void DurationGate::feed(const GateEvent& e, std::vector<GateEvent>& out) {
  const Event& ev = e.event;
  decide_until(ev.time_ns);
  if (ev.thread >= stacks_.size()) [[unlikely]]
    stacks_.resize(ev.thread + 1);
  std::vector<Open>& stack = stacks_[ev.thread];
  State state = State::ready;
  switch (ev.kind) {
    case EventKind::zone_begin: {
      const std::uint64_t number = push(e, State::held);
      stack.push_back(Open{next_serial_, number, true, {}});
      const std::uint64_t at = ev.time_ns > std::numeric_limits<std::uint64_t>::max() - min_ns_
                                   ? std::numeric_limits<std::uint64_t>::max()
                                   : ev.time_ns + min_ns_;
      deadlines_.push_back(Deadline{at, ev.thread, static_cast<std::uint32_t>(stack.size() - 1), next_serial_});
      ++next_serial_;
      if (queue_.size() > kMaxHeldEvents) force_oldest();
      release(out);
      return;
    }
    case EventKind::zone_end:
      if (!stack.empty()) {
        Open open = std::move(stack.back());
        stack.pop_back();
        if (open.held) {  // ended before the bound: left out, the end with it
          drop(open);
          release(out);
          return;
        }
      }
      break;
    case EventKind::arg:
    case EventKind::flow_out:
    case EventKind::flow_in:
      if (!stack.empty() && stack.back().held) {
        const std::uint64_t number = push(e, State::held);
        stack.back().attached.push_back(number);
        if (queue_.size() > kMaxHeldEvents) force_oldest();
        release(out);
        return;
      }
      break;
    default:
      break;
  }
  if (queue_.empty()) {  // nothing held: straight through
    out.push_back(e);
    return;
  }
  push(e, state);
  if (queue_.size() > kMaxHeldEvents) force_oldest();
  release(out);
}

void DurationGate::decide_until(std::uint64_t now_ns) {
  while (!deadlines_.empty() && deadlines_.front().at_ns <= now_ns) {
    const Deadline d = deadlines_.front();
    deadlines_.pop_front();
    if (Open* open = held_zone(d)) keep(*open);
  }
}

DurationGate::Open* DurationGate::held_zone(const Deadline& d) {
  if (d.thread >= stacks_.size() || d.index >= stacks_[d.thread].size()) return nullptr;
  Open& open = stacks_[d.thread][d.index];
  return open.serial == d.serial && open.held ? &open : nullptr;
}

void DurationGate::keep(Open& open) {
  open.held = false;
  item(open.begin_item).state = State::ready;
  for (const std::uint64_t a : open.attached) item(a).state = State::ready;
  std::vector<std::uint64_t>().swap(open.attached);
}

void DurationGate::drop(Open& open) {
  Item& begin = item(open.begin_item);
  begin.state = State::dropped;
  for (const std::uint64_t a : open.attached) item(a).state = State::dropped;
  attached_dropped_ += open.attached.size();
  ++short_zones_;
  const SiteId site = begin.e.event.site;
  if (site >= short_by_site_.size()) short_by_site_.resize(site + 1, 0);
  ++short_by_site_[site];
}

// The hold is full: the oldest zone still undecided goes on as if it had lasted the bound.
void DurationGate::force_oldest() {
  while (!deadlines_.empty()) {
    const Deadline d = deadlines_.front();
    deadlines_.pop_front();
    Open* open = held_zone(d);
    if (open == nullptr) continue;
    keep(*open);
    ++forced_;
    return;
  }
}

void DurationGate::release(std::vector<GateEvent>& out) {
  while (!queue_.empty()) {
    Item& front = queue_.front();
    if (front.state == State::held) return;
    if (front.state == State::ready) out.push_back(front.e);
    queue_.pop_front();
    ++first_item_;
  }
}

void DurationGate::finish(std::uint64_t stop_ns, std::vector<GateEvent>& out) {
  while (!deadlines_.empty()) {
    const Deadline d = deadlines_.front();
    deadlines_.pop_front();
    Open* open = held_zone(d);
    if (open == nullptr) continue;
    if (d.at_ns <= stop_ns) {
      keep(*open);
    } else {
      drop(*open);
    }
  }
  release(out);
}

}  // namespace ringtrace::detail
