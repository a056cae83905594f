// The tools side of the engine: tool results, the logging levels a call logs at, ToolCallImpl
// (progress, logging, server-to-client requests, cancellation, Finish), the tools/call path of
// McpSession (validating and preparing arguments on receipt, running the handler, answering) and
// McpServer's tool registry and tools/list listing.
#include "protocol/tool_call.h"

#include <any>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/internal/mcp_session.h"
#include "protocol/internal/strings.h"
#include "protocol/internal/tool_call_impl.h"
#include "protocol/json_schema.h"
#include "protocol/mcp_constants.h"
#include "protocol/mcp_server.h"

namespace contextd::protocol {

using internal::Cat;
using internal::RunOn;

namespace {

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

bool IsProgressToken(const Json& token) { return token.is_string() || token.is_number_integer(); }

// Runs a tool's ToolPrepare (if any) into `out`; what it threw, as an Internal status.
absl::Status RunPrepare(const ToolPrepare& prepare, const Json& arguments,
                        const SessionInfo& session, std::any& out) {
  if (!prepare) return absl::OkStatus();
  try {
    out = prepare(arguments, session);
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
// ToolCallImpl

void ToolCallImpl::SendProgress(double progress, double total, std::string_view message) {
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

void ToolCallImpl::CloseStream() {
  RunOn(executor_, [self = shared_from_this()] {
    if (self->cancelled_ || self->responded_) return;
    if (auto s = self->session_.lock()) s->CloseStream(self->id_);
  });
}

void ToolCallImpl::Log(LoggingLevel level, std::string_view logger, Json data) {
  RunOn(executor_,
        [self = shared_from_this(), level, l = std::string(logger), d = std::move(data)]() mutable {
          if (self->cancelled_ || self->responded_) return;
          if (auto s = self->session_.lock()) s->SendLog(level, l, std::move(d), self->id_);
        });
}

void ToolCallImpl::SendRequest(std::string_view method, Json params,
                               std::chrono::milliseconds timeout, ResponseCallback callback) {
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

void ToolCallImpl::OnCancelled(std::function<void()> fn) {
  RunOn(executor_, [self = shared_from_this(), f = std::move(fn)]() mutable {
    if (self->cancelled_) {
      f();
    } else {
      self->on_cancel_.push_back(std::move(f));
    }
  });
}

void ToolCallImpl::Finish(ToolResult result) {
  if (finished_.exchange(true)) return;
  RunOn(executor_, [self = shared_from_this(), r = std::move(result)]() mutable {
    if (auto s = self->session_.lock()) s->FinishCall(self, std::move(r));
  });
}

void ToolCallImpl::Cancel(McpSession* session, const absl::Status& why) {
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

// ------------------------------------------------------------------------------------------------
// McpSession: the tools/call path

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
  // A ToolPrepare sees the session's project: before it is fixed, it runs on the executor.
  if (pre.status.ok() && (project_fixed_.load() || !server_.project_resolver_)) {
    pre.prepared_with = Info();
    pre.prepare_status = RunPrepare(tool->prepare, *arguments, *pre.prepared_with, pre.prepared);
  }
  pre.tool = std::move(tool);
  return pre;
}

void McpSession::FinishCall(const std::shared_ptr<ToolCallImpl>& call, ToolResult result) {
  auto it = calls_.find(call->request_id());
  if (it != calls_.end() && it->second == call) calls_.erase(it);
  call->MarkResponded();
  if (call->cancelled() || closed_) return;  // a cancelled call is never answered
  Reply(call->request_id(), ToolResultToJson(std::move(result)));
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
      ReplyError(m.id, kInvalidParams,
                 "invalid params: tools/call \"arguments\" must be an object");
      return;
    }
    arguments = std::move(*a);
  }
  if (calls_.count(m.id) > 0) {
    ReplyError(m.id, kInvalidRequest, "invalid request: this request id is already in use");
    return;
  }
  const bool same_tool = pre.tool == tool;
  absl::Status valid =
      same_tool ? std::move(pre.status) : ValidateJson(tool->definition.input_schema, arguments);
  if (!valid.ok()) {
    Reply(m.id, ToolResultToJson(ErrorResult(
                    Cat("invalid arguments for tool ", tool_name, ": ", valid.message()))));
    return;
  }
  std::any prepared;
  const bool same_prepare = same_tool && pre.prepared_with == info_;
  absl::Status prepare_status = same_prepare
                                    ? std::move(pre.prepare_status)
                                    : RunPrepare(tool->prepare, arguments, *info_, prepared);
  if (same_prepare) prepared = std::move(pre.prepared);
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

// ------------------------------------------------------------------------------------------------
// McpServer: the tool registry

absl::Status McpServer::AddTool(ToolDefinition definition, ToolHandler handler,
                                ToolPrepare prepare) {
  if (!ValidToolName(definition.name)) {
    return absl::InvalidArgumentError(Cat("invalid tool name '", definition.name,
                                          "': use 1-128 characters of A-Z a-z 0-9 _ - ."));
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
  if (!definition.meta.is_null()) listing[wire::kMeta] = definition.meta;
  entry->listing = std::move(listing);
  entry->definition = std::move(definition);
  entry->handler = std::move(handler);
  entry->prepare = std::move(prepare);
  std::lock_guard<std::mutex> lock(mu_);
  if (tools_by_name_.count(entry->definition.name) > 0) {
    return absl::AlreadyExistsError(Cat("tool ", entry->definition.name, " is already registered"));
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

}  // namespace contextd::protocol
