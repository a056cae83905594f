// SessionDirectory: where the Streamable HTTP endpoint finds the MCP sessions that other
// instances sharing its store initialized, and tells the store which sessions it served, so that
// an Mcp-Session-Id is valid on every instance (decision 0025). Implemented by the server over
// store::McpSessionStore; absent (null) when one instance owns every session (SQLite, stdio).
// Implementations are thread-safe; their callbacks may run on any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "protocol/session.h"

namespace contextd::transport {

// Why the endpoint closes a session (Session::Close's reason), as the server's session hooks
// read it to decide whether the end is shared (DELETE, idle everywhere) or local to this
// instance (shutdown, ended elsewhere) when sessions are shared.
inline constexpr std::string_view kCloseDeleted = "client deleted session";
inline constexpr std::string_view kCloseIdle = "idle timeout";
inline constexpr std::string_view kCloseShutdown = "server shutdown";
inline constexpr std::string_view kCloseEndedElsewhere = "ended on another instance";

class SessionDirectory {
 public:
  struct Found {
    protocol::SessionInfo info;  // session_id, tenant, transport "http", project if fixed, ...
    protocol::SessionResume resume;
  };
  virtual ~SessionDirectory() = default;
  // Looks up open session `id` of `tenant`. `done`, exactly once: the session; nullopt when it is
  // unknown, ended or another tenant's; or the store's error.
  virtual void Lookup(std::string id, std::string tenant,
                      std::function<void(absl::StatusOr<std::optional<Found>>)> done) = 0;
  // The sessions `ids` were used by this instance just now (their last-seen time moves on).
  // `done`, exactly once: those of them still open (the others ended elsewhere), or an error.
  virtual void Touch(std::vector<std::string> ids,
                     std::function<void(absl::StatusOr<std::vector<std::string>>)> done) = 0;
};

}  // namespace contextd::transport
