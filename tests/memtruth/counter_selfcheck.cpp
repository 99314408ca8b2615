// The counter's own proof (test_counter.cpp runs it under libmemtruth_counter.so): a
// program that makes every kind of allocation and free the counter interposes, in
// windows, on several threads, counts each call itself and prints what it counted
// ("expect" lines); the counter's file must say the same. No ringtrace here.
//
// Windows: "calls" (every allocation function once or more, on main), "worker" (each of
// four threads: 1000 allocations, half freed, and frees of blocks main allocated in
// "handoff"), "handoff" (main's blocks the workers free), "foreign" (frees of blocks
// allocated outside every window), "sites" (allocations from two functions, for the
// per-caller counts).
#include <malloc.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "memtruth.h"

namespace {

struct Own {
  std::uint64_t allocs = 0, alloc_bytes = 0, frees = 0, free_bytes = 0, foreign_frees = 0, foreign_free_bytes = 0;
  std::uint64_t failed_reallocs = 0, live_blocks = 0, live_bytes = 0;
};
std::map<std::string, Own> g_own;  // touched outside windows only (a map allocates)

void* volatile g_sink;
volatile std::size_t g_huge = SIZE_MAX / 4;  // an allocation that fails, unknown to the compiler

// Each block escapes: the compiler may not take a new and delete it sees as a pair away.
template <class T>
T* kept(T* p) {
  g_sink = p;
  return p;
}

struct alignas(128) Wide {
  char bytes[128];
};

// Every allocation function, in window "calls". Returns the counts it made.
Own every_call() {
  Own o;
  const auto alloc = [&](std::uint64_t n) {
    o.allocs += 1;
    o.alloc_bytes += n;
  };
  const auto release = [&](std::uint64_t n) {
    o.frees += 1;
    o.free_bytes += n;
  };
  memtruth_begin("calls");
  void* a = kept(std::malloc(100));
  alloc(100);
  void* b = kept(std::calloc(10, 33));
  alloc(330);
  b = kept(std::realloc(b, 5000));  // free 330, allocate 5000
  release(330);
  alloc(5000);
  b = kept(std::realloc(b, 10));  // shrinks (maybe in place): still a free and an allocation
  release(5000);
  alloc(10);
  void* c = kept(std::realloc(nullptr, 50));  // an allocation only
  alloc(50);
  void* failed = std::realloc(c, g_huge * 2);  // fails: c stays
  if (failed != nullptr) std::abort();
  o.failed_reallocs += 1;
  void* d = reallocarray(nullptr, 7, 11);
  alloc(77);
  d = reallocarray(d, 9, 11);
  release(77);
  alloc(99);
  void* e = nullptr;
  if (posix_memalign(&e, 64, 200) != 0) std::abort();
  alloc(200);
  void* f = aligned_alloc(64, 256);
  alloc(256);
  void* g = memalign(128, 300);
  alloc(300);
  void* h = valloc(1000);
  alloc(1000);
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  void* i = pvalloc(5000);
  alloc((5000 + page - 1) / page * page);
  int* j = kept(new int(7));
  alloc(sizeof(int));
  char* k = kept(new char[333]);
  alloc(333);
  int* l = kept(new (std::nothrow) int(8));
  alloc(sizeof(int));
  char* m = kept(new (std::nothrow) char[444]);
  alloc(444);
  Wide* n = kept(new Wide);
  alloc(sizeof(Wide));
  Wide* p = kept(new Wide[3]);
  alloc(3 * sizeof(Wide));
  Wide* q = kept(new (std::nothrow) Wide);
  alloc(sizeof(Wide));
  Wide* r = kept(new (std::nothrow) Wide[2]);
  alloc(2 * sizeof(Wide));
  void* s = std::realloc(kept(std::malloc(60)), 0);  // glibc: the free, no new block
  alloc(60);
  release(60);
  if (s != nullptr) {
    alloc(0);
    std::free(s);
    release(0);
  }
  std::free(nullptr);  // nothing
  // The frees: every form of delete.
  std::free(a);
  release(100);
  std::free(b);
  release(10);
  std::free(c);
  release(50);
  std::free(d);
  release(99);
  std::free(e);
  release(200);
  std::free(f);
  release(256);
  std::free(g);
  release(300);
  std::free(h);
  release(1000);
  delete j;
  release(sizeof(int));
  delete[] k;
  release(333);
  operator delete(l, std::nothrow);
  release(sizeof(int));
  operator delete[](m, std::nothrow);
  release(444);
  operator delete (n, sizeof(Wide), std::align_val_t{alignof(Wide)});
  release(sizeof(Wide));
  delete[] p;
  release(3 * sizeof(Wide));
  operator delete (q, std::align_val_t{alignof(Wide)}, std::nothrow);
  release(sizeof(Wide));
  operator delete[](r, std::align_val_t{alignof(Wide)}, std::nothrow);
  release(2 * sizeof(Wide));
  char* sized = kept(static_cast<char*>(operator new(123)));
  alloc(123);
  operator delete(sized, 123);
  release(123);
  g_sink = i;  // pvalloc's block: left live (a leak of this window)
  o.live_blocks = 1;
  o.live_bytes = (5000 + page - 1) / page * page;
  memtruth_end();
  return o;
}

// Four threads: each 1000 allocations of (t * 1000 + i) % 700 + 1 bytes, every second
// one freed at once, the rest at the end but every tenth (left live); and its share
// of main's "handoff" blocks freed.
constexpr int kWorkers = 4;
constexpr int kPerWorker = 1000;

std::uint64_t worker_size(int t, int i) { return static_cast<std::uint64_t>((t * 1000 + i) % 700 + 1); }

void worker(int t, std::vector<void*>* handoff, Own* out) {
  Own& o = *out;
  std::vector<void*> held;
  held.reserve(kPerWorker);  // outside the window
  memtruth_begin("worker");
  for (int i = 0; i < kPerWorker; ++i) {
    const std::uint64_t size = worker_size(t, i);
    void* p = kept(std::malloc(size));
    o.allocs += 1;
    o.alloc_bytes += size;
    if (i % 2 == 0) {
      std::free(p);
      o.frees += 1;
      o.free_bytes += size;
    } else {
      held.push_back(p);
    }
  }
  for (std::size_t k = 0; k < held.size(); ++k) {
    const std::uint64_t size = worker_size(t, static_cast<int>(2 * k + 1));
    if (k % 5 == 0) {
      o.live_blocks += 1;
      o.live_bytes += size;
      g_sink = held[k];
      continue;
    }
    std::free(held[k]);
    o.frees += 1;
    o.free_bytes += size;
  }
  for (std::size_t k = static_cast<std::size_t>(t); k < handoff->size(); k += kWorkers) {
    std::free((*handoff)[k]);
    o.frees += 1;
    o.free_bytes += 40 + k;
  }
  memtruth_end();
}

void print(const char* window, const Own& o) {
  std::printf(
      "expect window %s allocs=%llu alloc_bytes=%llu frees=%llu free_bytes=%llu foreign_frees=%llu "
      "foreign_free_bytes=%llu failed_reallocs=%llu live_blocks=%llu live_bytes=%llu\n",
      window, static_cast<unsigned long long>(o.allocs), static_cast<unsigned long long>(o.alloc_bytes),
      static_cast<unsigned long long>(o.frees), static_cast<unsigned long long>(o.free_bytes),
      static_cast<unsigned long long>(o.foreign_frees), static_cast<unsigned long long>(o.foreign_free_bytes),
      static_cast<unsigned long long>(o.failed_reallocs), static_cast<unsigned long long>(o.live_blocks),
      static_cast<unsigned long long>(o.live_bytes));
}

}  // namespace

// Exported (ENABLE_EXPORTS, default visibility): dladdr names them.
__attribute__((noinline, visibility("default"))) void* allocate_here(std::size_t n) {
  void* p = std::malloc(n);
  asm volatile("" ::: "memory");  // not a tail call: the return address is here
  return p;
}
__attribute__((noinline, visibility("default"))) void* allocate_there(std::size_t n) {
  void* p = std::malloc(n);
  asm volatile("" ::: "memory");
  return p;
}

int main() {
  if (!memtruth_init()) {
    std::fprintf(stderr, "counter_selfcheck: libmemtruth_counter.so is not loaded\n");
    return 2;
  }
  g_own["calls"] = every_call();

  // throwing: a new that throws, and a nothrow new that fails (libstdc++'s calls the
  // throwing one and catches), count nothing of their own; the exception object
  // libstdc++ allocates for each bad_alloc is allocated and freed inside the window.
  memtruth_begin("throwing");
  try {
    g_sink = new char[g_huge];
    std::abort();
  } catch (const std::bad_alloc&) {}
  g_sink = new (std::nothrow) char[g_huge];
  memtruth_end();

  // handoff: 100 blocks main allocates, the workers free.
  std::vector<void*> handoff(100);
  Own& h = g_own["handoff"];
  memtruth_begin("handoff");
  for (std::size_t k = 0; k < handoff.size(); ++k) {
    handoff[k] = std::malloc(40 + k);
    h.allocs += 1;
    h.alloc_bytes += 40 + k;
  }
  memtruth_end();
  std::vector<Own> per_worker(kWorkers);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWorkers; ++t) threads.emplace_back(worker, t, &handoff, &per_worker[t]);
  for (std::thread& t : threads) t.join();
  Own& w = g_own["worker"];
  for (const Own& o : per_worker) {
    w.allocs += o.allocs;
    w.alloc_bytes += o.alloc_bytes;
    w.frees += o.frees;
    w.free_bytes += o.free_bytes;
    w.live_blocks += o.live_blocks;
    w.live_bytes += o.live_bytes;
  }

  // foreign: blocks from outside every window, freed inside one.
  void* outside[3] = {std::malloc(1000), std::malloc(2000), std::malloc(3000)};
  Own& f = g_own["foreign"];
  memtruth_begin("foreign");
  for (void* p : outside) std::free(p);
  f.frees = 3;
  f.free_bytes = f.foreign_frees = 0;
  f.foreign_frees = 3;
  f.free_bytes = f.foreign_free_bytes = 6000;
  memtruth_end();

  // sites: 7 blocks of 77 bytes from allocate_here, 3 of 1000 from allocate_there, all live.
  void* sites[10];
  memtruth_begin("sites");
  for (int k = 0; k < 7; ++k) sites[k] = allocate_here(77);
  for (int k = 7; k < 10; ++k) sites[k] = allocate_there(1000);
  memtruth_end();
  g_sink = sites;
  Own& s = g_own["sites"];
  s.allocs = s.live_blocks = 10;
  s.alloc_bytes = s.live_bytes = 7 * 77 + 3000;

  memtruth_snapshot("done");
  for (const auto& [name, o] : g_own) print(name.c_str(), o);
  std::printf("expect caller sites allocate_here allocs=7 bytes=539\n");
  std::printf("expect caller sites allocate_there allocs=3 bytes=3000\n");
  std::printf("expect threads worker %d\n", kWorkers);
  std::printf("expect balanced throwing 2\n");
  return 0;
}
