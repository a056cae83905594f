// The parts of an MCP session over HTTP: HttpSink (the session's MessageSink: routes messages to
// the exchange of the POST waiting for them, to the standalone GET stream, or into a bounded
// replay buffer for Last-Event-ID), SessionEntry, and McpExchange (one request to the MCP
// endpoint). HttpSink is thread-safe; an McpExchange is confined to its connection's I/O thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/jsonrpc.h"
#include "protocol/session.h"
#include "transport/http_route.h"
#include "transport/internal/http_util.h"

namespace contextd::transport::internal {

class McpEndpoint;
class McpExchange;
using SteadyNanos = int64_t;

// Where the answers to one request id of a session go: the exchange of the POST waiting for them,
// or, once the engine closed that POST's stream (ex null), the replay buffer under `stream`.
struct SinkRoute {
  std::shared_ptr<McpExchange> ex;
  uint64_t stream = 0;
  bool sse = false;  // the POST accepts text/event-stream (its stream may be closed)
};

// The MessageSink of one HTTP session. Thread-safe. Posts to exchanges under its lock, so that
// they see messages in the order of the Send calls.
class HttpSink final : public protocol::MessageSink {
 public:
  explicit HttpSink(size_t replay_max) : replay_max_(replay_max) {}

  void Send(protocol::Json message, const protocol::Json& related_request_id) override;
  void CloseStream(const protocol::Json& related_request_id) override;

  // Sends an already serialized message to the standalone stream (buffered for replay).
  void SendStandalone(std::string payload);

  enum class AddResult { kAdded, kDuplicate, kSessionEnded };
  // Registers `key` for a request of the POST `ex`. `*stream` (0: not yet) names its stream.
  AddResult AddRoute(const std::string& key, const std::shared_ptr<McpExchange>& ex,
                     uint64_t* stream, bool sse) {
    std::lock_guard<std::mutex> lock(mu_);
    if (detached_) return AddResult::kSessionEnded;
    if (*stream == 0) *stream = ++next_stream_;
    return routes_.try_emplace(key, SinkRoute{ex, *stream, sse}).second ? AddResult::kAdded
                                                                        : AddResult::kDuplicate;
  }

  // Removes the routes of an abandoned POST (only those still pointing at it).
  void RemoveRoutes(const std::vector<std::string>& keys, const McpExchange* ex) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys) {
      auto it = routes_.find(k);
      if (it != routes_.end() && it->second.ex.get() == ex) routes_.erase(it);
    }
  }

  // Assigns the next event id to an event of `stream` sent live and keeps it as a cursor for
  // Last-Event-ID (a priming event: its payload is not replayed).
  uint64_t Cursor(uint64_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    return RecordLocked(stream, std::string());
  }

  enum class AttachResult { kStandalone, kResumed, kResumedComplete, kConflict, kEnded };
  // Attaches a GET. With a Last-Event-ID of a closed POST stream, it resumes that stream
  // (kResumed; kResumedComplete when every answer is in `replay`); otherwise it is the
  // standalone stream (kConflict if one is attached). `replay` gets the kept events after it.
  AttachResult Attach(const std::shared_ptr<McpExchange>& ex, std::optional<uint64_t> last,
                      std::vector<std::pair<uint64_t, std::string>>* replay);
  void DetachStream(const McpExchange* ex);

  // True when a GET stream is attached or a request is in flight (the session is not idle).
  bool Busy() {
    std::lock_guard<std::mutex> lock(mu_);
    return standalone_ || !routes_.empty() || !resumed_.empty();
  }

  // Ends delivery: later messages are dropped. With `notify`, exchanges still attached are told
  // the session is gone. Idempotent.
  void Detach(bool notify);

 private:
  struct Event {
    uint64_t id;
    uint64_t stream;  // 0: the standalone stream
    std::string payload;
  };
  void StandaloneLocked(std::string payload);
  uint64_t RecordLocked(uint64_t stream, std::string payload);

  const size_t replay_max_;
  std::mutex mu_;
  bool detached_ = false;
  std::unordered_map<std::string, SinkRoute> routes_;
  std::shared_ptr<McpExchange> standalone_;
  std::unordered_map<uint64_t, std::shared_ptr<McpExchange>> resumed_;  // stream -> GET
  std::unordered_map<uint64_t, size_t> closed_pending_;  // closed stream -> answers owed
  std::deque<Event> replay_;
  size_t replay_bytes_ = 0;
  uint64_t next_event_id_ = 0;
  uint64_t next_stream_ = 0;
};

// One MCP session of the server.
struct SessionEntry {
  std::string id;
  std::string tenant;
  std::shared_ptr<protocol::Session> session;
  std::shared_ptr<HttpSink> sink;
  std::atomic<SteadyNanos> last_active{0};
  // When the session's last-seen time was last written to the SessionDirectory (shared only).
  std::atomic<SteadyNanos> last_synced{0};
};

// One request to the MCP endpoint. Confined to its connection's I/O thread: created by the
// route's handler, then driven only through responder_->Post/RunAfter/OnClientGone.
class McpExchange : public std::enable_shared_from_this<McpExchange> {
 public:
  McpExchange(McpEndpoint* ep, std::shared_ptr<HttpResponder> responder)
      : ep_(ep), responder_(std::move(responder)) {}

  // Shared sessions first: resumes the named session from the directory, or drops it if it ended
  // elsewhere (asynchronously), then dispatches.
  void Handle(HttpRequest req);

  // ---- From the sink (any thread): posted to the I/O thread.
  void PostMessage(protocol::Json message, bool is_response) {
    responder_->Post([self = shared_from_this(), m = std::move(message), is_response] {
      self->OnSessionMessage(protocol::Serialize(m), is_response);
    });
  }
  void PostEvent(uint64_t id, std::string payload) {
    responder_->Post([self = shared_from_this(), id, p = std::move(payload)] {
      if (self->mode_ == Mode::kGetStream || self->mode_ == Mode::kResumed) {
        self->WriteEvent(id, p);
      }
    });
  }
  void PostSessionGone() {
    responder_->Post([self = shared_from_this()] { self->OnSessionGone(); });
  }
  void PostServerClose(uint64_t priming_id) {
    responder_->Post([self = shared_from_this(), priming_id] { self->OnServerClose(priming_id); });
  }
  void PostStreamComplete() {
    responder_->Post([self = shared_from_this()] {
      if (self->mode_ == Mode::kResumed) self->FinishStream(false);
    });
  }

 private:
  // kResumed: a GET continuing a POST stream the engine closed; kEnding: a DELETE waiting for
  // the session's end to be durable.
  enum class Mode { kNew, kWaiting, kPostStream, kGetStream, kResumed, kEnding, kDone };

  void Dispatch(HttpRequest& req);
  void HandlePost(HttpRequest& req);
  void HandleGet(HttpRequest& req);
  void HandleDelete(HttpRequest& req);
  std::shared_ptr<SessionEntry> RequireSession(HttpRequest& req);
  bool CheckProtocolVersionHeader(HttpRequest& req);

  void OnSessionMessage(std::string payload, bool is_response);
  void OnSessionGone();
  void OnServerClose(uint64_t priming_id);
  void OnClientGone();
  void OnSessionEnded(bool saved);

  void Respond(int status, std::string content_type, std::string body, HttpHeaders headers = {}) {
    if (status == 200 || status == 202) {
      for (auto& h : session_header_) headers.push_back(std::move(h));
    }
    mode_ = Mode::kDone;
    route_keys_.clear();
    responder_->Respond({status, std::move(content_type), std::move(headers), std::move(body)});
  }
  void RespondError(int status, std::string_view message) {
    Respond(status, "application/json", ErrorBody(status == 404 ? -32001 : -32000, message));
  }
  std::string JoinCollected() const;
  void StartRequestTimer();
  void AbandonRoutes() {
    if (session_ && !route_keys_.empty()) session_->sink->RemoveRoutes(route_keys_, this);
    route_keys_.clear();
  }
  void StartStream(Mode mode);
  void WritePriming(uint64_t id, bool with_retry);
  void WriteEvent(uint64_t event_id, std::string_view payload);
  void FinishStream(bool close);
  void ScheduleKeepAlive();

  McpEndpoint* ep_;
  std::shared_ptr<HttpResponder> responder_;
  Mode mode_ = Mode::kNew;
  bool accept_json_ = true;
  bool accept_sse_ = false;
  bool batch_ = false;
  bool prime_ = false;  // the client speaks 2025-11-25 or later: prime POST streams at once
  size_t remaining_ = 0;
  uint64_t stream_ = 0;
  HttpHeaders session_header_;  // Mcp-Session-Id of a new session
  std::shared_ptr<SessionEntry> session_;
  std::vector<std::string> route_keys_;
  std::vector<std::string> collected_;
};

}  // namespace contextd::transport::internal
