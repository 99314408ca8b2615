#include "module_file.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "hex.hpp"

namespace ringtrace::symbols {
namespace {

namespace fs = std::filesystem;

void init_libelf() {
  // libelf refuses elf_begin until the version is set; libdwfl does it for its own
  // calls, but the build id check below opens files before any Dwfl exists.
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

// The build id of the ELF file open on `fd` ("" if it has none); false if it is not ELF.
bool read_build_id(int fd, std::string& id) {
  init_libelf();
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const bool is_elf = elf_kind(elf) == ELF_K_ELF;
  const void* bits = nullptr;
  const ssize_t size = is_elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
  id = size > 0 ? hex_bytes(static_cast<const unsigned char*>(bits), static_cast<std::size_t>(size)) : std::string();
  elf_end(elf);
  return is_elf;
}

std::string build_id_path(const std::string& dir, const std::string& id, const char* suffix) {
  return dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + suffix;
}

// Where a file with the recorded build id may be, in the order tried (see the header).
std::vector<std::string> candidates(const Module& module, const DwflConfig& config) {
  std::vector<std::string> out{module.path};
  if (module.build_id.size() < 4) return out;
  const std::string base_name = fs::path(module.path).filename().string();
  for (const std::string& dir : config.search_paths()) {
    out.push_back(build_id_path(dir, module.build_id, ""));
    if (!base_name.empty()) out.push_back(dir + "/" + base_name);
    if (module.path.starts_with('/')) out.push_back(dir + module.path);
  }
  for (const std::string& dir : config.search_paths()) out.push_back(build_id_path(dir, module.build_id, ".debug"));
  out.push_back(build_id_path("/usr/lib/debug", module.build_id, ".debug"));
  return out;
}

}  // namespace

DwflConfig::DwflConfig(std::vector<std::string> search_paths) {
  // libdwfl reads the debuginfo path as ':'-separated entries: "" is the module file's own
  // directory, a relative entry (".debug") is under it, an absolute one is searched for
  // .build-id/xx/yyyy.debug and for the debuglink name. Relative search paths are made
  // absolute here so they mean the caller's current directory, not the module's.
  debuginfo_path_ = ":.debug";
  for (std::string& dir : search_paths) {
    if (dir.empty() || dir.find(':') != std::string::npos) continue;
    std::error_code error;
    fs::path full = fs::absolute(dir, error);
    if (!error) dir = full.lexically_normal().string();
    while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
    debuginfo_path_ += ":" + dir;
    search_paths_.push_back(std::move(dir));
  }
  debuginfo_path_ += ":/usr/lib/debug";
  debuginfo_path_ptr_ = debuginfo_path_.data();
  // find_elf is only called for modules reported without a file, which this code never
  // does (dwfl_report_elf with the file found above); libdwfl requires it all the same.
  callbacks_.find_elf = dwfl_build_id_find_elf;
  // Separate debug files: by build id in the path's .build-id directories, then by
  // .gnu_debuglink name (and, only when DEBUGINFOD_URLS is set, from debuginfod servers).
  callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
  callbacks_.section_address = dwfl_offline_section_address;
  callbacks_.debuginfo_path = &debuginfo_path_ptr_;
}

std::unique_ptr<ModuleFile> ModuleFile::open(const Module& module, const DwflConfig& config, std::string& problem) {
  problem.clear();
  std::string recorded_status;  // what was wrong with the recorded path
  const std::vector<std::string> paths = candidates(module, config);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    const bool recorded = i == 0;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (recorded) recorded_status = errno == ENOENT ? "not found" : std::strerror(errno);
      continue;
    }
    std::string id;
    if (!read_build_id(fd, id)) {
      ::close(fd);
      if (recorded) recorded_status = "not an ELF file";
      continue;
    }
    if (!module.build_id.empty() && id != module.build_id) {
      ::close(fd);
      if (recorded) {
        recorded_status = "build id mismatch (the file has " + (id.empty() ? std::string("none") : id) +
                          ", the recorded module " + module.build_id + ")";
      }
      continue;
    }
    Dwfl* dwfl = dwfl_begin(config.callbacks());
    if (dwfl == nullptr) {
      ::close(fd);
      problem = module.path + ": " + dwfl_errmsg(-1);
      return nullptr;
    }
    // ET_DYN: add_p_vaddr=true makes `base` the bias (file address + base = process
    // address), which is what dlpi_addr is. ET_EXEC: libdwfl ignores the base.
    const std::string name = fs::path(module.path).filename().string();
    Dwfl_Module* dwfl_module = dwfl_report_elf(dwfl, name.c_str(), path.c_str(), fd, module.base, true);
    if (dwfl_module == nullptr) {
      // On failure libdwfl leaves the descriptor to us; on success it owns it.
      if (recorded) recorded_status = dwfl_errmsg(-1);
      ::close(fd);
      dwfl_end(dwfl);
      continue;
    }
    dwfl_report_end(dwfl, nullptr, nullptr);
    if (!recorded) problem = module.path + ": " + recorded_status + "; using " + path + " (same build id)";
    Dwarf_Addr bias = 0;
    if (dwfl_module_getdwarf(dwfl_module, &bias) == nullptr) {
      if (!problem.empty()) problem += "; ";
      problem += path + ": no DWARF debug info (names from the ELF symbol table only, no file/line)";
    }
    return std::unique_ptr<ModuleFile>(new ModuleFile(dwfl, dwfl_module, path));
  }
  problem = module.path + ": " + recorded_status;
  if (!module.build_id.empty()) problem += "; no file with build id " + module.build_id + " in the search paths";
  return nullptr;
}

ModuleFile::~ModuleFile() { dwfl_end(dwfl_); }

}  // namespace ringtrace::symbols
