#include "transport/internal/mcp_endpoint.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "base/foreign_text.h"
#include "base/ids.h"
#include "base/logging.h"
#include "boost/asio/strand.hpp"
#include "transport/internal/http_util.h"
#include "transport/internal/mcp_session.h"
#include "transport/internal/message_shape.h"

namespace contextd::transport::internal {

using protocol::Json;

namespace {

SteadyNanos NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr std::string_view kEventStream = "text/event-stream";

// Shared sessions: lookups in flight at once, and unknown ids remembered.
constexpr int kMaxLookupsInFlight = 32;
constexpr size_t kUnknownRemembered = 4096;

// The shape of the ids CreateSession issues (base::RandomId of 16 bytes: 32 lowercase hex
// characters). Anything else is not looked up.
bool LooksLikeSessionId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

// ---- McpExchange.

void McpExchange::Handle(HttpRequest req) {
  const std::string_view m = req.method();
  if (ep_->shared() && (m == "POST" || m == "GET" || m == "DELETE") &&
      !req.Header("Mcp-Session-Id").empty()) {
    auto held = std::make_shared<HttpRequest>(std::move(req));
    const auto state = ep_->Revalidate(std::string(held->Header("Mcp-Session-Id")), held->tenant(),
                                       [self = shared_from_this(), held](bool answered) {
                                         self->responder_->Post([self, held, answered] {
                                           if (!answered) {
                                             return self->RespondError(
                                                 503, "the session store does not answer; retry");
                                           }
                                           self->Dispatch(*held);
                                         });
                                       });
    if (state == McpEndpoint::Revalidation::kBusy) {
      return RespondError(503, "too many session lookups in flight; retry");
    }
    if (state == McpEndpoint::Revalidation::kReady) Dispatch(*held);
    return;
  }
  Dispatch(req);
}

void McpExchange::Dispatch(HttpRequest& req) {
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
  std::string_view v = req.Header("MCP-Protocol-Version");
  if (v.empty() && !req.HasHeader("MCP-Protocol-Version")) return true;  // absent: 2025-03-26
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
    std::string_view project = req.Header("X-Contextd-Project");
    if (!project.empty() && !protocol::ValidProjectHeader(project)) {
      return RespondError(400,
                          "bad request: X-Contextd-Project must be an absolute path or an id of "
                          "1-128 characters from [A-Za-z0-9._:-]");
    }
    entry = ep_->CreateSession(req.tenant(), std::string(project));
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
      std::string key = base::DumpJson(msg.id);
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
      entry->id, kCloseDeleted, [self = shared_from_this()](const absl::Status& ended) {
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

std::shared_ptr<SessionEntry> McpEndpoint::CreateSession(const std::string& tenant,
                                                         std::string project_header) {
  auto entry = std::make_shared<SessionEntry>();
  entry->id = base::RandomId("", 16);
  entry->tenant = tenant;
  entry->sink = std::make_shared<HttpSink>(opts_.replay_events);
  entry->last_active.store(NowNanos());
  entry->last_synced.store(NowNanos());  // initialize writes its record
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || sessions_.size() >= opts_.max_sessions) return nullptr;
    sessions_.emplace(entry->id, entry);
  }
  protocol::SessionInfo info;
  info.session_id = entry->id;
  info.tenant = tenant;
  info.transport = "http";
  info.project_header = std::move(project_header);
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

McpEndpoint::Revalidation McpEndpoint::Revalidate(const std::string& id, const std::string& tenant,
                                                  std::function<void(bool)> then) {
  SessionDirectory& directory = *opts_.session_directory;
  const SteadyNanos now = NowNanos();
  const SteadyNanos interval =
      std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.session_sync_interval).count();
  std::shared_ptr<SessionEntry> entry;
  const std::string key = tenant + "\n" + id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      entry = it->second;
    } else {
      if (!LooksLikeSessionId(id) || unknown_.count(key) > 0 || stopping_) {
        return Revalidation::kReady;  // answered 404 by the handler
      }
      if (lookups_in_flight_ >= kMaxLookupsInFlight) return Revalidation::kBusy;
      ++lookups_in_flight_;
    }
  }
  if (entry) {
    if (entry->tenant != tenant) return Revalidation::kReady;  // 404
    // Throttled: at most one write per session and interval, and the answer says whether the
    // session ended on another instance (DELETE there, or idle everywhere).
    const SteadyNanos synced = entry->last_synced.load(std::memory_order_relaxed);
    if (now - synced < interval) return Revalidation::kReady;
    entry->last_synced.store(now, std::memory_order_relaxed);
    directory.Touch(
        {id}, [this, id, then = std::move(then)](absl::StatusOr<std::vector<std::string>> open) {
          // A store error: serve from what this instance holds (the next request asks again).
          if (open.ok() && open->empty()) CloseSession(id, kCloseEndedElsewhere);
          then(true);
        });
    return Revalidation::kPending;
  }
  directory.Lookup(id, tenant,
                   [this, key, then = std::move(then)](
                       absl::StatusOr<std::optional<SessionDirectory::Found>> found) {
                     {
                       std::lock_guard<std::mutex> lock(mu_);
                       --lookups_in_flight_;
                     }
                     if (!found.ok()) {
                       base::LogWarn(std::string("session lookup failed: ") +
                                     std::string(found.status().message()));
                       return then(false);
                     }
                     if (!found->has_value()) {
                       RememberUnknown(key);
                     } else {
                       AdoptSession(std::move(**found));
                     }
                     then(true);
                   });
  return Revalidation::kPending;
}

void McpEndpoint::RememberUnknown(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!unknown_.insert(key).second) return;
  unknown_order_.push_back(key);
  if (unknown_order_.size() > kUnknownRemembered) {
    unknown_.erase(unknown_order_.front());
    unknown_order_.pop_front();
  }
}

void McpEndpoint::AdoptSession(SessionDirectory::Found found) {
  auto entry = std::make_shared<SessionEntry>();
  entry->id = found.info.session_id;
  entry->tenant = found.info.tenant;
  entry->sink = std::make_shared<HttpSink>(opts_.replay_events);
  const SteadyNanos now = NowNanos();
  entry->last_active.store(now);
  entry->last_synced.store(now);  // the lookup just read it open
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || sessions_.size() >= opts_.max_sessions) return;
    if (!sessions_.emplace(entry->id, entry).second) return;  // resumed by a concurrent request
    // Created under the lock: a concurrent FindSession must not see it without its session.
    found.info.transport = "http";
    entry->session = factory_->ResumeSession(std::move(found.info), found.resume, entry->sink);
  }
  if (!entry->session) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(entry->id);
    return;
  }
  base::LogInfo("session " + entry->id + " (tenant " + entry->tenant +
                ") continued from the shared store");
}

void McpEndpoint::SyncSessions() {
  std::vector<std::string> ids;
  const SteadyNanos now = NowNanos();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, entry] : sessions_) {
      const SteadyNanos synced = entry->last_synced.load(std::memory_order_relaxed);
      if (entry->last_active.load(std::memory_order_relaxed) <= synced && !entry->sink->Busy()) {
        continue;
      }
      entry->last_synced.store(now, std::memory_order_relaxed);
      ids.push_back(id);
    }
  }
  if (ids.empty()) return;
  opts_.session_directory->Touch(ids, [this, ids](absl::StatusOr<std::vector<std::string>> open) {
    if (!open.ok()) return;
    std::unordered_set<std::string> still(open->begin(), open->end());
    for (const auto& id : ids) {
      if (still.count(id) == 0) CloseSession(id, kCloseEndedElsewhere);
    }
  });
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
  if (shared()) {
    // Sessions with an open stream and no requests keep their shared last-seen time current.
    period = std::min(period, std::max<std::chrono::milliseconds>(opts_.session_sync_interval,
                                                                  std::chrono::milliseconds(500)));
  }
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
  for (const auto& id : expired) CloseSession(id, kCloseIdle);
  if (shared()) SyncSessions();
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
    if (entry->session) entry->session->Close(kCloseShutdown);
  }
  sweep_timer_.reset();
}

}  // namespace contextd::transport::internal
