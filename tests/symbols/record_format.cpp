#include "record_format.hpp"

#include <fstream>
#include <sstream>

namespace fixture {

// One record a line; the last field (a path or a name, which may hold spaces) takes the
// rest of the line:
//   pid <pid>
//   module <base> <low> <high> <build id or -> <path>
//   function <address> <line> <file> <name>
bool write_recording(const std::string& path, const Recording& recording) {
  std::ofstream out(path);
  out << "pid " << recording.pid << "\n" << std::hex;
  for (const auto& module : recording.modules) {
    out << "module " << module.base << ' ' << module.low << ' ' << module.high << ' '
        << (module.build_id.empty() ? "-" : module.build_id) << ' ' << module.path << "\n";
  }
  for (const RecordedFunction& function : recording.functions) {
    out << "function " << function.address << ' ' << std::dec << function.line << std::hex << ' ' << function.file
        << ' ' << function.name << "\n";
  }
  out.close();
  return static_cast<bool>(out);
}

bool read_recording(const std::string& path, Recording& recording) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "pid") {
      fields >> recording.pid;
    } else if (kind == "module") {
      ringtrace::symbols::Module module;
      fields >> std::hex >> module.base >> module.low >> module.high >> module.build_id;
      if (module.build_id == "-") module.build_id.clear();
      fields.get();
      std::getline(fields, module.path);
      recording.modules.push_back(std::move(module));
    } else if (kind == "function") {
      RecordedFunction function;
      fields >> std::hex >> function.address >> std::dec >> function.line >> function.file;
      fields.get();
      std::getline(fields, function.name);
      recording.functions.push_back(std::move(function));
    } else {
      return false;
    }
    if (fields.fail()) return false;
  }
  return true;
}

}  // namespace fixture
