#include "transport/internal/mcp_endpoint.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "base/ids.h"
#include "base/logging.h"
#include "boost/asio/strand.hpp"
#include "transport/internal/http_util.h"
#include "transport/internal/message_shape.h"

namespace contextd::transport::internal {

using protocol::Json;
using SteadyNanos = int64_t;

namespace {

SteadyNanos NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kMaxReplayBytes = 8u << 20;
constexpr std::string_view kEventStream = "text/event-stream";

}  // namespace

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

  void Send(Json message, const Json& related_request_id) override;
  void CloseStream(const Json& related_request_id) override;

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
};

// One request to the MCP endpoint. Confined to its connection's I/O thread: created by the
// route's handler, then driven only through responder_->Post/RunAfter/OnClientGone.
class McpExchange : public std::enable_shared_from_this<McpExchange> {
 public:
  McpExchange(McpEndpoint* ep, std::shared_ptr<HttpResponder> responder)
      : ep_(ep), responder_(std::move(responder)) {}

  void Handle(HttpRequest req);

  // ---- From the sink (any thread): posted to the I/O thread.
  void PostMessage(Json message, bool is_response) {
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

// ---- McpExchange.

void McpExchange::Handle(HttpRequest req) {
  const std::string_view m = req.method();
  if (m == "POST") return HandlePost(req);
  if (m == "GET") return HandleGet(req);
  if (m == "DELETE") return HandleDelete(req);
  Respond(405, "application/json", ErrorBody(-32000, "method not allowed"),
          {{"Allow", "GET, POST, DELETE"}});
}

std::shared_ptr<SessionEntry> McpExchange::RequireSession(HttpRequest& req) {
  std::string_view sid = req.Header("Mcp-Session-Id");
  if (sid.empty()) {
    RespondError(400, "bad request: Mcp-Session-Id header is required");
    return nullptr;
  }
  auto entry = ep_->FindSession(std::string(sid), req.tenant());
  if (!entry) RespondError(404, "session not found");
  return entry;
}

bool McpExchange::CheckProtocolVersionHeader(HttpRequest& req) {
  if (!req.HasHeader("MCP-Protocol-Version")) return true;  // absent: 2025-03-26 (spec)
  std::string_view v = req.Header("MCP-Protocol-Version");
  if (ep_->VersionSupported(v)) {
    prime_ = v >= "2025-11-25";
    return true;
  }
  RespondError(400, "bad request: unsupported MCP-Protocol-Version: " + std::string(v));
  return false;
}

void McpExchange::HandlePost(HttpRequest& req) {
  std::string_view accept = req.Header("Accept");
  if (accept.empty()) {
    accept_json_ = true;
    accept_sse_ = false;
  } else {
    const std::string a = Lower(accept);
    const bool any = a.find("*/*") != std::string::npos;
    accept_json_ = any || a.find("application/json") != std::string::npos ||
                   a.find("application/*") != std::string::npos;
    accept_sse_ = any || a.find("text/event-stream") != std::string::npos ||
                  a.find("text/*") != std::string::npos;
    if (!accept_json_ && !accept_sse_) {
      return RespondError(406,
                          "not acceptable: Accept must include application/json or "
                          "text/event-stream");
    }
  }
  std::string_view ctype = req.Header("Content-Type");
  if (!ctype.empty() && !ContainsNoCase(ctype, "application/json")) {
    return RespondError(415, "unsupported media type: Content-Type must be application/json");
  }

  protocol::Incoming in = protocol::ParseIncoming(req.body(), ep_->opts().max_message_bytes);
  if ((!in.batch || IsEmptyArray(req.body())) &&
      std::holds_alternative<protocol::ParseError>(in.items[0])) {
    const auto& err = std::get<protocol::ParseError>(in.items[0]);
    return Respond(400, "application/json",
                   protocol::Serialize(protocol::MakeError(err.id, err.code, err.message)));
  }
  bool is_init = false;
  for (const auto& item : in.items) {
    if (const auto* msg = std::get_if<protocol::Message>(&item)) {
      if (msg->kind == protocol::MessageKind::kRequest && msg->method == "initialize") {
        is_init = true;
      }
    }
  }
  std::string_view sid = req.Header("Mcp-Session-Id");
  std::shared_ptr<SessionEntry> entry;
  if (sid.empty()) {
    if (!is_init || in.batch) {
      return RespondError(400, "bad request: Mcp-Session-Id header is required");
    }
    entry = ep_->CreateSession(req.tenant());
    if (!entry) return RespondError(503, "too many sessions");
    session_header_.emplace_back("Mcp-Session-Id", entry->id);
  } else {
    if (!is_init && !CheckProtocolVersionHeader(req)) return;
    entry = ep_->FindSession(std::string(sid), req.tenant());
    if (!entry) return RespondError(404, "session not found");
  }
  session_ = entry;
  batch_ = in.batch;

  std::vector<protocol::Message> to_session;
  to_session.reserve(in.items.size());
  auto self = shared_from_this();
  for (auto& item : in.items) {
    if (auto* err = std::get_if<protocol::ParseError>(&item)) {
      collected_.push_back(
          protocol::Serialize(protocol::MakeError(err->id, err->code, err->message)));
      continue;
    }
    auto& msg = std::get<protocol::Message>(item);
    if (msg.kind == protocol::MessageKind::kRequest) {
      std::string key = msg.id.dump();
      const auto added = entry->sink->AddRoute(key, self, &stream_, accept_sse_);
      if (added == HttpSink::AddResult::kSessionEnded) {
        // Deleted or expired between lookup and now.
        AbandonRoutes();
        return RespondError(404, "session not found");
      }
      if (added == HttpSink::AddResult::kDuplicate) {
        collected_.push_back(protocol::Serialize(
            protocol::MakeError(msg.id, protocol::kInvalidRequest,
                                "invalid request: a request with this id is already in flight")));
        continue;
      }
      route_keys_.push_back(std::move(key));
      ++remaining_;
    }
    to_session.push_back(std::move(msg));
  }
  if (remaining_ > 0) {
    mode_ = Mode::kWaiting;
    StartRequestTimer();
    responder_->OnClientGone([self] { self->OnClientGone(); });
  }
  for (auto& msg : to_session) entry->session->Receive(std::move(msg));
  if (remaining_ == 0) {
    if (collected_.empty()) return Respond(202, "", "");
    // Only unanswerable requests: their errors (a batch, or a single duplicate id).
    return Respond(200, "application/json", JoinCollected());
  }
  // Answers arrive through OnSessionMessage.
}

void McpExchange::HandleGet(HttpRequest& req) {
  if (!ContainsNoCase(req.Header("Accept"), kEventStream)) {
    return RespondError(406, "not acceptable: GET requires Accept: text/event-stream");
  }
  if (!CheckProtocolVersionHeader(req)) return;
  auto entry = RequireSession(req);
  if (!entry) return;
  std::optional<uint64_t> last;
  std::string_view last_id = req.Header("Last-Event-ID");
  if (!last_id.empty()) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(last_id.data(), last_id.data() + last_id.size(), v);
    if (ec == std::errc() && p == last_id.data() + last_id.size()) last = v;
  }
  std::vector<std::pair<uint64_t, std::string>> replay;
  const auto attached = entry->sink->Attach(shared_from_this(), last, &replay);
  if (attached == HttpSink::AttachResult::kEnded) return RespondError(404, "session not found");
  if (attached == HttpSink::AttachResult::kConflict) {
    return RespondError(409, "conflict: this session already has a GET stream");
  }
  session_ = entry;
  StartStream(attached == HttpSink::AttachResult::kStandalone ? Mode::kGetStream : Mode::kResumed);
  for (auto& [id, payload] : replay) WriteEvent(id, payload);
  if (attached == HttpSink::AttachResult::kResumedComplete) return FinishStream(false);
  ScheduleKeepAlive();
  responder_->OnClientGone([self = shared_from_this()] { self->OnClientGone(); });
}

void McpExchange::HandleDelete(HttpRequest& req) {
  if (!CheckProtocolVersionHeader(req)) return;
  auto entry = RequireSession(req);
  if (!entry) return;
  // Answered once the end is durable (the branches it force-returned are committed): a client
  // told 200 must not find them active after a crash.
  mode_ = Mode::kEnding;
  StartRequestTimer();
  // The responder holds the connection until the answer, the client's leaving or Stop(), after
  // which posting through it does nothing. Only whether the end was saved crosses threads: an
  // error Status's shared representation is released inside the (uninstrumented) absl library,
  // which ThreadSanitizer reports as a race.
  bool closed = ep_->CloseSession(
      entry->id, "client deleted session", [self = shared_from_this()](const absl::Status& ended) {
        self->responder_->Post([self, saved = ended.ok()] { self->OnSessionEnded(saved); });
      });
  if (!closed) {  // ended meanwhile (idle timeout, another DELETE)
    responder_->CancelTimer();
    RespondError(404, "session not found");
  }
}

void McpExchange::OnSessionEnded(bool saved) {
  if (mode_ != Mode::kEnding) return;  // timed out
  if (saved) return Respond(200, "", "");
  // The storage error (with the data file's path) is in the server log, not for a client.
  RespondError(500,
               "the session ended, but saving its end failed (see the server log): its "
               "branches stay active until their deadlines or the server's next start");
}

void McpExchange::OnSessionMessage(std::string payload, bool is_response) {
  if (mode_ != Mode::kWaiting && mode_ != Mode::kPostStream) {
    return;  // abandoned (client gone, timeout, session ended)
  }
  if (!is_response) {
    if (mode_ == Mode::kWaiting && accept_sse_) StartStream(Mode::kPostStream);
    if (mode_ == Mode::kPostStream) {
      WriteEvent(0, payload);
    } else if (session_) {
      session_->sink->SendStandalone(std::move(payload));
    }
    return;
  }
  --remaining_;
  // A client that accepts only text/event-stream gets its answers as a stream.
  if (mode_ == Mode::kWaiting && !accept_json_) StartStream(Mode::kPostStream);
  if (mode_ == Mode::kPostStream) {
    WriteEvent(0, payload);
    if (remaining_ == 0) {
      for (const auto& c : collected_) WriteEvent(0, c);
      FinishStream(false);
    }
    return;
  }
  if (batch_) {
    collected_.push_back(std::move(payload));
    if (remaining_ == 0) Respond(200, "application/json", JoinCollected());
    return;
  }
  Respond(200, "application/json", std::move(payload));
}

void McpExchange::OnSessionGone() {
  if (mode_ == Mode::kGetStream || mode_ == Mode::kResumed || mode_ == Mode::kPostStream) {
    FinishStream(true);
  } else if (mode_ == Mode::kWaiting) {
    RespondError(404, "session ended");
  }
}

// The engine closed this POST's stream before its answers (SEP-1699 polling): the client gets
// an event id and a retry delay, then the end of the stream, and resumes with GET and
// Last-Event-ID; the sink keeps the answers for it meanwhile.
void McpExchange::OnServerClose(uint64_t priming_id) {
  if (mode_ == Mode::kWaiting) StartStream(Mode::kPostStream);
  if (mode_ != Mode::kPostStream) return;
  route_keys_.clear();  // the sink now keeps them for the resumed stream
  WritePriming(priming_id, /*with_retry=*/true);
  FinishStream(false);
}

void McpExchange::OnClientGone() {
  if (mode_ == Mode::kWaiting || mode_ == Mode::kPostStream) AbandonRoutes();
  if ((mode_ == Mode::kGetStream || mode_ == Mode::kResumed) && session_) {
    session_->sink->DetachStream(this);
  }
  mode_ = Mode::kDone;
}

std::string McpExchange::JoinCollected() const {
  if (!batch_ && collected_.size() == 1) return collected_[0];
  std::string body = "[";
  for (size_t i = 0; i < collected_.size(); ++i) {
    if (i > 0) body.push_back(',');
    body += collected_[i];
  }
  body.push_back(']');
  return body;
}

void McpExchange::StartRequestTimer() {
  if (ep_->opts().request_timeout.count() <= 0) return;
  responder_->RunAfter(ep_->opts().request_timeout, [self = shared_from_this()] {
    if (self->mode_ == Mode::kWaiting) {
      self->AbandonRoutes();
      self->RespondError(504, "timed out waiting for the answer");
    } else if (self->mode_ == Mode::kPostStream) {
      self->AbandonRoutes();
      self->FinishStream(true);
    } else if (self->mode_ == Mode::kEnding) {
      self->RespondError(504, "timed out waiting for the session's end to be saved");
    }
  });
}

void McpExchange::StartStream(Mode mode) {
  mode_ = mode;
  HttpHeaders headers = {{"Cache-Control", "no-cache, no-transform"}};
  for (auto& h : session_header_) headers.push_back(std::move(h));
  session_header_.clear();
  responder_->StartStream(200, std::string(kEventStream), std::move(headers));
  if (mode == Mode::kPostStream && prime_ && session_) {
    WritePriming(session_->sink->Cursor(stream_), /*with_retry=*/false);
  }
}

void McpExchange::WritePriming(uint64_t id, bool with_retry) {
  std::string ev = "id: " + std::to_string(id) + "\n";
  if (with_retry) ev += "retry: " + std::to_string(ep_->opts().sse_retry.count()) + "\n";
  ev += "data: \n\n";
  responder_->Write(std::move(ev));
}

void McpExchange::WriteEvent(uint64_t event_id, std::string_view payload) {
  std::string ev;
  ev.reserve(payload.size() + 32);
  if (event_id != 0) {
    ev += "id: ";
    ev += std::to_string(event_id);
    ev += '\n';
  }
  ev += "event: message\ndata: ";
  ev += payload;
  ev += "\n\n";
  responder_->Write(std::move(ev));
}

void McpExchange::FinishStream(bool close) {
  route_keys_.clear();
  if ((mode_ == Mode::kGetStream || mode_ == Mode::kResumed) && session_) {
    session_->sink->DetachStream(this);
  }
  mode_ = Mode::kDone;
  responder_->End(close);
}

void McpExchange::ScheduleKeepAlive() {
  if (ep_->opts().sse_keepalive_interval.count() <= 0) return;
  responder_->RunAfter(ep_->opts().sse_keepalive_interval, [self = shared_from_this()] {
    if (self->mode_ != Mode::kGetStream && self->mode_ != Mode::kResumed) return;
    self->responder_->Write(": keep-alive\n\n");
    self->ScheduleKeepAlive();
  });
}

// ---- HttpSink.

void HttpSink::Send(Json message, const Json& related_request_id) {
  if (related_request_id.is_null()) {  // for the standalone stream
    SendStandalone(protocol::Serialize(message));
    return;
  }
  const bool response = IsResponse(message);
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  auto it = routes_.find(related_request_id.dump());
  if (it != routes_.end()) {
    if (std::shared_ptr<McpExchange> ex = it->second.ex) {
      if (response) routes_.erase(it);
      // Posted under the lock, so in the order of the Send calls. Serialized on the
      // connection's I/O thread, not on the caller's (the engine executor, which every session
      // shares).
      ex->PostMessage(std::move(message), response);
      return;
    }
    // Its stream was closed by the engine: kept for the GET that resumes it.
    const uint64_t stream = it->second.stream;
    if (response) routes_.erase(it);
    std::string payload = protocol::Serialize(message);
    auto resumed = resumed_.find(stream);
    const uint64_t id = RecordLocked(stream, payload);
    if (resumed != resumed_.end()) resumed->second->PostEvent(id, std::move(payload));
    if (response) {
      auto owed = closed_pending_.find(stream);
      if (owed != closed_pending_.end() && --owed->second == 0) {
        closed_pending_.erase(owed);
        if (resumed != resumed_.end()) {
          resumed->second->PostStreamComplete();
          resumed_.erase(resumed);
        }
      }
    }
    return;
  }
  if (response) return;  // its POST is gone (client vanished or timed out): dropped
  // A notification of a request whose POST is gone goes to the standalone stream.
  StandaloneLocked(protocol::Serialize(message));
}

void HttpSink::CloseStream(const Json& related_request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  auto it = routes_.find(related_request_id.dump());
  if (it == routes_.end() || !it->second.ex || !it->second.sse) return;
  std::shared_ptr<McpExchange> ex = it->second.ex;
  size_t owed = 0;
  for (auto& [key, r] : routes_) {
    if (r.ex == ex) {
      r.ex.reset();
      ++owed;
    }
  }
  closed_pending_[it->second.stream] += owed;
  // The cursor the client resumes from precedes every answer kept for it.
  ex->PostServerClose(RecordLocked(it->second.stream, std::string()));
}

void HttpSink::SendStandalone(std::string payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  StandaloneLocked(std::move(payload));
}

void HttpSink::StandaloneLocked(std::string payload) {
  const uint64_t id = RecordLocked(0, standalone_ ? payload : std::move(payload));
  if (standalone_) standalone_->PostEvent(id, std::move(payload));
}

uint64_t HttpSink::RecordLocked(uint64_t stream, std::string payload) {
  const uint64_t id = ++next_event_id_;
  if (replay_max_ == 0) return id;
  replay_bytes_ += payload.size();
  replay_.push_back(Event{id, stream, std::move(payload)});
  while (replay_.size() > replay_max_ || replay_bytes_ > kMaxReplayBytes) {
    replay_bytes_ -= replay_.front().payload.size();
    replay_.pop_front();
  }
  return id;
}

HttpSink::AttachResult HttpSink::Attach(const std::shared_ptr<McpExchange>& ex,
                                        std::optional<uint64_t> last,
                                        std::vector<std::pair<uint64_t, std::string>>* replay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return AttachResult::kEnded;
  uint64_t stream = 0;
  if (last) {
    auto at =
        std::find_if(replay_.begin(), replay_.end(), [&](const Event& e) { return e.id == *last; });
    if (at != replay_.end()) stream = at->stream;
  }
  if (stream != 0) {
    const bool complete = closed_pending_.count(stream) == 0;
    if (!complete && resumed_.count(stream) > 0) return AttachResult::kConflict;
    for (const auto& e : replay_) {
      if (e.stream == stream && e.id > *last && !e.payload.empty()) {
        replay->emplace_back(e.id, e.payload);
      }
    }
    if (complete) return AttachResult::kResumedComplete;
    resumed_.emplace(stream, ex);
    return AttachResult::kResumed;
  }
  if (standalone_) return AttachResult::kConflict;
  standalone_ = ex;
  if (last) {
    for (const auto& e : replay_) {
      if (e.stream == 0 && e.id > *last) replay->emplace_back(e.id, e.payload);
    }
  }
  return AttachResult::kStandalone;
}

void HttpSink::DetachStream(const McpExchange* ex) {
  std::lock_guard<std::mutex> lock(mu_);
  if (standalone_.get() == ex) standalone_.reset();
  std::erase_if(resumed_, [ex](const auto& kv) { return kv.second.get() == ex; });
}

void HttpSink::Detach(bool notify) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  detached_ = true;
  if (notify) {
    for (auto& [key, r] : routes_) {
      if (r.ex) r.ex->PostSessionGone();
    }
    if (standalone_) standalone_->PostSessionGone();
    for (auto& [stream, ex] : resumed_) ex->PostSessionGone();
  }
  routes_.clear();
  standalone_.reset();
  resumed_.clear();
  closed_pending_.clear();
  replay_.clear();
  replay_bytes_ = 0;
}

// ---- McpEndpoint.

McpEndpoint::McpEndpoint(const HttpServerOptions& options,
                         std::shared_ptr<protocol::SessionFactory> factory)
    : opts_(options), factory_(std::move(factory)) {}

McpEndpoint::~McpEndpoint() = default;

HttpRoute McpEndpoint::Route() {
  HttpRoute r;
  r.name = "mcp";
  r.path = opts_.path;
  r.handler = [this](HttpRequest request, std::shared_ptr<HttpResponder> responder) {
    Handle(std::move(request), std::move(responder));
  };
  return r;
}

void McpEndpoint::Handle(HttpRequest request, std::shared_ptr<HttpResponder> responder) {
  std::make_shared<McpExchange>(this, std::move(responder))->Handle(std::move(request));
}

std::shared_ptr<SessionEntry> McpEndpoint::CreateSession(const std::string& tenant) {
  auto entry = std::make_shared<SessionEntry>();
  entry->id = base::RandomId("", 16);
  entry->tenant = tenant;
  entry->sink = std::make_shared<HttpSink>(opts_.replay_events);
  entry->last_active.store(NowNanos());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || sessions_.size() >= opts_.max_sessions) return nullptr;
    sessions_.emplace(entry->id, entry);
  }
  protocol::SessionInfo info;
  info.session_id = entry->id;
  info.tenant = tenant;
  info.transport = "http";
  entry->session = factory_->CreateSession(std::move(info), entry->sink);
  return entry;
}

std::shared_ptr<SessionEntry> McpEndpoint::FindSession(const std::string& id,
                                                       const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->tenant != tenant || !it->second->session) {
    return nullptr;
  }
  it->second->last_active.store(NowNanos(), std::memory_order_relaxed);
  return it->second;
}

bool McpEndpoint::CloseSession(const std::string& id, std::string_view reason,
                               std::function<void(const absl::Status&)> done) {
  std::shared_ptr<SessionEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    entry = std::move(it->second);
    sessions_.erase(it);
  }
  entry->sink->Detach(/*notify=*/true);
  if (done) {
    entry->session->CloseThen(reason, std::move(done));
  } else {
    entry->session->Close(reason);
  }
  return true;
}

bool McpEndpoint::VersionSupported(std::string_view v) const {
  return std::find(opts_.supported_protocol_versions.begin(),
                   opts_.supported_protocol_versions.end(),
                   v) != opts_.supported_protocol_versions.end();
}

uint64_t McpEndpoint::sessions_open() {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

void McpEndpoint::StartSweep(boost::asio::io_context& ioc) {
  sweep_timer_ = std::make_unique<boost::asio::steady_timer>(boost::asio::make_strand(ioc));
  ScheduleSweep();
}

void McpEndpoint::ScheduleSweep() {
  if (opts_.session_idle_timeout.count() <= 0) return;
  auto period = std::clamp<std::chrono::milliseconds>(opts_.session_idle_timeout / 4,
                                                      std::chrono::milliseconds(5),
                                                      std::chrono::milliseconds(10'000));
  sweep_timer_->expires_after(period);
  sweep_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    SweepIdleSessions();
    ScheduleSweep();
  });
}

void McpEndpoint::SweepIdleSessions() {
  const SteadyNanos limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.session_idle_timeout).count();
  const SteadyNanos now = NowNanos();
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, entry] : sessions_) {
      if (now - entry->last_active.load(std::memory_order_relaxed) < limit) continue;
      if (entry->sink->Busy()) continue;
      expired.push_back(id);
    }
  }
  for (const auto& id : expired) CloseSession(id, "idle timeout");
}

void McpEndpoint::BeginStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
}

void McpEndpoint::AfterThreadsStopped() {
  std::unordered_map<std::string, std::shared_ptr<SessionEntry>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions.swap(sessions_);
  }
  // No sink may post to the io_context once it is being destroyed.
  for (auto& [id, entry] : sessions) entry->sink->Detach(/*notify=*/false);
  for (auto& [id, entry] : sessions) {
    if (entry->session) entry->session->Close("server shutdown");
  }
  sweep_timer_.reset();
}

}  // namespace contextd::transport::internal
