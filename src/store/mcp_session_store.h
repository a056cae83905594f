// McpSessionStore: the durable record of each MCP session (Streamable HTTP, Mcp-Session-Id), so
// that any contextd instance sharing the store can continue a session another one initialized
// (decision 0025): what initialize negotiated, the project once fixed, when it was last seen and
// whether (and why) it ended. Implemented over SQLite (migration 13) and PostgreSQL (migration 2).
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::store {

// One MCP session as stored.
struct McpSessionRecord {
  std::string id;      // the Mcp-Session-Id
  std::string tenant;  // from the bearer token
  // The project once the engine fixed it ("" before), and what it was derived from.
  std::string project;
  std::string project_label;
  std::string project_header;    // X-Contextd-Project of the initialize request ("" if absent)
  std::string protocol_version;  // negotiated at initialize
  std::string client_capabilities = "{}";  // JSON text, as the client declared them
  std::string client_info = "{}";          // JSON text
  int64_t created_ms = 0;
  int64_t last_seen_ms = 0;
  int64_t ended_ms = 0;    // 0 while the session is open
  std::string end_reason;  // why it ended ("" while open)
  bool operator==(const McpSessionRecord&) const = default;
};

class McpSessionStore {
 public:
  virtual ~McpSessionStore() = default;
  // Stores a new open session (ended_ms and end_reason are ignored). AlreadyExists for a known
  // id; Unavailable/Internal on a database error. Durable when it returns (SQLite with group
  // commit: once its group commits).
  virtual absl::Status Create(const McpSessionRecord& record) = 0;
  // The session `id` (open or ended), or nullopt.
  virtual absl::StatusOr<std::optional<McpSessionRecord>> Get(std::string_view id) = 0;
  // Sets the project of session `id` (once fixed). NotFound for an unknown id.
  virtual absl::Status SetProject(std::string_view id, std::string_view project,
                                  std::string_view project_label) = 0;
  // Moves last_seen_ms of the open sessions among `ids` forward to `now_ms` (never back) and
  // returns those that are open; the others are ended or unknown. InvalidArgument for an id
  // holding '\n'.
  virtual absl::StatusOr<std::vector<std::string>> Touch(const std::vector<std::string>& ids,
                                                         int64_t now_ms) = 0;
  // Ends session `id` if it is open and, with `idle_before_ms` > 0, was last seen before it.
  // True if this call ended it; false if it was ended already, unknown, or seen since (the
  // decision of an instance among several: only one ends a session, and none ends one another
  // instance served recently).
  virtual absl::StatusOr<bool> End(std::string_view id, int64_t now_ms, std::string_view reason,
                                   int64_t idle_before_ms = 0) = 0;
  // Open sessions last seen before `idle_before_ms`, oldest first, at most `limit`: the sessions
  // no instance holds any more (their instance stopped or died, their client left) that idle
  // expiry ends with End(..., idle_before_ms).
  virtual absl::StatusOr<std::vector<McpSessionRecord>> ListIdle(int64_t idle_before_ms,
                                                                 int limit) = 0;
};

}  // namespace contextd::store
