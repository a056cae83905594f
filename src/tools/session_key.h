// SessionKeyFor: which tenant, project and session own the branches and trail of an MCP session,
// and the project rules: a client's roots or an X-Contextd-Project header -> a project id
// (decision 0022). The one mapping from a transport's SessionInfo to the engine's SessionKey.
// Pure functions (ProjectForPath reads the file system: realpath); thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "folding/branch.h"
#include "protocol/jsonrpc.h"
#include "protocol/session.h"

namespace contextd::tools {

// The project of a session whose client gave no roots and no X-Contextd-Project header.
inline constexpr char kDefaultProject[] = "default";

// A project id and what it was derived from.
struct ProjectRef {
  std::string id;     // "p_" + 16 hex digits, an explicit id, or "default"
  std::string label;  // the canonical path, the explicit id, or ""
};

// The project of a directory: its canonical absolute path (realpath'd when it exists, else
// lexically normalized, without a trailing '/') as label, and "p_" + the first 16 hex digits of
// the SHA-256 of that path as id. Two worktrees of one repository are two projects; a symlink
// and its target are one. `path` must be absolute.
ProjectRef ProjectForPath(std::string_view path);

// The project named by the first root of a roots/list answer's "roots" array: its file:// URI
// (percent-decoded; host empty or "localhost") made a path and passed to ProjectForPath. NotFound
// when `roots` is not a non-empty array or its first root is not a file:// URI of an absolute
// path.
absl::StatusOr<ProjectRef> ProjectFromRoots(const protocol::Json& roots);

// The project named by an X-Contextd-Project header: an absolute path is hashed as
// ProjectForPath does (so a model request naming the checkout lands in the project of an MCP
// session whose root it is); any other valid value (protocol::ValidProjectHeader) is the id
// itself. InvalidArgument for an invalid value.
absl::StatusOr<ProjectRef> ProjectFromHeader(std::string_view value);

// The ProjectResolver of the MCP engine: the first root, else the session's header, else
// "default". Sets info.project and info.project_label.
void ResolveSessionProject(const protocol::Json& roots, protocol::SessionInfo& info);

// The owner of a session's branches: tenant from the transport ("local" if none), the session's
// project ("default" until fixed), and the session id.
inline folding::SessionKey SessionKeyFor(const protocol::SessionInfo& info) {
  folding::SessionKey key;
  key.tenant = info.tenant.empty() ? "local" : info.tenant;
  key.project = info.project.empty() ? kDefaultProject : info.project;
  key.session_id = info.session_id;
  return key;
}

}  // namespace contextd::tools
