// SessionKeyFor: which tenant, project and session own the branches and trail of an MCP session.
// The one mapping from a transport's SessionInfo to the engine's SessionKey. Pure; thread-safe.
#pragma once

#include "folding/branch.h"
#include "protocol/session.h"

namespace contextd::server {

// The project every session belongs to until projects are configurable.
inline constexpr char kDefaultProject[] = "default";

// The owner of a session's branches: tenant from the transport ("local" if none), the default
// project, and the session id.
inline folding::SessionKey SessionKeyFor(const protocol::SessionInfo& info) {
  folding::SessionKey key;
  key.tenant = info.tenant.empty() ? "local" : info.tenant;
  key.project = kDefaultProject;
  key.session_id = info.session_id;
  return key;
}

}  // namespace contextd::server
