// The registration hand-off, measured against moodycamel's ConcurrentQueue (Debian's
// libconcurrentqueue-dev), for docs/architecture.md ("The four packages"): each thread,
// on its first event, hands its ring to the drainer, which takes every new one at the
// start of a pass. ringtrace does it with an intrusive list (one compare-exchange to push,
// one exchange to take them all: runtime/live/thread_registry.cpp). The question is
// whether the queue would do better, in time per hand-off and in memory as threads come
// and go.
//
//   BM_Handoff_<kind>             64 items handed over, then taken in bulk: per item
//   short-lived threads           printed at the end: heap growth and time per thread
//                                 over 20,000 threads that each hand over one item
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include <concurrentqueue/concurrentqueue.h>

namespace {

struct Item {
  Item* next = nullptr;
  std::uint64_t payload = 0;
};

// The registry's shape: push with a compare-exchange, take all with an exchange.
class IntrusiveList {
 public:
  void push(Item* item) {
    Item* head = head_.load(std::memory_order_relaxed);
    do {
      item->next = head;
    } while (!head_.compare_exchange_weak(head, item, std::memory_order_release, std::memory_order_relaxed));
  }
  std::size_t take_all() {
    Item* list = head_.exchange(nullptr, std::memory_order_acquire);
    std::size_t n = 0;
    for (; list != nullptr; list = list->next) ++n;
    return n;
  }

 private:
  std::atomic<Item*> head_{nullptr};
};

class Queue {
 public:
  void push(Item* item) { queue_.enqueue(item); }
  std::size_t take_all() {
    Item* items[256];
    std::size_t n = 0, got = 0;
    while ((got = queue_.try_dequeue_bulk(items, 256)) != 0) n += got;
    return n;
  }

 private:
  moodycamel::ConcurrentQueue<Item*> queue_;
};

// Producers each hand over a batch of 64 items (their own, taken before they are pushed
// again), then the consumer takes everything: the cost per item of push and take.
template <class Handoff>
void BM_Handoff(benchmark::State& state, Handoff& handoff) {
  std::vector<Item> items(64);
  for (auto _ : state) {
    for (Item& item : items) handoff.push(&item);
    benchmark::DoNotOptimize(handoff.take_all());
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
void BM_Handoff_IntrusiveList(benchmark::State& state) {
  IntrusiveList list;
  BM_Handoff(state, list);
}
void BM_Handoff_ConcurrentQueue(benchmark::State& state) {
  Queue queue;
  BM_Handoff(state, queue);
}
BENCHMARK(BM_Handoff_IntrusiveList);
BENCHMARK(BM_Handoff_ConcurrentQueue);

std::int64_t heap() { return static_cast<std::int64_t>(mallinfo2().uordblks + mallinfo2().hblkhd); }

// Threads started one after another, each handing over one item, as short-lived threads
// register their rings; the consumer takes them every 100 threads.
template <class Handoff>
void short_lived(const char* name) {
  Handoff handoff;
  constexpr int kThreads = 20000;
  std::vector<Item> items(kThreads);
  const std::int64_t before = heap();
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    std::thread([&, t] { handoff.push(&items[t]); }).join();
    if (t % 100 == 99) handoff.take_all();
  }
  handoff.take_all();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("short-lived threads, %-16s %6.1f us per thread, heap grew %lld bytes over %d threads\n", name,
              seconds * 1e6 / kThreads, static_cast<long long>(heap() - before), kThreads);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  short_lived<IntrusiveList>("intrusive list:");
  short_lived<Queue>("ConcurrentQueue:");
  return 0;
}
