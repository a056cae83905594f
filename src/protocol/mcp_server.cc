// McpServer and McpSession: the session lifecycle (initialize, close, hooks), JSON-RPC routing
// and the method table, the outbound path (the gate, logging, server-to-client requests with
// their timeouts and cancellation), paging, capabilities and broadcasts. The tools/call path is in
// tool_call.cc; resources, prompts and completion in resources_prompts.cc.
#include "protocol/mcp_server.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/internal/mcp_session.h"
#include "protocol/internal/strings.h"
#include "protocol/internal/tool_call_impl.h"
#include "protocol/mcp_constants.h"

namespace contextd::protocol {

using internal::Cat;
using internal::kNullId;
using internal::Msg;
using internal::RunOn;

const std::vector<std::string>& SupportedProtocolVersions() {
  static const auto* versions = new std::vector<std::string>{std::string(wire::kVersion2025_11_25),
                                                             std::string(wire::kVersion2025_06_18),
                                                             std::string(wire::kVersion2025_03_26)};
  return *versions;
}

// ------------------------------------------------------------------------------------------------
// McpSession: lifecycle, dispatch and the outbound path

void McpSession::Receive(Message message) {
  Prevalidated pre = Prevalidate(message);
  executor_.Post([self = shared_from_this(), m = std::move(message),
                  pre = std::move(pre)]() mutable { self->Handle(std::move(m), std::move(pre)); });
}

void McpSession::Close(std::string_view reason) {
  if (close_requested_.exchange(true)) return;
  RunOn(executor_, [self = shared_from_this(), r = std::string(reason)] { self->DoClose(r); });
}

void McpSession::CloseThen(std::string_view reason, std::function<void(const absl::Status&)> done) {
  close_requested_.store(true);
  // DoClose does nothing for a session already closed; a Close still queued finds it closed.
  // Either way, what the hooks wrote is in the open group when the gate is asked.
  RunOn(executor_,
        [self = shared_from_this(), r = std::string(reason), done = std::move(done)]() mutable {
          self->DoClose(r);
          OutboundGate* gate = self->server_.gate_;
          if (gate != nullptr && gate->Holding()) {
            gate->Hold(std::move(done));
          } else {
            done(absl::OkStatus());
          }
        });
}

void McpSession::Restore(const SessionResume& resume) {
  version_ = resume.protocol_version;
  initialized_ = true;
  client_initialized_ = true;  // it sent notifications/initialized to the other instance
  batches_allowed_ = version_ == wire::kVersion2025_03_26;
  if (resume.client_capabilities.is_object()) client_capabilities_ = resume.client_capabilities;
  client_info_ = resume.client_info;
  if (!info_->project.empty()) project_fixed_.store(true);
}

void McpSession::Register() {
  server_.sessions_[this] = weak_from_this();
  SessionHooks hooks;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    hooks = server_.hooks_;
  }
  if (hooks.on_open) hooks.on_open(*info_);
}

void McpSession::Send(Json message, const Json& related) {
  if (closed_) return;
  OutboundGate* gate = server_.gate_;
  if (gate != nullptr && gate->Holding()) {
    gate->Hold([self = shared_from_this(), m = std::move(message),
                r = related](const absl::Status& committed) mutable {
      self->Deliver(committed, std::move(m), r);
    });
    return;
  }
  sink_->Send(std::move(message), related);
}

void McpSession::Deliver(const absl::Status& committed, Json message, const Json& related) {
  if (closed_) return;
  if (!committed.ok() && message.contains(wire::kResult)) {
    auto id = message.find(wire::kId);
    message = MakeError(id != message.end() ? *id : Json(nullptr), kInternalError,
                        // The storage error itself (with the data file's path) goes to the
                        // server log, not to a client.
                        "contextd could not save this change (a storage error; see the server "
                        "log); it was not applied: retry");
  }
  sink_->Send(std::move(message), related);
}

void McpSession::CloseStream(const Json& related) {
  if (!closed_) sink_->CloseStream(related);
}

void McpSession::SendLog(LoggingLevel level, std::string_view logger, Json data,
                         const Json& related) {
  if (closed_ || level < min_level_) return;
  Json params = Json::object();
  params[wire::kLevel] = LoggingLevelName(level);
  if (!logger.empty()) params[wire::kLogger] = logger;
  params[wire::kData] = std::move(data);
  Send(MakeNotification(wire::kNotifMessage, std::move(params)), related);
}

McpSession::~McpSession() {
  if (closed_) return;
  // Dropped without Close(): unregister and tell the hooks, on the executor. The server outlives
  // its sessions (see McpServer), so capturing it is safe.
  McpServer* server = &server_;
  McpSession* key = this;
  auto info = info_;
  executor_.Post([server, key, info] {
    server->sessions_.erase(key);
    SessionHooks hooks;
    {
      std::lock_guard<std::mutex> lock(server->mu_);
      hooks = server->hooks_;
    }
    if (hooks.on_close) hooks.on_close(*info, "session dropped");
  });
}

void McpSession::DoClose(const std::string& reason) {
  if (closed_) return;
  // From here on nothing reaches the sink: answers of cancelled calls and cancellation notices
  // for pending client requests are dropped with the session.
  closed_ = true;
  const absl::Status why = absl::CancelledError(Cat("session closed: ", reason));
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& [id, call] : calls) call->Cancel(this, why);
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    executor_.CancelTimer(p.timer);
    p.callback(why);
  }
  if (roots_timer_ != 0) executor_.CancelTimer(roots_timer_);
  held_.clear();  // never answered: the session is gone
  server_.sessions_.erase(this);
  SessionHooks hooks;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    hooks = server_.hooks_;
  }
  if (hooks.on_close) hooks.on_close(*info_, reason);
}

bool McpSession::NeedsProject(const std::string& method) const {
  if (!server_.project_resolver_ || project_fixed_.load()) return false;
  return method == wire::kToolsCall || method == wire::kResourcesRead ||
         method == wire::kPromptsGet;
}

void McpSession::HoldForProject(Message m, Prevalidated pre) {
  const Json related = m.id;
  held_.emplace_back(std::move(m), std::move(pre));
  if (waiting_for_roots_) return;
  if (roots_answered_ || !client_capabilities_.contains(wire::kCapRoots)) {
    FixProject();
    return;
  }
  waiting_for_roots_ = true;
  // Asked on this request's stream, which is open while the client waits for its answer.
  AskRoots(related);
  roots_timer_ = executor_.PostAfter(server_.options_.roots_wait, [weak = weak_from_this()] {
    if (auto s = weak.lock()) {
      s->roots_timer_ = 0;
      s->FixProject();
    }
  });
}

void McpSession::AskRoots(const Json& related) {
  SendRequest(
      wire::kRootsList, Json::object(), server_.options_.request_timeout,
      [weak = weak_from_this()](absl::StatusOr<Json> answer) {
        if (auto s = weak.lock()) s->OnRoots(answer);
      },
      related, nullptr);
}

void McpSession::OnRoots(const absl::StatusOr<Json>& answer) {
  if (project_fixed_.load() || closed_) return;
  roots_answered_ = true;
  roots_ = nullptr;
  if (answer.ok() && answer->is_object()) {
    if (auto r = answer->find(wire::kRoots); r != answer->end() && r->is_array()) roots_ = *r;
  }
  if (waiting_for_roots_) FixProject();
}

void McpSession::FixProject() {
  if (project_fixed_.load() || closed_) return;
  if (roots_timer_ != 0) {
    executor_.CancelTimer(roots_timer_);
    roots_timer_ = 0;
  }
  waiting_for_roots_ = false;
  auto fixed = std::make_shared<SessionInfo>(*info_);
  try {
    server_.project_resolver_(roots_answered_ ? roots_ : Json(nullptr), *fixed);
  } catch (...) {
    // A resolver must not throw; if it does, the session stays in the default project.
    fixed->project.clear();
  }
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    info_ = std::move(fixed);
  }
  project_fixed_.store(true);
  auto held = std::move(held_);
  held_.clear();
  for (auto& [m, pre] : held) {
    if (closed_) return;
    HandleRequest(m, pre);
  }
}

void McpSession::Handle(Message m, Prevalidated pre) {
  if (closed_) return;
  switch (m.kind) {
    case MessageKind::kRequest:
      if (m.batched && !batches_allowed_) {
        ReplyError(m.id, kInvalidRequest,
                   Cat("invalid request: JSON-RPC batches are not supported by protocol "
                       "version ",
                       initialized_ ? version_ : std::string("(not initialized)"),
                       "; send one message per payload"));
        return;
      }
      HandleRequest(m, pre);
      return;
    case MessageKind::kNotification:
      if (m.batched && !batches_allowed_) return;
      HandleNotification(m);
      return;
    case MessageKind::kResponse:
    case MessageKind::kErrorResponse:
      HandleResponse(m);
      return;
  }
}

void McpSession::HandleRequest(Message& m, Prevalidated& pre) {
  const std::string& method = m.method;
  if (method == wire::kInitialize) {
    OnInitialize(m);
    return;
  }
  if (method == wire::kPing) {
    Reply(m.id, Json::object());
    return;
  }
  if (!initialized_) {
    ReplyError(m.id, kInvalidRequest,
               Cat("invalid request: ", method,
                   " received before initialize; the session is not initialized"));
    return;
  }
  if (NeedsProject(method)) {
    HoldForProject(std::move(m), std::move(pre));
    return;
  }
  if (method == wire::kToolsCall) {
    OnToolsCall(m, pre);
  } else if (method == wire::kToolsList) {
    const std::shared_ptr<const Json> tools = server_.ToolsListing();
    OnList(m, wire::kTools, *tools);
  } else if (method == wire::kResourcesList) {
    OnList(m, wire::kResources, server_.ResourcesListing());
  } else if (method == wire::kResourcesTemplatesList) {
    OnList(m, wire::kResourceTemplates, server_.TemplatesListing());
  } else if (method == wire::kResourcesRead) {
    OnResourcesRead(m);
  } else if (method == wire::kResourcesSubscribe) {
    OnSubscribe(m, true);
  } else if (method == wire::kResourcesUnsubscribe) {
    OnSubscribe(m, false);
  } else if (method == wire::kPromptsList) {
    OnList(m, wire::kPrompts, server_.PromptsListing());
  } else if (method == wire::kPromptsGet) {
    OnPromptsGet(m);
  } else if (method == wire::kCompletionComplete) {
    OnComplete(m);
  } else if (method == wire::kLoggingSetLevel) {
    OnSetLevel(m);
  } else {
    ReplyError(m.id, kMethodNotFound, Cat("method not found: ", method));
  }
}

void McpSession::HandleNotification(Message& m) {
  if (m.method == wire::kNotifInitialized) {
    client_initialized_ = true;
    // Asked now so that the answer is usually there before the first tool call; that call asks
    // again on its own stream if it is not (this one travels on the standalone stream, which a
    // Streamable HTTP client may not have opened yet).
    if (server_.project_resolver_ && client_capabilities_.contains(wire::kCapRoots) &&
        !project_fixed_.load()) {
      AskRoots(kNullId);
    }
    return;
  }
  if (m.method == wire::kNotifRootsListChanged) {
    // A session keeps the project it was fixed with (decision 0022): roots that change later
    // are not asked for.
    if (server_.project_resolver_ && client_capabilities_.contains(wire::kCapRoots) &&
        !project_fixed_.load()) {
      AskRoots(kNullId);
    }
    return;
  }
  if (m.method == wire::kNotifCancelled) {
    if (!m.params.is_object()) return;
    auto rid = m.params.find(wire::kRequestId);
    if (rid == m.params.end()) return;
    auto it = calls_.find(*rid);
    if (it == calls_.end()) {
      // Still held for the project: never run it (a cancelled request is not answered).
      std::erase_if(held_, [&](const auto& h) { return h.first.id == *rid; });
      return;  // finished already, or never ours: ignore (spec)
    }
    auto call = std::move(it->second);
    calls_.erase(it);
    std::string reason = "cancelled by the client";
    if (auto r = m.params.find(wire::kReason); r != m.params.end() && r->is_string()) {
      reason = Cat(reason, ": ", r->get<std::string>());
    }
    call->Cancel(this, absl::CancelledError(reason));
    return;
  }
  // Other notifications (progress, roots/list_changed, ...) need no action here.
}

void McpSession::HandleResponse(Message& m) {
  if (!m.id.is_number_integer()) return;  // our ids are integers; anything else is not ours
  auto it = pending_.find(m.id.get<int64_t>());
  if (it == pending_.end()) return;  // unknown or timed out: ignore
  Pending p = std::move(it->second);
  pending_.erase(it);
  executor_.CancelTimer(p.timer);
  if (auto call = p.call.lock()) call->RemovePending(m.id.get<int64_t>());
  if (m.kind == MessageKind::kResponse) {
    p.callback(std::move(m.result));
    return;
  }
  const Json& err = m.error;
  p.callback(absl::UnknownError(Cat("client returned error ", err.value(wire::kCode, 0), ": ",
                                    err.value(wire::kMessage, std::string()))));
}

void McpSession::SendRequest(std::string_view method, Json params,
                             std::chrono::milliseconds timeout, ResponseCallback callback,
                             const Json& related, const std::shared_ptr<ToolCallImpl>& call) {
  std::string_view capability;
  if (method == wire::kSamplingCreateMessage) {
    capability = wire::kCapSampling;
  } else if (method == wire::kElicitationCreate) {
    capability = wire::kCapElicitation;
  } else if (method == wire::kRootsList) {
    capability = wire::kCapRoots;
  }
  if (closed_) {
    executor_.Post(
        [cb = std::move(callback)] { cb(absl::CancelledError("the session is closed")); });
    return;
  }
  if (!capability.empty() && !client_capabilities_.contains(capability)) {
    executor_.Post(
        [cb = std::move(callback), m = std::string(method), c = std::string(capability)] {
          cb(absl::FailedPreconditionError(
              Cat("the client did not declare the '", c, "' capability needed for ", m)));
        });
    return;
  }
  const int64_t id = next_request_id_++;
  Pending p;
  p.callback = std::move(callback);
  p.related = related;
  p.call = call;
  p.timer = executor_.PostAfter(timeout, [weak = weak_from_this(), id] {
    if (auto s = weak.lock()) s->TimeoutRequest(id);
  });
  pending_.emplace(id, std::move(p));
  if (call) call->AddPending(id);
  Send(MakeRequest(id, method, std::move(params)), related);
}

void McpSession::TimeoutRequest(int64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (auto call = p.call.lock()) call->RemovePending(id);
  Json params = Json::object();
  params[wire::kRequestId] = id;
  params[wire::kReason] = "timeout";
  Send(MakeNotification(wire::kNotifCancelled, std::move(params)), p.related);
  p.callback(absl::DeadlineExceededError("the client did not answer in time"));
}

void McpSession::FailRequests(const std::vector<int64_t>& ids, const absl::Status& status) {
  for (int64_t id : ids) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    executor_.CancelTimer(p.timer);
    if (!closed_) {
      Json params = Json::object();
      params[wire::kRequestId] = id;
      params[wire::kReason] = Msg(status);
      Send(MakeNotification(wire::kNotifCancelled, std::move(params)), p.related);
    }
    p.callback(status);
  }
}

void McpSession::OnInitialize(Message& m) {
  if (m.batched) {
    ReplyError(m.id, kInvalidRequest, "invalid request: initialize must not be part of a batch");
    return;
  }
  if (initialized_) {
    ReplyError(m.id, kInvalidRequest,
               "invalid request: the session is already initialized; initialize may be sent "
               "once per session");
    return;
  }
  if (!m.params.is_object()) {
    ReplyError(m.id, kInvalidParams, "invalid params: initialize needs a params object");
    return;
  }
  auto requested = m.params.find(wire::kProtocolVersion);
  if (requested == m.params.end() || !requested->is_string()) {
    ReplyError(m.id, kInvalidParams, "invalid params: protocolVersion must be a string");
    return;
  }
  std::string version(wire::kLatestVersion);
  for (const auto& v : SupportedProtocolVersions()) {
    if (v == requested->get_ref<const std::string&>()) version = v;
  }
  if (auto caps = m.params.find(wire::kCapabilities); caps != m.params.end() && caps->is_object()) {
    client_capabilities_ = std::move(*caps);
  }
  if (auto ci = m.params.find(wire::kClientInfo); ci != m.params.end())
    client_info_ = std::move(*ci);

  Json result = Json::object();
  result[wire::kProtocolVersion] = version;
  result[wire::kCapabilities] = server_.Capabilities();
  Json server_info = Json::object();
  server_info[wire::kName] = server_.info_.name;
  server_info[wire::kVersion] = server_.info_.version;
  result[wire::kServerInfo] = std::move(server_info);
  if (!server_.info_.instructions.empty()) {
    result[wire::kInstructions] = server_.info_.instructions;
  }
  SessionHooks hooks;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    hooks = server_.hooks_;
  }
  if (hooks.on_initialized) {
    SessionResume resume;
    resume.protocol_version = version;
    resume.client_capabilities = client_capabilities_;
    resume.client_info = client_info_;
    absl::Status saved = hooks.on_initialized(*Info(), resume);
    if (!saved.ok()) {
      // The storage error itself goes to the server log (the hook's job), not to a client.
      ReplyError(m.id, kInternalError,
                 "contextd could not save the new session (a storage error; see the server "
                 "log): retry initialize");
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(version_mu_);
    version_ = version;
  }
  initialized_ = true;
  batches_allowed_ = version == wire::kVersion2025_03_26;
  Reply(m.id, std::move(result));
}

void McpSession::OnList(Message& m, std::string_view key, const Json& all) {
  auto page = server_.Page(m.params, key, all);
  if (!page.ok()) {
    ReplyError(m.id, kInvalidParams, Msg(page.status()));
    return;
  }
  Reply(m.id, std::move(*page));
}

void McpSession::OnSetLevel(Message& m) {
  std::optional<LoggingLevel> level;
  if (m.params.is_object()) {
    if (auto l = m.params.find(wire::kLevel); l != m.params.end() && l->is_string()) {
      level = ParseLoggingLevel(l->get_ref<const std::string&>());
    }
  }
  if (!level) {
    ReplyError(m.id, kInvalidParams,
               "invalid params: level must be one of debug, info, notice, warning, error, "
               "critical, alert, emergency");
    return;
  }
  min_level_ = *level;
  Reply(m.id, Json::object());
}

// ------------------------------------------------------------------------------------------------
// McpServer

namespace {
ServerOptions Normalized(ServerOptions options) {
  if (options.page_size == 0) options.page_size = 100;
  if (options.request_timeout.count() <= 0) options.request_timeout = std::chrono::seconds(60);
  return options;
}
}  // namespace

McpServer::McpServer(base::Executor& executor, ServerInfo info, ServerOptions options)
    : executor_(executor), info_(std::move(info)), options_(Normalized(options)) {}

McpServer::~McpServer() = default;

void McpServer::SetSessionHooks(SessionHooks hooks) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_ = std::move(hooks);
}

absl::StatusOr<Json> McpServer::Page(const Json& params, std::string_view key,
                                     const Json& all) const {
  size_t offset = 0;
  if (params.is_object()) {
    if (auto c = params.find(wire::kCursor); c != params.end() && !c->is_null()) {
      // Cursors are "p" followed by the decimal offset of the next item; opaque to clients.
      const bool ok_shape = c->is_string() && c->get_ref<const std::string&>().size() >= 2 &&
                            c->get_ref<const std::string&>().size() <= 12 &&
                            c->get_ref<const std::string&>()[0] == 'p';
      bool ok = ok_shape;
      if (ok) {
        const std::string& s = c->get_ref<const std::string&>();
        for (size_t i = 1; i < s.size(); ++i) ok = ok && s[i] >= '0' && s[i] <= '9';
        if (ok) offset = std::stoul(s.substr(1));
      }
      if (!ok || offset > all.size()) {
        return absl::InvalidArgumentError("invalid params: invalid or expired cursor");
      }
    }
  }
  const size_t end = std::min(all.size(), offset + options_.page_size);
  Json page = Json::array();
  for (size_t i = offset; i < end; ++i) page.push_back(all[i]);
  Json result = Json::object();
  result[key] = std::move(page);
  if (end < all.size()) result[wire::kNextCursor] = Cat("p", end);
  return result;
}

Json McpServer::Capabilities() const {
  std::lock_guard<std::mutex> lock(mu_);
  Json caps = Json::object();
  if (!tools_.empty()) {
    Json tools = Json::object();
    tools[wire::kListChanged] = true;
    caps[wire::kCapTools] = std::move(tools);
  }
  if (!resources_.empty() || !templates_.empty()) {
    Json resources = Json::object();
    resources[wire::kSubscribe] = true;
    resources[wire::kListChanged] = true;
    caps[wire::kCapResources] = std::move(resources);
  }
  if (!prompts_.empty()) {
    Json prompts = Json::object();
    prompts[wire::kListChanged] = true;
    caps[wire::kCapPrompts] = std::move(prompts);
  }
  caps[wire::kCapLogging] = Json::object();
  if (!completions_.empty()) caps[wire::kCapCompletions] = Json::object();
  return caps;
}

std::shared_ptr<Session> McpServer::CreateSession(SessionInfo info,
                                                  std::shared_ptr<MessageSink> sink) {
  auto session = std::make_shared<McpSession>(*this, std::move(info), std::move(sink));
  RunOn(executor_, [session] { session->Register(); });
  return session;
}

std::shared_ptr<Session> McpServer::ResumeSession(SessionInfo info, const SessionResume& resume,
                                                  std::shared_ptr<MessageSink> sink) {
  auto session = std::make_shared<McpSession>(*this, std::move(info), std::move(sink));
  session->Restore(resume);
  RunOn(executor_, [session] { session->Register(); });
  return session;
}

void McpServer::Broadcast(std::string_view method, Json params) {
  RunOn(executor_, [this, m = std::string(method), p = std::move(params)] {
    const Json message = MakeNotification(m, p);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto s = it->second.lock();
      if (!s) {
        it = sessions_.erase(it);
        continue;
      }
      if (s->initialized()) s->Send(message, kNullId);
      ++it;
    }
  });
}

void McpServer::NotifyToolsListChanged() { Broadcast(wire::kNotifToolsListChanged, nullptr); }
void McpServer::NotifyResourcesListChanged() {
  Broadcast(wire::kNotifResourcesListChanged, nullptr);
}
void McpServer::NotifyPromptsListChanged() { Broadcast(wire::kNotifPromptsListChanged, nullptr); }

void McpServer::NotifyResourceUpdated(std::string_view uri) {
  RunOn(executor_, [this, u = std::string(uri)] {
    Json params = Json::object();
    params[wire::kUri] = u;
    const Json message = MakeNotification(wire::kNotifResourcesUpdated, std::move(params));
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto s = it->second.lock();
      if (!s) {
        it = sessions_.erase(it);
        continue;
      }
      if (s->initialized() && s->subscribed(u)) s->Send(message, kNullId);
      ++it;
    }
  });
}

}  // namespace contextd::protocol
