#include "protocol/mcp_server.h"

#include <algorithm>
#include <exception>
#include <set>
#include <unordered_set>
#include <utility>

#include "protocol/internal/strings.h"
#include "protocol/json_schema.h"
#include "protocol/mcp_constants.h"

namespace contextd::protocol {

using internal::Cat;
using internal::Msg;

namespace {

constexpr size_t kMaxCompletionValues = 100;

const char* const kLevelNames[] = {"debug", "info",     "notice", "warning",
                                   "error", "critical", "alert",  "emergency"};

bool ValidToolName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Splits "test://template/{id}/data" into {"test://template/", "id", "/data"}.
absl::StatusOr<std::vector<std::string>> SplitTemplate(std::string_view tmpl) {
  std::vector<std::string> parts;
  std::string literal;
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] == '{') {
      size_t end = tmpl.find('}', i);
      if (end == std::string_view::npos || end == i + 1) {
        return absl::InvalidArgumentError(Cat("malformed uri template: ", tmpl));
      }
      if (!parts.empty() && parts.size() % 2 == 0 && literal.empty()) {
        return absl::InvalidArgumentError(
            Cat("uri template has adjacent variables: ", tmpl));
      }
      parts.push_back(std::move(literal));
      literal.clear();
      parts.emplace_back(tmpl.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (tmpl[i] == '}') {
      return absl::InvalidArgumentError(Cat("malformed uri template: ", tmpl));
    } else {
      literal.push_back(tmpl[i++]);
    }
  }
  parts.push_back(std::move(literal));
  return parts;
}

// Matches `uri` against split template `parts`; variables match one or more characters other
// than '/', up to the next literal.
bool MatchTemplate(const std::vector<std::string>& parts, std::string_view uri,
                   std::map<std::string, std::string>* vars) {
  size_t pos = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (i % 2 == 0) {
      if (uri.compare(pos, part.size(), part) != 0) return false;
      pos += part.size();
      continue;
    }
    const std::string& next = parts[i + 1];  // literal after the variable (may be empty)
    size_t end;
    if (next.empty()) {
      end = uri.find('/', pos);
      if (end == std::string_view::npos) end = uri.size();
    } else {
      end = uri.find(next, pos);
      if (end == std::string_view::npos) return false;
    }
    if (end == pos) return false;
    std::string_view value = uri.substr(pos, end - pos);
    if (value.find('/') != std::string_view::npos) return false;
    (*vars)[part] = std::string(value);
    pos = end;
  }
  return pos == uri.size();
}

std::string CompletionKey(std::string_view type, std::string_view ref, std::string_view arg) {
  return Cat(type, "\n", ref, "\n", arg);
}

// Runs `fn` now when on the executor, else posts it.
void RunOn(base::Executor& ex, std::function<void()> fn) {
  if (ex.InExecutor()) {
    fn();
  } else {
    ex.Post(std::move(fn));
  }
}

bool IsProgressToken(const Json& token) {
  return token.is_string() || token.is_number_integer();
}

const Json kNullId = nullptr;

// Runs a tool's ToolPrepare (if any) into `out`; what it threw, as an Internal status.
absl::Status RunPrepare(const ToolPrepare& prepare, const Json& arguments, std::any& out) {
  if (!prepare) return absl::OkStatus();
  try {
    out = prepare(arguments);
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
  return absl::OkStatus();
}

// The arguments object of a tools/call, or null when `params` has none usable (OnToolsCall
// answers those itself).
const Json* ToolCallArguments(const Json& params) {
  static const Json kNone = Json::object();
  auto a = params.find(wire::kArguments);
  if (a == params.end() || a->is_null()) return &kNone;
  return a->is_object() ? &*a : nullptr;
}

}  // namespace

const std::vector<std::string>& SupportedProtocolVersions() {
  static const auto* versions = new std::vector<std::string>{
      std::string(wire::kVersion2025_11_25), std::string(wire::kVersion2025_06_18),
      std::string(wire::kVersion2025_03_26)};
  return *versions;
}

std::string_view LoggingLevelName(LoggingLevel level) {
  return kLevelNames[static_cast<int>(level)];
}

std::optional<LoggingLevel> ParseLoggingLevel(std::string_view name) {
  for (int i = 0; i < 8; ++i) {
    if (name == kLevelNames[i]) return static_cast<LoggingLevel>(i);
  }
  return std::nullopt;
}

ToolResult TextResult(std::string text) {
  ToolResult r;
  Json block = Json::object();
  block[wire::kType] = wire::kTypeText;
  block[wire::kText] = std::move(text);
  r.content.push_back(std::move(block));
  return r;
}

ToolResult ErrorResult(std::string text) {
  ToolResult r = TextResult(std::move(text));
  r.is_error = true;
  return r;
}

Json ToolResultToJson(ToolResult result) {
  Json j = Json::object();
  j[wire::kContent] = result.content.is_array() ? std::move(result.content) : Json::array();
  if (!result.structured_content.is_null()) {
    j[wire::kStructuredContent] = std::move(result.structured_content);
  }
  if (result.is_error) j[wire::kIsError] = true;
  return j;
}

// ------------------------------------------------------------------------------------------------
// McpSession and ToolCallImpl

class ToolCallImpl;

class McpSession final : public Session, public std::enable_shared_from_this<McpSession> {
 public:
  McpSession(McpServer& server, SessionInfo info, std::shared_ptr<MessageSink> sink)
      : server_(server),
        executor_(server.executor_),
        info_(std::make_shared<const SessionInfo>(std::move(info))),
        sink_(std::move(sink)) {}

  ~McpSession() override;

  // A tools/call's arguments are checked against its tool's schema here, on the transport's
  // thread, rather than on the executor that runs every session's work in turn.
  void Receive(Message message) override {
    Prevalidated pre = Prevalidate(message);
    executor_.Post([self = shared_from_this(), m = std::move(message),
                    pre = std::move(pre)]() mutable { self->Handle(std::move(m), std::move(pre)); });
  }

  std::string protocol_version() const override {
    std::lock_guard<std::mutex> lock(version_mu_);
    return version_;
  }

  void Close(std::string_view reason) override {
    if (close_requested_.exchange(true)) return;
    RunOn(executor_, [self = shared_from_this(), r = std::string(reason)] { self->DoClose(r); });
  }

  void CloseThen(std::string_view reason,
                 std::function<void(const absl::Status&)> done) override {
    close_requested_.store(true);
    // DoClose does nothing for a session already closed; a Close still queued finds it closed.
    // Either way, what the hooks wrote is in the open group when the gate is asked.
    RunOn(executor_, [self = shared_from_this(), r = std::string(reason),
                      done = std::move(done)]() mutable {
      self->DoClose(r);
      OutboundGate* gate = self->server_.gate_;
      if (gate != nullptr && gate->Holding()) {
        gate->Hold(std::move(done));
      } else {
        done(absl::OkStatus());
      }
    });
  }

  // ---- Executor only.
  void Register() {
    server_.sessions_[this] = weak_from_this();
    SessionHooks hooks;
    {
      std::lock_guard<std::mutex> lock(server_.mu_);
      hooks = server_.hooks_;
    }
    if (hooks.on_open) hooks.on_open(*info_);
  }

  void Send(Json message, const Json& related) {
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

  // Sends a message the gate held. A response whose changes did not become durable is replaced
  // by an error: the client must not believe a change that was lost.
  void Deliver(const absl::Status& committed, Json message, const Json& related) {
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

  // Outside the outbound gate: messages it holds reach the sink after the close and are kept
  // for the client's resumption.
  void CloseStream(const Json& related) {
    if (!closed_) sink_->CloseStream(related);
  }

  bool initialized() const { return initialized_; }
  bool subscribed(const std::string& uri) const { return subscriptions_.count(uri) > 0; }

  void SendLog(LoggingLevel level, std::string_view logger, Json data, const Json& related) {
    if (closed_ || level < min_level_) return;
    Json params = Json::object();
    params[wire::kLevel] = LoggingLevelName(level);
    if (!logger.empty()) params[wire::kLogger] = logger;
    params[wire::kData] = std::move(data);
    Send(MakeNotification(wire::kNotifMessage, std::move(params)), related);
  }

  // Sends a server-to-client request; `callback` runs once on the executor.
  void SendRequest(std::string_view method, Json params, std::chrono::milliseconds timeout,
                   ResponseCallback callback, const Json& related,
                   const std::shared_ptr<ToolCallImpl>& call);

  // Called by ToolCallImpl::Finish on the executor.
  void FinishCall(const std::shared_ptr<ToolCallImpl>& call, ToolResult result);
  // Fails the pending requests of a cancelled call.
  void FailRequests(const std::vector<int64_t>& ids, const absl::Status& status);

 private:
  struct Pending {
    ResponseCallback callback;
    base::TimerId timer = 0;
    Json related;
    std::weak_ptr<ToolCallImpl> call;
  };

  // The outcome of validating a tools/call's arguments against `tool`'s input schema, and of
  // its ToolPrepare, found when the message arrived. OnToolsCall uses it only if it finds the
  // same tool entry (a tool replaced meanwhile is validated and prepared again); no tool:
  // nothing was checked.
  struct Prevalidated {
    std::shared_ptr<const McpServer::ToolEntry> tool;
    absl::Status status;
    // The tool's ToolPrepare result, when `status` is OK; prepare_status says if it threw.
    std::any prepared;
    absl::Status prepare_status;
  };
  // Any thread: reads `m` and the server's tool table only.
  Prevalidated Prevalidate(const Message& m) const;

  void Handle(Message m, Prevalidated pre = {});
  void HandleRequest(Message& m, Prevalidated& pre);
  void HandleNotification(Message& m);
  void HandleResponse(Message& m);
  void DoClose(const std::string& reason);
  void TimeoutRequest(int64_t id);

  void Reply(const Json& id, Json result) { Send(MakeResult(id, std::move(result)), id); }
  void ReplyError(const Json& id, int code, std::string_view message,
                  const Json& data = nullptr) {
    Send(MakeError(id, code, message, data), id);
  }

  void OnInitialize(Message& m);
  void OnToolsCall(Message& m, Prevalidated& pre);
  void OnResourcesRead(Message& m);
  void OnSubscribe(Message& m, bool subscribe);
  void OnPromptsGet(Message& m);
  void OnComplete(Message& m);
  void OnSetLevel(Message& m);
  void OnList(Message& m, std::string_view key, const Json& all);

  McpServer& server_;
  base::Executor& executor_;
  const std::shared_ptr<const SessionInfo> info_;
  const std::shared_ptr<MessageSink> sink_;
  std::atomic<bool> close_requested_{false};

  mutable std::mutex version_mu_;
  std::string version_;  // guarded by version_mu_ (written on the executor)

  // Executor only.
  bool closed_ = false;
  bool initialized_ = false;
  bool client_initialized_ = false;
  bool batches_allowed_ = false;
  Json client_capabilities_ = Json::object();
  Json client_info_;
  LoggingLevel min_level_ = LoggingLevel::kDebug;
  std::unordered_set<std::string> subscriptions_;
  std::map<Json, std::shared_ptr<ToolCallImpl>> calls_;
  std::unordered_map<int64_t, Pending> pending_;
  int64_t next_request_id_ = 1;
};

class ToolCallImpl final : public ToolCall, public std::enable_shared_from_this<ToolCallImpl> {
 public:
  ToolCallImpl(std::weak_ptr<McpSession> session, base::Executor& executor,
               std::shared_ptr<const SessionInfo> info, std::string tool_name, Json arguments,
               Json id, Json progress_token, std::chrono::milliseconds default_timeout,
               std::any prepared)
      : session_(std::move(session)),
        executor_(executor),
        info_(std::move(info)),
        tool_name_(std::move(tool_name)),
        arguments_(std::move(arguments)),
        id_(std::move(id)),
        progress_token_(std::move(progress_token)),
        default_timeout_(default_timeout),
        prepared_(std::move(prepared)) {}

  const std::string& tool_name() const override { return tool_name_; }
  const Json& arguments() const override { return arguments_; }
  const std::any& prepared() const override { return prepared_; }
  const SessionInfo& session() const override { return *info_; }
  const Json& request_id() const override { return id_; }
  bool has_progress_token() const override { return !progress_token_.is_null(); }
  bool cancelled() const override { return cancelled_.load(); }
  base::Executor& executor() override { return executor_; }

  void SendProgress(double progress, double total, std::string_view message) override {
    if (progress_token_.is_null()) return;
    Json params = Json::object();
    params[wire::kProgressToken] = progress_token_;
    params[wire::kProgress] = progress;
    if (total > 0) params[wire::kTotal] = total;
    if (!message.empty()) params[wire::kMessage] = message;
    RunOn(executor_, [self = shared_from_this(), p = std::move(params)]() mutable {
      // Tasks run in posting order, so progress sent before Finish still precedes the response.
      if (self->cancelled_ || self->responded_) return;
      if (auto s = self->session_.lock()) {
        s->Send(MakeNotification(wire::kNotifProgress, std::move(p)), self->id_);
      }
    });
  }

  void CloseStream() override {
    RunOn(executor_, [self = shared_from_this()] {
      if (self->cancelled_ || self->responded_) return;
      if (auto s = self->session_.lock()) s->CloseStream(self->id_);
    });
  }

  void Log(LoggingLevel level, std::string_view logger, Json data) override {
    RunOn(executor_, [self = shared_from_this(), level, l = std::string(logger),
                      d = std::move(data)]() mutable {
      if (self->cancelled_ || self->responded_) return;
      if (auto s = self->session_.lock()) s->SendLog(level, l, std::move(d), self->id_);
    });
  }

  void SendRequest(std::string_view method, Json params, std::chrono::milliseconds timeout,
                   ResponseCallback callback) override {
    if (timeout.count() <= 0) timeout = default_timeout_;
    RunOn(executor_, [self = shared_from_this(), m = std::string(method), p = std::move(params),
                      timeout, cb = std::move(callback)]() mutable {
      auto s = self->session_.lock();
      if (!s || self->cancelled_) {
        cb(absl::CancelledError(s ? "the tool call was cancelled" : "the session is closed"));
        return;
      }
      s->SendRequest(m, std::move(p), timeout, std::move(cb), self->id_, self);
    });
  }

  void OnCancelled(std::function<void()> fn) override {
    RunOn(executor_, [self = shared_from_this(), f = std::move(fn)]() mutable {
      if (self->cancelled_) {
        f();
      } else {
        self->on_cancel_.push_back(std::move(f));
      }
    });
  }

  void Finish(ToolResult result) override {
    if (finished_.exchange(true)) return;
    RunOn(executor_, [self = shared_from_this(), r = std::move(result)]() mutable {
      if (auto s = self->session_.lock()) s->FinishCall(self, std::move(r));
    });
  }

  // ---- Executor only.
  // Marks the call cancelled, runs the callbacks and fails its pending client requests.
  void Cancel(McpSession* session, const absl::Status& why) {
    if (cancelled_.exchange(true)) return;
    auto callbacks = std::move(on_cancel_);
    on_cancel_.clear();
    if (session != nullptr && !pending_.empty()) {
      auto ids = std::move(pending_);
      pending_.clear();
      session->FailRequests(ids, why);
    }
    for (auto& f : callbacks) f();
  }
  // Called when the response has been sent (or suppressed): nothing more goes out for the call.
  void MarkResponded() { responded_ = true; }
  void AddPending(int64_t id) { pending_.push_back(id); }
  void RemovePending(int64_t id) {
    pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
  }

 private:
  const std::weak_ptr<McpSession> session_;
  base::Executor& executor_;
  const std::shared_ptr<const SessionInfo> info_;
  const std::string tool_name_;
  const Json arguments_;
  const Json id_;
  const Json progress_token_;
  const std::chrono::milliseconds default_timeout_;
  const std::any prepared_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};
  std::vector<std::function<void()>> on_cancel_;  // executor only
  std::vector<int64_t> pending_;                  // executor only
  bool responded_ = false;                        // executor only
};

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
  server_.sessions_.erase(this);
  SessionHooks hooks;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    hooks = server_.hooks_;
  }
  if (hooks.on_close) hooks.on_close(*info_, reason);
}

McpSession::Prevalidated McpSession::Prevalidate(const Message& m) const {
  if (m.kind != MessageKind::kRequest || m.method != wire::kToolsCall || !m.params.is_object()) {
    return {};
  }
  auto name = m.params.find(wire::kName);
  if (name == m.params.end() || !name->is_string()) return {};
  const Json* arguments = ToolCallArguments(m.params);
  if (arguments == nullptr) return {};
  auto tool = server_.FindTool(name->get_ref<const std::string&>());
  if (!tool) return {};
  Prevalidated pre;
  pre.status = ValidateJson(tool->definition.input_schema, *arguments);
  if (pre.status.ok()) pre.prepare_status = RunPrepare(tool->prepare, *arguments, pre.prepared);
  pre.tool = std::move(tool);
  return pre;
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
    return;
  }
  if (m.method == wire::kNotifCancelled) {
    if (!m.params.is_object()) return;
    auto rid = m.params.find(wire::kRequestId);
    if (rid == m.params.end()) return;
    auto it = calls_.find(*rid);
    if (it == calls_.end()) return;  // finished already, or never ours: ignore (spec)
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
  p.callback(absl::UnknownError(Cat(
      "client returned error ", err.value(wire::kCode, 0), ": ",
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
    executor_.Post([cb = std::move(callback)] { cb(absl::CancelledError("the session is closed")); });
    return;
  }
  if (!capability.empty() && !client_capabilities_.contains(capability)) {
    executor_.Post([cb = std::move(callback), m = std::string(method), c = std::string(capability)] {
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

void McpSession::FinishCall(const std::shared_ptr<ToolCallImpl>& call, ToolResult result) {
  auto it = calls_.find(call->request_id());
  if (it != calls_.end() && it->second == call) calls_.erase(it);
  call->MarkResponded();
  if (call->cancelled() || closed_) return;  // a cancelled call is never answered
  Reply(call->request_id(), ToolResultToJson(std::move(result)));
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
  if (auto ci = m.params.find(wire::kClientInfo); ci != m.params.end()) client_info_ = std::move(*ci);

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

void McpSession::OnToolsCall(Message& m, Prevalidated& pre) {
  if (!m.params.is_object()) {
    ReplyError(m.id, kInvalidParams, "invalid params: tools/call needs a params object");
    return;
  }
  auto name = m.params.find(wire::kName);
  if (name == m.params.end() || !name->is_string()) {
    ReplyError(m.id, kInvalidParams, "invalid params: tools/call needs a string \"name\"");
    return;
  }
  const std::string& tool_name = name->get_ref<const std::string&>();
  auto tool = server_.FindTool(tool_name);
  if (!tool) {
    ReplyError(m.id, kInvalidParams, Cat("Unknown tool: ", tool_name));
    return;
  }
  Json arguments = Json::object();
  if (auto a = m.params.find(wire::kArguments); a != m.params.end() && !a->is_null()) {
    if (!a->is_object()) {
      ReplyError(m.id, kInvalidParams, "invalid params: tools/call \"arguments\" must be an object");
      return;
    }
    arguments = std::move(*a);
  }
  if (calls_.count(m.id) > 0) {
    ReplyError(m.id, kInvalidRequest, "invalid request: this request id is already in use");
    return;
  }
  const bool same_tool = pre.tool == tool;
  absl::Status valid = same_tool ? std::move(pre.status)
                                 : ValidateJson(tool->definition.input_schema, arguments);
  if (!valid.ok()) {
    Reply(m.id, ToolResultToJson(ErrorResult(Cat(
                    "invalid arguments for tool ", tool_name, ": ", valid.message()))));
    return;
  }
  std::any prepared;
  absl::Status prepare_status = same_tool ? std::move(pre.prepare_status)
                                          : RunPrepare(tool->prepare, arguments, prepared);
  if (same_tool) prepared = std::move(pre.prepared);
  if (!prepare_status.ok()) {
    Reply(m.id, ToolResultToJson(
                    ErrorResult(Cat("tool ", tool_name, " failed: ", prepare_status.message()))));
    return;
  }
  Json token = nullptr;
  if (auto meta = m.params.find(wire::kMeta); meta != m.params.end() && meta->is_object()) {
    if (auto t = meta->find(wire::kProgressToken); t != meta->end() && IsProgressToken(*t)) {
      token = *t;
    }
  }
  auto call = std::make_shared<ToolCallImpl>(weak_from_this(), executor_, info_, tool_name,
                                             std::move(arguments), m.id, std::move(token),
                                             server_.options_.request_timeout, std::move(prepared));
  calls_.emplace(m.id, call);
  try {
    tool->handler(call);
  } catch (const std::exception& e) {
    call->Finish(ErrorResult(Cat("tool ", tool_name, " failed: ", e.what())));
  } catch (...) {
    call->Finish(ErrorResult(Cat("tool ", tool_name, " failed")));
  }
}

void McpSession::OnResourcesRead(Message& m) {
  auto uri_it = m.params.is_object() ? m.params.find(wire::kUri) : m.params.end();
  if (!m.params.is_object() || uri_it == m.params.end() || !uri_it->is_string()) {
    ReplyError(m.id, kInvalidParams, "invalid params: resources/read needs a string \"uri\"");
    return;
  }
  ResourceRead read;
  read.uri = uri_it->get<std::string>();
  read.session = *info_;
  ResourceReader reader;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    for (const auto& r : server_.resources_) {
      if (r->definition.uri == read.uri) {
        reader = r->reader;
        break;
      }
    }
    if (!reader) {
      for (const auto& t : server_.templates_) {
        std::map<std::string, std::string> vars;
        if (MatchTemplate(t->parts, read.uri, &vars)) {
          reader = t->reader;
          read.variables = std::move(vars);
          break;
        }
      }
    }
  }
  if (!reader) {
    Json data = Json::object();
    data[wire::kUri] = read.uri;
    ReplyError(m.id, kResourceNotFound, "Resource not found", data);
    return;
  }
  auto once = std::make_shared<std::atomic<bool>>(false);
  ResourceDone done = [weak = weak_from_this(), ex = &executor_, id = m.id, uri = read.uri,
                       once](absl::StatusOr<Json> contents) {
    if (once->exchange(true)) return;
    RunOn(*ex, [weak, id, uri, c = std::move(contents)]() mutable {
      auto s = weak.lock();
      if (!s) return;
      if (!c.ok()) {
        if (absl::IsNotFound(c.status())) {
          Json data = Json::object();
          data[wire::kUri] = uri;
          s->ReplyError(id, kResourceNotFound, "Resource not found", data);
        } else {
          s->ReplyError(id, kInternalError, Msg(c.status()));
        }
        return;
      }
      Json result;
      if (c->is_object() && c->contains(wire::kContents)) {
        result = std::move(*c);
      } else {
        result = Json::object();
        result[wire::kContents] = c->is_array() ? std::move(*c) : Json::array();
      }
      s->Reply(id, std::move(result));
    });
  };
  try {
    reader(read, std::move(done));
  } catch (const std::exception& e) {
    ReplyError(m.id, kInternalError, Cat("reading ", read.uri, " failed: ", e.what()));
  }
}

void McpSession::OnSubscribe(Message& m, bool subscribe) {
  auto uri_it = m.params.is_object() ? m.params.find(wire::kUri) : m.params.end();
  if (!m.params.is_object() || uri_it == m.params.end() || !uri_it->is_string()) {
    ReplyError(m.id, kInvalidParams, Cat("invalid params: ", m.method,
                                                  " needs a string \"uri\""));
    return;
  }
  if (subscribe) {
    subscriptions_.insert(uri_it->get<std::string>());
  } else {
    subscriptions_.erase(uri_it->get<std::string>());
  }
  Reply(m.id, Json::object());
}

void McpSession::OnPromptsGet(Message& m) {
  auto name = m.params.is_object() ? m.params.find(wire::kName) : m.params.end();
  if (!m.params.is_object() || name == m.params.end() || !name->is_string()) {
    ReplyError(m.id, kInvalidParams, "invalid params: prompts/get needs a string \"name\"");
    return;
  }
  std::shared_ptr<const McpServer::PromptEntry> prompt;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    for (const auto& p : server_.prompts_) {
      if (p->definition.name == name->get_ref<const std::string&>()) prompt = p;
    }
  }
  if (!prompt) {
    ReplyError(m.id, kInvalidParams, Cat("Unknown prompt: ", name->get<std::string>()));
    return;
  }
  std::map<std::string, std::string> args;
  if (auto a = m.params.find(wire::kArguments); a != m.params.end() && !a->is_null()) {
    if (!a->is_object()) {
      ReplyError(m.id, kInvalidParams, "invalid params: prompt arguments must be an object");
      return;
    }
    for (const auto& [k, v] : a->items()) {
      if (!v.is_string()) {
        ReplyError(m.id, kInvalidParams,
                   Cat("invalid params: prompt argument '", k, "' must be a string"));
        return;
      }
      args[k] = v.get<std::string>();
    }
  }
  for (const auto& arg : prompt->definition.arguments) {
    if (arg.required && args.count(arg.name) == 0) {
      ReplyError(m.id, kInvalidParams,
                 Cat("invalid params: missing required argument '", arg.name,
                              "' of prompt ", prompt->definition.name));
      return;
    }
  }
  // Synchronous handlers call `done` before returning, so their reply is sent inline.
  auto once = std::make_shared<std::atomic<bool>>(false);
  PromptDone done = [weak = weak_from_this(), ex = &executor_, id = m.id,
                     once](absl::StatusOr<Json> result) {
    if (once->exchange(true)) return;
    RunOn(*ex, [weak, id, r = std::move(result)]() mutable {
      auto s = weak.lock();
      if (!s) return;
      if (!r.ok()) {
        const int code = absl::IsInvalidArgument(r.status()) ? kInvalidParams : kInternalError;
        s->ReplyError(id, code, Msg(r.status()));
        return;
      }
      s->Reply(id, std::move(*r));
    });
  };
  try {
    prompt->handler(args, *info_, done);
  } catch (const std::exception& e) {
    done(absl::InternalError(Cat("prompt failed: ", e.what())));
  } catch (...) {
    done(absl::InternalError("prompt handler threw"));
  }
}

void McpSession::OnComplete(Message& m) {
  if (!m.params.is_object()) {
    ReplyError(m.id, kInvalidParams, "invalid params: completion/complete needs a params object");
    return;
  }
  const Json& ref = m.params.contains(wire::kRef) ? m.params[wire::kRef] : kNullId;
  const Json& arg = m.params.contains(wire::kArgument) ? m.params[wire::kArgument] : kNullId;
  if (!ref.is_object() || !arg.is_object() || !ref.contains(wire::kType) ||
      !ref[wire::kType].is_string() || !arg.contains(wire::kName) ||
      !arg[wire::kName].is_string()) {
    ReplyError(m.id, kInvalidParams,
               "invalid params: completion/complete needs ref {type, name|uri} and argument "
               "{name, value}");
    return;
  }
  const std::string type = ref[wire::kType].get<std::string>();
  std::string target;
  if (type == wire::kRefPrompt) {
    target = ref.value(wire::kName, std::string());
  } else if (type == wire::kRefResource) {
    target = ref.value(wire::kUri, std::string());
  } else {
    ReplyError(m.id, kInvalidParams, Cat("invalid params: unknown ref type ", type));
    return;
  }
  const std::string value =
      arg.contains(wire::kValue) && arg[wire::kValue].is_string() ? arg[wire::kValue].get<std::string>()
                                                                   : std::string();
  std::map<std::string, std::string> context;
  if (auto c = m.params.find(wire::kContext); c != m.params.end() && c->is_object()) {
    if (auto a = c->find(wire::kArguments); a != c->end() && a->is_object()) {
      for (const auto& [k, v] : a->items()) {
        if (v.is_string()) context[k] = v.get<std::string>();
      }
    }
  }
  CompletionProvider provider;
  {
    std::lock_guard<std::mutex> lock(server_.mu_);
    auto it = server_.completions_.find(
        CompletionKey(type, target, arg[wire::kName].get_ref<const std::string&>()));
    if (it != server_.completions_.end()) provider = it->second;
  }
  std::vector<std::string> values;
  if (provider) values = provider(value, context);
  const size_t total = values.size();
  if (values.size() > kMaxCompletionValues) values.resize(kMaxCompletionValues);
  Json completion = Json::object();
  completion[wire::kValues] = values;
  completion[wire::kTotal] = total;
  completion[wire::kHasMore] = total > values.size();
  Json result = Json::object();
  result[wire::kCompletion] = std::move(completion);
  Reply(m.id, std::move(result));
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

absl::Status McpServer::AddTool(ToolDefinition definition, ToolHandler handler,
                                ToolPrepare prepare) {
  if (!ValidToolName(definition.name)) {
    return absl::InvalidArgumentError(Cat(
        "invalid tool name '", definition.name, "': use 1-128 characters of A-Z a-z 0-9 _ - ."));
  }
  if (!handler) return absl::InvalidArgumentError("a tool needs a handler");
  if (definition.input_schema.is_null()) {
    definition.input_schema = Json::object();
    definition.input_schema[wire::kType] = "object";
  }
  if (!definition.input_schema.is_object() ||
      definition.input_schema.value(wire::kType, std::string()) != "object") {
    return absl::InvalidArgumentError(
        Cat("tool ", definition.name, ": inputSchema must be an object schema"));
  }
  if (auto st = CheckSchema(definition.input_schema); !st.ok()) {
    return absl::InvalidArgumentError(
        Cat("tool ", definition.name, ": inputSchema: ", st.message()));
  }
  auto entry = std::make_shared<ToolEntry>();
  Json listing = Json::object();
  listing[wire::kName] = definition.name;
  if (!definition.title.empty()) listing[wire::kTitle] = definition.title;
  listing[wire::kDescription] = definition.description;
  listing[wire::kInputSchema] = definition.input_schema;
  if (!definition.output_schema.is_null()) listing[wire::kOutputSchema] = definition.output_schema;
  if (!definition.annotations.is_null()) listing[wire::kAnnotations] = definition.annotations;
  entry->listing = std::move(listing);
  entry->definition = std::move(definition);
  entry->handler = std::move(handler);
  entry->prepare = std::move(prepare);
  std::lock_guard<std::mutex> lock(mu_);
  if (tools_by_name_.count(entry->definition.name) > 0) {
    return absl::AlreadyExistsError(
        Cat("tool ", entry->definition.name, " is already registered"));
  }
  tools_by_name_[entry->definition.name] = entry;
  tools_.push_back(std::move(entry));
  tools_listing_.reset();
  return absl::OkStatus();
}

absl::Status McpServer::RemoveTool(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tools_by_name_.find(std::string(name));
  if (it == tools_by_name_.end()) {
    return absl::NotFoundError(Cat("no tool named ", name));
  }
  auto entry = it->second;
  tools_by_name_.erase(it);
  tools_.erase(std::remove(tools_.begin(), tools_.end(), entry), tools_.end());
  tools_listing_.reset();
  return absl::OkStatus();
}

absl::Status McpServer::AddResource(ResourceDefinition definition, ResourceReader reader) {
  if (definition.uri.empty() || definition.name.empty() || !reader) {
    return absl::InvalidArgumentError("a resource needs a uri, a name and a reader");
  }
  auto entry = std::make_shared<ResourceEntry>();
  Json listing = Json::object();
  listing[wire::kUri] = definition.uri;
  listing[wire::kName] = definition.name;
  if (!definition.title.empty()) listing[wire::kTitle] = definition.title;
  if (!definition.description.empty()) listing[wire::kDescription] = definition.description;
  if (!definition.mime_type.empty()) listing[wire::kMimeType] = definition.mime_type;
  entry->listing = std::move(listing);
  entry->definition = std::move(definition);
  entry->reader = std::move(reader);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : resources_) {
    if (r->definition.uri == entry->definition.uri) {
      return absl::AlreadyExistsError(
          Cat("resource ", entry->definition.uri, " is already registered"));
    }
  }
  resources_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status McpServer::AddResourceTemplate(ResourceTemplateDefinition definition,
                                            ResourceReader reader) {
  if (definition.uri_template.empty() || definition.name.empty() || !reader) {
    return absl::InvalidArgumentError("a resource template needs a uriTemplate, a name and a reader");
  }
  auto parts = SplitTemplate(definition.uri_template);
  if (!parts.ok()) return parts.status();
  auto entry = std::make_shared<TemplateEntry>();
  Json listing = Json::object();
  listing[wire::kUriTemplate] = definition.uri_template;
  listing[wire::kName] = definition.name;
  if (!definition.title.empty()) listing[wire::kTitle] = definition.title;
  if (!definition.description.empty()) listing[wire::kDescription] = definition.description;
  if (!definition.mime_type.empty()) listing[wire::kMimeType] = definition.mime_type;
  entry->listing = std::move(listing);
  entry->parts = std::move(*parts);
  entry->definition = std::move(definition);
  entry->reader = std::move(reader);
  std::lock_guard<std::mutex> lock(mu_);
  templates_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status McpServer::AddPrompt(PromptDefinition definition, PromptHandler handler) {
  if (!handler) return absl::InvalidArgumentError("a prompt needs a name and a handler");
  return AddAsyncPrompt(std::move(definition),
                        [handler = std::move(handler)](
                            const std::map<std::string, std::string>& arguments,
                            const SessionInfo& session, PromptDone done) {
                          done(handler(arguments, session));
                        });
}

absl::Status McpServer::AddAsyncPrompt(PromptDefinition definition, AsyncPromptHandler handler) {
  if (definition.name.empty() || !handler) {
    return absl::InvalidArgumentError("a prompt needs a name and a handler");
  }
  auto entry = std::make_shared<PromptEntry>();
  Json listing = Json::object();
  listing[wire::kName] = definition.name;
  if (!definition.title.empty()) listing[wire::kTitle] = definition.title;
  if (!definition.description.empty()) listing[wire::kDescription] = definition.description;
  if (!definition.arguments.empty()) {
    Json args = Json::array();
    for (const auto& a : definition.arguments) {
      Json arg = Json::object();
      arg[wire::kName] = a.name;
      if (!a.description.empty()) arg[wire::kDescription] = a.description;
      arg[wire::kRequired] = a.required;
      args.push_back(std::move(arg));
    }
    listing[wire::kArguments] = std::move(args);
  }
  entry->listing = std::move(listing);
  entry->definition = std::move(definition);
  entry->handler = std::move(handler);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : prompts_) {
    if (p->definition.name == entry->definition.name) {
      return absl::AlreadyExistsError(
          Cat("prompt ", entry->definition.name, " is already registered"));
    }
  }
  prompts_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status McpServer::RemovePrompt(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(prompts_.begin(), prompts_.end(),
                         [&](const auto& p) { return p->definition.name == name; });
  if (it == prompts_.end()) return absl::NotFoundError(Cat("no prompt named ", name));
  prompts_.erase(it);
  return absl::OkStatus();
}

absl::Status McpServer::RemoveResource(std::string_view uri) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(resources_.begin(), resources_.end(),
                         [&](const auto& r) { return r->definition.uri == uri; });
  if (it == resources_.end()) return absl::NotFoundError(Cat("no resource ", uri));
  resources_.erase(it);
  return absl::OkStatus();
}

absl::Status McpServer::RemoveResourceTemplate(std::string_view uri_template) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(templates_.begin(), templates_.end(), [&](const auto& t) {
    return t->definition.uri_template == uri_template;
  });
  if (it == templates_.end()) return absl::NotFoundError(Cat("no resource template ", uri_template));
  templates_.erase(it);
  return absl::OkStatus();
}

absl::Status McpServer::AddCompletion(std::string_view ref_type, std::string_view ref,
                                      std::string_view argument, CompletionProvider provider) {
  if ((ref_type != wire::kRefPrompt && ref_type != wire::kRefResource) || ref.empty() ||
      argument.empty() || !provider) {
    return absl::InvalidArgumentError(
        "a completion needs ref type ref/prompt or ref/resource, a ref, an argument and a provider");
  }
  std::lock_guard<std::mutex> lock(mu_);
  completions_[CompletionKey(ref_type, ref, argument)] = std::move(provider);
  return absl::OkStatus();
}

void McpServer::SetSessionHooks(SessionHooks hooks) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_ = std::move(hooks);
}

std::shared_ptr<const McpServer::ToolEntry> McpServer::FindTool(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tools_by_name_.find(std::string(name));
  return it == tools_by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<const Json> McpServer::ToolsListing() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tools_listing_) {
    auto all = std::make_shared<Json>(Json::array());
    for (const auto& t : tools_) all->push_back(t->listing);
    tools_listing_ = std::move(all);
  }
  return tools_listing_;
}

Json McpServer::ResourcesListing() const {
  std::lock_guard<std::mutex> lock(mu_);
  Json all = Json::array();
  for (const auto& r : resources_) all.push_back(r->listing);
  return all;
}

Json McpServer::TemplatesListing() const {
  std::lock_guard<std::mutex> lock(mu_);
  Json all = Json::array();
  for (const auto& t : templates_) all.push_back(t->listing);
  return all;
}

Json McpServer::PromptsListing() const {
  std::lock_guard<std::mutex> lock(mu_);
  Json all = Json::array();
  for (const auto& p : prompts_) all.push_back(p->listing);
  return all;
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
