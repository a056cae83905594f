// McpEndpoint: the MCP Streamable HTTP endpoint as a route of the listener. Owns the sessions
// (Mcp-Session-Id -> protocol::Session and its HttpSink), routes each session's messages to the
// POST waiting for them or to an SSE stream, keeps a bounded replay of SSE events for
// Last-Event-ID (the standalone stream, and POST streams the engine closed before their answer),
// ends idle sessions, and answers DELETE once the session's end is durable. With a
// SessionDirectory (sessions shared between instances, decision 0025) it resumes sessions other
// instances initialized and keeps their shared last-seen time current.
// Thread-safe: the route's handler runs on I/O threads, sinks are called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "boost/asio/io_context.hpp"
#include "boost/asio/steady_timer.hpp"
#include "protocol/session.h"
#include "transport/http_route.h"
#include "transport/http_server.h"

namespace contextd::transport::internal {

struct SessionEntry;
class McpExchange;

class McpEndpoint {
 public:
  // `options` must outlive this (owned by HttpServer::Impl).
  McpEndpoint(const HttpServerOptions& options, std::shared_ptr<protocol::SessionFactory> factory);
  ~McpEndpoint();

  // The route of `options.path` (every method; the endpoint answers 405 itself). Its handler
  // refers to this endpoint, which must outlive the listener's I/O threads.
  HttpRoute Route();
  // Starts the idle-session sweep on `ioc` (a timer of it, destroyed by AfterThreadsStopped).
  void StartSweep(boost::asio::io_context& ioc);
  // New sessions are refused from now on (Stop has begun).
  void BeginStop();
  // Once no I/O thread runs: detaches every sink (later messages are dropped), closes every
  // session ("server shutdown") and drops the sweep timer.
  void AfterThreadsStopped();
  // The number of open sessions.
  uint64_t sessions_open();

  // ---- Used by the exchanges (I/O threads).

  const HttpServerOptions& opts() const { return opts_; }
  // Creates a session; nullptr when max_sessions is reached or the server stops.
  // `project_header`: the initialize request's X-Contextd-Project (SessionInfo::project_header).
  std::shared_ptr<SessionEntry> CreateSession(const std::string& tenant,
                                              std::string project_header = "");
  // The session `id` of `tenant`, or nullptr (unknown, ended, other tenant).
  std::shared_ptr<SessionEntry> FindSession(const std::string& id, const std::string& tenant);
  // Removes and closes a session. False if unknown. With `done`, the session calls it once its
  // end is durable (Session::CloseThen).
  bool CloseSession(const std::string& id, std::string_view reason,
                    std::function<void(const absl::Status&)> done = nullptr);
  bool VersionSupported(std::string_view v) const;

  // With a SessionDirectory: makes what this instance holds of session `id` current before a
  // request for it is served. kReady: nothing to wait for. kPending: `then` is called (any
  // thread) once the session was resumed from the directory, found unknown or ended elsewhere
  // (dropped here), with false if the directory could not answer (503). kBusy: too many lookups
  // in flight (503).
  enum class Revalidation { kReady, kPending, kBusy };
  Revalidation Revalidate(const std::string& id, const std::string& tenant,
                          std::function<void(bool answered)> then);
  bool shared() const { return opts_.session_directory != nullptr; }

 private:
  void Handle(HttpRequest request, std::shared_ptr<HttpResponder> responder);
  void ScheduleSweep();
  void SweepIdleSessions();
  // Adds a session resumed from the directory (no-op if one with its id is held already).
  void AdoptSession(transport::SessionDirectory::Found found);
  // Touches the sessions used since their last sync (and those with a stream open); drops those
  // that ended elsewhere.
  void SyncSessions();
  void RememberUnknown(const std::string& key);

  const HttpServerOptions& opts_;
  std::shared_ptr<protocol::SessionFactory> factory_;
  std::mutex mu_;
  bool stopping_ = false;
  std::unordered_map<std::string, std::shared_ptr<SessionEntry>> sessions_;
  std::unique_ptr<boost::asio::steady_timer> sweep_timer_;
  // Shared sessions: "tenant\nid" of ids the directory did not know (bounded, oldest evicted),
  // and lookups in flight. Guarded by mu_.
  std::unordered_set<std::string> unknown_;
  std::deque<std::string> unknown_order_;
  int lookups_in_flight_ = 0;
};

}  // namespace contextd::transport::internal
