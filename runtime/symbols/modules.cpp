#include "modules.hpp"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "hex.hpp"

namespace ringtrace::symbols {
namespace {

// /proc/self/exe's target, read once: the executable of a process does not change (an
// execve replaces the whole image, statics included). The kernel appends " (deleted)"
// when the file was removed or replaced after start; the name without it is still the
// best guess of where a copy lives (a Symbolizer checks the build id anyway).
// Never destroyed: a session started before main() (RINGTRACE_OUTPUT) is stopped by an
// exit hook that runs after the destructors of statics made later, such as this one, and
// its drainer names functions until then.
const std::string& executable_path() {
  static const std::string* const path = new std::string([] {
    std::string target(4096, '\0');
    const ssize_t n = readlink("/proc/self/exe", target.data(), target.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) return std::string();
    target.resize(static_cast<std::size_t>(n));
    constexpr std::string_view kDeleted = " (deleted)";
    if (target.ends_with(kDeleted)) target.resize(target.size() - kDeleted.size());
    return target;
  }());
  return *path;
}

// The loader keeps the name a library was opened with; dlopen("./x.so") leaves it
// relative. Resolve it against the current directory (the best we can do: the directory
// at dlopen time is gone) so that the record means the same thing in another process.
std::string absolute_path(const char* name) {
  if (name[0] == '/') return name;
  std::error_code error;
  std::filesystem::path full = std::filesystem::absolute(name, error);
  return error ? std::string(name) : full.lexically_normal().string();
}

// NT_GNU_BUILD_ID from the mapped PT_NOTE segments. Reading the image rather than the
// file gives the id of what runs, and costs no I/O. Note entries are padded to the
// segment's alignment (4, or 8 for segments holding GNU property notes).
std::string build_id_in_memory(const dl_phdr_info& info) {
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info.dlpi_phdr[i];
    if (phdr.p_type != PT_NOTE) continue;
    const std::size_t align = phdr.p_align == 8 ? 8 : 4;
    const auto pad = [align](std::size_t n) { return (n + align - 1) & ~(align - 1); };
    const auto* data = reinterpret_cast<const unsigned char*>(info.dlpi_addr + phdr.p_vaddr);
    std::size_t pos = 0;
    while (pos + sizeof(ElfW(Nhdr)) <= phdr.p_memsz) {
      ElfW(Nhdr) note;
      std::memcpy(&note, data + pos, sizeof note);
      const std::size_t name_at = pos + sizeof note;
      const std::size_t desc_at = name_at + pad(note.n_namesz);
      const std::size_t next = desc_at + pad(note.n_descsz);
      if (next > phdr.p_memsz || next <= pos) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(data + name_at, "GNU", 4) == 0) {
        return hex_bytes(data + desc_at, note.n_descsz);
      }
      pos = next;
    }
  }
  return {};
}

struct Collect {
  std::vector<Module>* modules;
  std::uintptr_t vdso;
  bool first = true;
};

int collect_one(dl_phdr_info* info, std::size_t, void* data) {
  auto& collect = *static_cast<Collect*>(data);
  const bool is_main = collect.first;
  collect.first = false;

  Module module;
  module.base = info->dlpi_addr;
  bool first_load = true, any_exec = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type != PT_LOAD) continue;
    // The vDSO is an ELF image with no file behind it: nothing to symbolize it from.
    if (first_load && collect.vdso != 0 && info->dlpi_addr + phdr.p_vaddr == collect.vdso) return 0;
    first_load = false;
    if ((phdr.p_flags & PF_X) == 0) continue;
    const std::uint64_t low = info->dlpi_addr + phdr.p_vaddr, high = low + phdr.p_memsz;
    module.low = any_exec ? std::min(module.low, low) : low;
    module.high = any_exec ? std::max(module.high, high) : high;
    any_exec = true;
  }
  const char* name = info->dlpi_name;
  if (is_main && (name == nullptr || name[0] == '\0')) {
    module.path = executable_path();
  } else if (name != nullptr && name[0] != '\0') {
    module.path = absolute_path(name);
  }
  if (module.path.empty()) return 0;
  module.build_id = build_id_in_memory(*info);
  collect.modules->push_back(std::move(module));
  return 0;
}

int first_generation(dl_phdr_info* info, std::size_t size, void* data) {
  // dlpi_adds/dlpi_subs exist since glibc 2.4; `size` says whether this loader fills them.
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    *static_cast<std::uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
  }
  return 1;  // stop: the counters are the same for every object
}

}  // namespace

std::vector<Module> loaded_modules() {
  std::vector<Module> modules;
  modules.reserve(32);
  Collect collect{&modules, static_cast<std::uintptr_t>(getauxval(AT_SYSINFO_EHDR))};
  dl_iterate_phdr(collect_one, &collect);
  return modules;
}

std::uint64_t module_generation() {
  std::uint64_t generation = 0;
  dl_iterate_phdr(first_generation, &generation);
  return generation;
}

const Module* find_module(const std::vector<Module>& modules, std::uint64_t address) {
  for (const Module& module : modules) {
    if (address >= module.low && address < module.high) return &module;
  }
  return nullptr;
}

}  // namespace ringtrace::symbols
