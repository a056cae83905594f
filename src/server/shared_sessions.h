// SharedSessions: MCP sessions kept in a store several instances share (store.backend: postgres;
// decision 0025). It is the transport's SessionDirectory (lookups and last-seen touches, run on
// its own worker thread so that neither the I/O threads nor the engine executor wait for them),
// and it holds what the server's session hooks decide on the engine executor: the record written
// at initialize, the project once fixed, and whether a session's end is shared (DELETE; idle on
// every instance) or only this instance's (shutdown, ended elsewhere, seen elsewhere lately).
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/clock.h"
#include "base/executor.h"
#include "protocol/session.h"
#include "store/mcp_session_store.h"
#include "transport/session_directory.h"

namespace contextd::server {

class SharedSessions final : public transport::SessionDirectory {
 public:
  // `store` must outlive this. `idle_timeout`: the server's session_idle_timeout.
  SharedSessions(std::shared_ptr<store::McpSessionStore> store,
                 std::chrono::milliseconds idle_timeout);
  // Stops the worker: lookups and touches queued and not run call nothing.
  ~SharedSessions() override;

  // ---- transport::SessionDirectory (any thread; callbacks on the worker thread).
  void Lookup(std::string id, std::string tenant,
              std::function<void(absl::StatusOr<std::optional<Found>>)> done) override;
  void Touch(std::vector<std::string> ids,
             std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override;

  // ---- For the session hooks (engine executor; each call is one committed statement).
  // initialize succeeded: stores the session's record. The store's error otherwise (logged).
  absl::Status Record(const protocol::SessionInfo& info, const protocol::SessionResume& resume);
  // The project of an HTTP session was fixed: stores it (errors are logged: another instance
  // continuing the session then fixes its project again, the same way).
  void ProjectFixed(const protocol::SessionInfo& info);
  // True when closing `info` for `reason` ends the session for every instance, so its branches
  // are force-returned and its trail folded: a DELETE (the record is marked ended), or idle here
  // and not seen by any instance for the idle timeout (marked ended by this instance only). False
  // when the session stays open for the others (shutdown, ended elsewhere, seen elsewhere).
  bool EndsEverywhere(const protocol::SessionInfo& info, std::string_view reason);

  // Idle expiry of the sessions no instance holds (their instance stopped or died, their client
  // left): ends (as EndsEverywhere does for an idle one) up to `limit` open sessions that no
  // instance saw for the idle timeout and returns those this call ended, for the caller to end
  // their branches and trail. Errors are logged (nothing is returned).
  std::vector<protocol::SessionInfo> EndIdle(int limit);

  // Stops the worker now (before the transport that calls back into it goes away).
  void Stop();

 private:
  std::shared_ptr<store::McpSessionStore> store_;
  const std::chrono::milliseconds idle_timeout_;
  base::ThreadExecutor worker_{"shared_sessions"};
};

}  // namespace contextd::server
