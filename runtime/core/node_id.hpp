// A process's node id (TraceContext::node_id_of): what the key-averages table groups and
// labels its rows by when several machines (or ranks) are in one file. The live session
// and the file's readers make the default alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringtrace::detail {

// A node id given by the user (Config::node_id, RINGTRACE_NODE_ID) is cut to this many bytes.
inline constexpr std::size_t kMaxNodeId = 256;

// The node id of a process whose session named none: "host:pid" (the pid alone when the
// host is not known). docs/file-format.md, "Node".
inline std::string default_node_id(std::string_view host, std::uint32_t pid) {
  std::string id(host);
  if (!id.empty()) id.push_back(':');
  id.append(std::to_string(pid));
  return id;
}

}  // namespace ringtrace::detail
