#include "gateway/upstream_client.h"

#include <algorithm>
#include <utility>

#include "base/foreign_text.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "protocol/mcp_constants.h"
#include "transport/upstream_http_client.h"
#include "transport/upstream_stdio_client.h"

namespace contextd::gateway {
namespace w = protocol::wire;

namespace {
constexpr char kClientName[] = "contextd-gateway";
constexpr char kClientVersion[] = "0.1.0";
}  // namespace

UpstreamClient::UpstreamClient(base::Executor& executor, UpstreamConfig config, Listener listener,
                               Backoff backoff)
    : executor_(executor),
      config_(std::move(config)),
      listener_(std::move(listener)),
      backoff_(backoff),
      next_delay_(backoff.initial) {}

UpstreamClient::~UpstreamClient() {
  if (channel_) channel_->Close();
}

pid_t UpstreamClient::pid() const { return channel_ ? channel_->pid() : -1; }

void UpstreamClient::Start() {
  if (state_ != State::kStopped) return;
  Launch();
}

void UpstreamClient::Stop() {
  if (state_ == State::kStopped) return;
  state_ = State::kStopped;
  if (restart_timer_ != 0) executor_.CancelTimer(restart_timer_);
  restart_timer_ = 0;
  ++generation_;
  if (channel_) {
    channel_->Close();
    channel_.reset();
  }
  last_error_ = "stopped";
  FailAll(absl::UnavailableError(base::StrCat("upstream ", config_.name, " unavailable: stopped")));
}

void UpstreamClient::Launch() {
  restart_timer_ = 0;
  state_ = State::kStarting;
  ++starts_;
  uint64_t generation = ++generation_;
  std::weak_ptr<UpstreamClient> weak = weak_from_this();
  base::Executor* executor = &executor_;
  transport::UpstreamCallbacks callbacks;
  callbacks.on_line = [weak, executor, generation](std::string line) {
    executor->Post([weak, generation, line = std::move(line)]() mutable {
      if (auto self = weak.lock()) self->OnLine(generation, std::move(line));
    });
  };
  callbacks.on_closed = [weak, executor, generation](std::string reason) {
    executor->Post([weak, generation, reason = std::move(reason)]() mutable {
      if (auto self = weak.lock()) self->OnClosed(generation, std::move(reason));
    });
  };
  absl::StatusOr<std::unique_ptr<transport::UpstreamChannel>> channel;
  if (config_.stdio) {
    transport::UpstreamStdioOptions options;
    options.command = config_.stdio->command;
    options.args = config_.stdio->args;
    options.env = config_.stdio->env;
    options.cwd = config_.stdio->cwd;
    options.log_name = config_.name;
    channel = transport::UpstreamStdioChannel::Start(options, std::move(callbacks));
  } else {
    transport::UpstreamHttpOptions options;
    options.url = config_.http->url;
    options.headers = config_.http->headers;
    options.ca_file = config_.http->ca_file;
    options.log_name = config_.name;
    channel = transport::UpstreamHttpChannel::Start(options, std::move(callbacks));
  }
  if (!channel.ok()) {
    HandleDown(std::string(channel.status().message()));
    return;
  }
  channel_ = std::move(channel).value();
  base::LogInfo(base::StrCat("upstream ", config_.name, ": started",
                             channel_->pid() > 0 ? base::StrCat(" pid ", channel_->pid()) : ""));
  Initialize();
}

void UpstreamClient::Initialize() {
  Json params = {{w::kProtocolVersion, w::kLatestVersion},
                 {w::kCapabilities,
                  {{w::kCapSampling, Json::object()},
                   {w::kCapElicitation, Json::object()},
                   {w::kCapRoots, {{w::kListChanged, false}}}}},
                 {w::kClientInfo, {{w::kName, kClientName}, {w::kVersion, kClientVersion}}}};
  uint64_t generation = generation_;
  SendRequest(
      w::kInitialize, std::move(params),
      [this, generation](absl::StatusOr<Json> result) {
        if (generation != generation_) return;
        if (!result.ok()) {
          HandleDown(base::StrCat("initialize failed: ", result.status().message()));
          return;
        }
        if (result->is_object() && result->contains(w::kCapabilities) &&
            (*result)[w::kCapabilities].is_object()) {
          server_capabilities_ = (*result)[w::kCapabilities];
        }
        SendRaw(protocol::MakeNotification(w::kNotifInitialized, Json::object()));
        RelistEverything([this, generation] {
          if (generation != generation_) return;
          state_ = State::kReady;
          last_error_.clear();
          next_delay_ = backoff_.initial;
          base::LogInfo(base::StrCat("upstream ", config_.name, ": ready, ", catalog_.tools.size(),
                                     " tool(s)"));
          if (listener_.on_catalog) listener_.on_catalog();
        });
      },
      {}, config_.call_timeout);
}

void UpstreamClient::ListAll(std::string method, std::string key, Json accumulated, Json cursor,
                             std::function<void(absl::StatusOr<Json>)> done) {
  Json params = Json::object();
  if (cursor.is_string()) params[w::kCursor] = cursor;
  std::string m = method;
  SendRequest(
      m, std::move(params),
      [this, method = std::move(method), key = std::move(key), accumulated = std::move(accumulated),
       done = std::move(done)](absl::StatusOr<Json> result) mutable {
        if (!result.ok()) {
          done(result.status());
          return;
        }
        if (result->is_object() && result->contains(key) && (*result)[key].is_array()) {
          for (auto& item : (*result)[key]) accumulated.push_back(std::move(item));
        }
        if (result->is_object() && result->contains(w::kNextCursor) &&
            (*result)[w::kNextCursor].is_string() && accumulated.size() < 100000) {
          Json next = (*result)[w::kNextCursor];
          ListAll(std::move(method), std::move(key), std::move(accumulated), std::move(next),
                  std::move(done));
          return;
        }
        done(std::move(accumulated));
      },
      {}, config_.call_timeout);
}

void UpstreamClient::RelistEverything(std::function<void()> then) {
  RelistStep(0, generation_, std::make_shared<std::function<void()>>(std::move(then)));
}

void UpstreamClient::RelistStep(int i, uint64_t generation,
                                std::shared_ptr<std::function<void()>> then) {
  // tools, then resources, templates and prompts when the upstream declares them.
  if (generation != generation_) return;
  struct Item {
    std::string_view cap, method, key;
    Json* target;
  };
  const Item items[] = {{w::kCapTools, w::kToolsList, w::kTools, &catalog_.tools},
                        {w::kCapResources, w::kResourcesList, w::kResources, &catalog_.resources},
                        {w::kCapResources, w::kResourcesTemplatesList, w::kResourceTemplates,
                         &catalog_.resource_templates},
                        {w::kCapPrompts, w::kPromptsList, w::kPrompts, &catalog_.prompts}};
  while (i < 4 && !server_capabilities_.contains(items[i].cap)) ++i;
  if (i >= 4) {
    (*then)();
    return;
  }
  Item item = items[i];
  ListAll(std::string(item.method), std::string(item.key), Json::array(), nullptr,
          [this, item, i, generation, then](absl::StatusOr<Json> list) {
            if (generation != generation_) return;
            if (list.ok()) {
              *item.target = std::move(list).value();
            } else {
              base::LogWarn(base::StrCat("upstream ", config_.name, ": ", item.method,
                                         " failed: ", list.status().message()));
            }
            RelistStep(i + 1, generation, then);
          });
}

void UpstreamClient::RelistTools() {
  uint64_t generation = generation_;
  ListAll(std::string(w::kToolsList), std::string(w::kTools), Json::array(), nullptr,
          [this, generation](absl::StatusOr<Json> list) {
            if (generation != generation_) return;
            if (!list.ok()) {
              base::LogWarn(base::StrCat("upstream ", config_.name,
                                         ": tools/list failed: ", list.status().message()));
              return;
            }
            catalog_.tools = std::move(list).value();
            if (listener_.on_catalog) listener_.on_catalog();
          });
}

void UpstreamClient::SendRaw(const Json& message) {
  if (!channel_) return;
  absl::Status s = channel_->Send(protocol::Serialize(message));
  if (!s.ok()) {
    base::LogWarn(base::StrCat("upstream ", config_.name, ": ", s.message()));
  }
}

int64_t UpstreamClient::Request(std::string_view method, Json params, Done done, RequestHooks hooks,
                                std::chrono::milliseconds timeout) {
  if (state_ != State::kReady) {
    done(absl::UnavailableError(
        base::StrCat("upstream ", config_.name, " unavailable: ", last_error_)));
    return 0;
  }
  return SendRequest(method, std::move(params), std::move(done), std::move(hooks), timeout);
}

int64_t UpstreamClient::SendRequest(std::string_view method, Json params, Done done,
                                    RequestHooks hooks, std::chrono::milliseconds timeout) {
  if (!channel_) {
    done(absl::UnavailableError(
        base::StrCat("upstream ", config_.name, " unavailable: ", last_error_)));
    return 0;
  }
  int64_t id = next_id_++;
  Pending pending;
  pending.method = std::string(method);
  if (hooks.on_progress) {
    if (!params.is_object()) params = Json::object();
    pending.progress_token = base::StrCat("ctxd-", id);
    params[w::kMeta][w::kProgressToken] = pending.progress_token;
    progress_tokens_[pending.progress_token] = id;
  }
  pending.done = std::move(done);
  pending.hooks = std::move(hooks);
  if (timeout.count() <= 0) timeout = config_.call_timeout;
  std::weak_ptr<UpstreamClient> weak = weak_from_this();
  pending.timer = executor_.PostAfter(timeout, [weak, id, timeout, m = pending.method] {
    auto self = weak.lock();
    if (!self || !self->pending_.count(id)) return;
    self->pending_[id].timer = 0;
    self->SendRaw(protocol::MakeNotification(w::kNotifCancelled,
                                             {{w::kRequestId, id}, {w::kReason, "timeout"}}));
    self->Complete(id, absl::DeadlineExceededError(base::StrCat(
                           "upstream ", self->config_.name, " unavailable: no answer to ", m,
                           " within ", timeout.count(), " ms")));
  });
  Json message = protocol::MakeRequest(id, method, std::move(params));
  pending_.emplace(id, std::move(pending));
  absl::Status sent = channel_->Send(protocol::Serialize(message));
  if (!sent.ok()) {
    Complete(id, absl::UnavailableError(
                     base::StrCat("upstream ", config_.name, " unavailable: ", sent.message())));
    return 0;
  }
  return id;
}

void UpstreamClient::Cancel(int64_t id, std::string_view reason) {
  if (!pending_.count(id)) return;
  SendRaw(protocol::MakeNotification(w::kNotifCancelled,
                                     {{w::kRequestId, id}, {w::kReason, std::string(reason)}}));
  Complete(id, absl::CancelledError(std::string(reason)));
}

void UpstreamClient::Complete(int64_t id, absl::StatusOr<Json> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  if (pending.timer != 0) executor_.CancelTimer(pending.timer);
  if (!pending.progress_token.empty()) progress_tokens_.erase(pending.progress_token);
  if (pending.done) pending.done(std::move(result));
}

void UpstreamClient::FailAll(const absl::Status& status) {
  while (!pending_.empty()) Complete(pending_.begin()->first, status);
}

void UpstreamClient::OnLine(uint64_t generation, std::string line) {
  if (generation != generation_) return;
  protocol::Incoming incoming = protocol::ParseIncoming(line, 256u << 20);
  for (auto& item : incoming.items) {
    auto* message = std::get_if<protocol::Message>(&item);
    if (message == nullptr) {
      const auto& error = std::get<protocol::ParseError>(item);
      base::LogWarn(
          base::StrCat("upstream ", config_.name, ": unparseable message: ", error.message));
      // An answer to one of our requests that cannot be read as one document (a duplicate key:
      // decision 0029) fails that request now rather than at its timeout.
      if (error.id.is_number_integer() && pending_.contains(error.id.get<int64_t>())) {
        Complete(error.id.get<int64_t>(),
                 absl::DataLossError(base::StrCat("its answer was refused: ", error.message)));
      }
      continue;
    }
    switch (message->kind) {
      case protocol::MessageKind::kResponse:
      case protocol::MessageKind::kErrorResponse: {
        if (!message->id.is_number_integer()) break;
        int64_t id = message->id.get<int64_t>();
        if (message->kind == protocol::MessageKind::kResponse) {
          Complete(id, std::move(message->result));
        } else {
          const Json& e = message->error;
          std::string text = e.is_object() && e.contains(w::kMessage) && e[w::kMessage].is_string()
                                 ? e[w::kMessage].get<std::string>()
                                 : base::DumpJson(e);
          int code = e.is_object() && e.contains(w::kCode) && e[w::kCode].is_number_integer()
                         ? e[w::kCode].get<int>()
                         : 0;
          Complete(id, absl::UnknownError(base::StrCat(code, ": ", text)));
        }
        break;
      }
      case protocol::MessageKind::kNotification:
        HandleNotification(*message);
        break;
      case protocol::MessageKind::kRequest:
        HandleServerRequest(*message);
        break;
    }
  }
}

UpstreamClient::Pending* UpstreamClient::LatestWithHook(bool log) {
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (log ? static_cast<bool>(it->second.hooks.on_log)
            : static_cast<bool>(it->second.hooks.on_server_request)) {
      return &it->second;
    }
  }
  return nullptr;
}

void UpstreamClient::HandleNotification(const protocol::Message& message) {
  const Json& params = message.params;
  if (message.method == w::kNotifProgress) {
    if (!params.is_object() || !params.contains(w::kProgressToken)) return;
    const Json& token = params[w::kProgressToken];
    std::string key = token.is_string() ? token.get<std::string>() : base::DumpJson(token);
    auto it = progress_tokens_.find(key);
    if (it == progress_tokens_.end()) return;
    auto p = pending_.find(it->second);
    if (p != pending_.end() && p->second.hooks.on_progress) p->second.hooks.on_progress(params);
  } else if (message.method == w::kNotifMessage) {
    Pending* target = LatestWithHook(true);
    if (target != nullptr) {
      target->hooks.on_log(params);
    } else {
      base::LogInfo(base::StrCat("upstream ", config_.name, " log: ", base::DumpJson(params)));
    }
  } else if (message.method == w::kNotifToolsListChanged) {
    if (state_ == State::kReady) RelistTools();
  } else if (message.method == w::kNotifResourcesListChanged ||
             message.method == w::kNotifPromptsListChanged) {
    if (state_ == State::kReady) {
      uint64_t generation = generation_;
      RelistEverything([this, generation] {
        if (generation == generation_ && listener_.on_catalog) listener_.on_catalog();
      });
    }
  } else if (message.method == w::kNotifResourcesUpdated) {
    if (params.is_object() && params.contains(w::kUri) && params[w::kUri].is_string() &&
        listener_.on_resource_updated) {
      listener_.on_resource_updated(params[w::kUri].get<std::string>());
    }
  } else if (message.method == w::kNotifCancelled) {
    // The upstream gave up on one of its own requests to us; the relayed request finishes on
    // its own (its answer is then ignored by the upstream).
  }
}

void UpstreamClient::HandleServerRequest(const protocol::Message& message) {
  Json id = message.id;
  if (message.method == w::kPing) {
    SendRaw(protocol::MakeResult(id, Json::object()));
    return;
  }
  Pending* target = LatestWithHook(false);
  if (target == nullptr) {
    SendRaw(protocol::MakeError(
        id, protocol::kMethodNotFound,
        base::StrCat("contextd relays ", message.method,
                     " only while one of this upstream's tool calls is in flight")));
    return;
  }
  std::weak_ptr<UpstreamClient> weak = weak_from_this();
  uint64_t generation = generation_;
  target->hooks.on_server_request(
      message.method, message.params, [weak, id, generation](absl::StatusOr<Json> result) {
        auto self = weak.lock();
        if (!self || generation != self->generation_) return;
        if (result.ok()) {
          self->SendRaw(protocol::MakeResult(id, std::move(result).value()));
        } else {
          self->SendRaw(protocol::MakeError(id, protocol::kInternalError,
                                            std::string(result.status().message())));
        }
      });
}

void UpstreamClient::OnClosed(uint64_t generation, std::string reason) {
  if (generation != generation_) return;
  HandleDown(config_.stdio ? base::StrCat("process ", reason) : std::move(reason));
}

void UpstreamClient::HandleDown(std::string reason) {
  if (state_ == State::kStopped) return;
  ++generation_;
  state_ = State::kDown;
  last_error_ = reason;
  if (channel_) {
    channel_->Close(100);
    channel_.reset();
  }
  FailAll(
      absl::UnavailableError(base::StrCat("upstream ", config_.name, " unavailable: ", reason)));
  std::chrono::milliseconds delay = next_delay_;
  next_delay_ = std::min(backoff_.max, next_delay_ * 2);
  base::LogWarn(base::StrCat("upstream ", config_.name, ": ", reason, "; restarting in ",
                             delay.count(), " ms"));
  std::weak_ptr<UpstreamClient> weak = weak_from_this();
  restart_timer_ = executor_.PostAfter(delay, [weak] {
    auto self = weak.lock();
    if (self && self->state_ == State::kDown) self->Launch();
  });
}

}  // namespace contextd::gateway
