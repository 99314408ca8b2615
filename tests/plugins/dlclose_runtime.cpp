// A program without ringtrace opens a plugin that carries the runtime, uses it and
// closes it: the process's runtime, and its control channel's thread, are then the
// plugin's. The thread must not outlive its code: the program waits past the 100 ms after
// which the thread opens the channel's socket, then ends with 0 (a SIGSEGV when the
// thread woke in the unmapped plugin).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  auto work = reinterpret_cast<void (*)(int)>(dlsym(plugin, "plugin_c_work"));
  if (work == nullptr) return 2;
  work(3);
  dlclose(plugin);
  usleep(300 * 1000);  // the channel's thread wakes at 100 ms
  return 0;
}
