#include "gateway/gateway.h"

#include <utility>

#include "base/logging.h"
#include "base/str_cat.h"
#include "folding/text.h"
#include "protocol/mcp_constants.h"

namespace contextd::gateway {
namespace w = protocol::wire;

namespace {

constexpr char kToolCallKind[] = "tool_call";
constexpr char kToolResultKind[] = "tool_result";
constexpr char kResourceReadKind[] = "resource_read";

std::string StringField(const Json& object, std::string_view key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

void ScrubStrings(const scrub::Scrubber& scrubber, Json& value) {
  if (value.is_string()) {
    value = scrubber.Scrub(value.get_ref<const std::string&>());
  } else if (value.is_array() || value.is_object()) {
    for (auto& item : value) ScrubStrings(scrubber, item);
  }
}

protocol::ToolResult ResultFromJson(Json json) {
  protocol::ToolResult result;
  if (!json.is_object()) {
    result.is_error = true;
    result.content = Json::array({{{w::kType, w::kText}, {w::kText, "upstream sent a malformed result"}}});
    return result;
  }
  auto content = json.find(w::kContent);
  if (content != json.end() && content->is_array()) result.content = std::move(*content);
  auto structured = json.find(w::kStructuredContent);
  if (structured != json.end() && structured->is_object()) {
    result.structured_content = std::move(*structured);
  }
  auto is_error = json.find(w::kIsError);
  result.is_error = is_error != json.end() && is_error->is_boolean() && is_error->get<bool>();
  return result;
}

}  // namespace

std::string ScrubToolResult(const scrub::Scrubber& scrubber, protocol::ToolResult& result) {
  std::string joined;
  bool first = true;
  auto append = [&](const std::string& text) {
    if (!first) joined.push_back('\n');
    first = false;
    joined += text;
  };
  for (Json& block : result.content) {
    if (!block.is_object()) continue;
    std::string type = StringField(block, w::kType);
    if (type == w::kText && block.contains(w::kText) && block[w::kText].is_string()) {
      block[w::kText] = scrubber.Scrub(block[w::kText].get_ref<const std::string&>());
      append(block[w::kText].get_ref<const std::string&>());
    } else if (type == "resource" && block.contains("resource") &&
               block["resource"].is_object()) {
      Json& resource = block["resource"];
      if (resource.contains(w::kText) && resource[w::kText].is_string()) {
        resource[w::kText] = scrubber.Scrub(resource[w::kText].get_ref<const std::string&>());
        append(resource[w::kText].get_ref<const std::string&>());
      }
    }
  }
  if (!result.structured_content.is_null()) {
    ScrubStrings(scrubber, result.structured_content);
    append(result.structured_content.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  return joined;
}

std::string Gateway::ExposedUri(std::string_view upstream, std::string_view uri) {
  return base::StrCat(kResourceScheme, upstream, "/", uri);
}

absl::StatusOr<std::pair<std::string, std::string>> Gateway::OriginalUri(
    std::string_view exposed) {
  if (exposed.substr(0, kResourceScheme.size()) != kResourceScheme) {
    return absl::InvalidArgumentError(base::StrCat("not a gateway uri: ", exposed));
  }
  exposed.remove_prefix(kResourceScheme.size());
  auto slash = exposed.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return absl::InvalidArgumentError("gateway uri lacks the upstream name");
  }
  return std::make_pair(std::string(exposed.substr(0, slash)),
                        std::string(exposed.substr(slash + 1)));
}

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Create(GatewayDeps deps,
                                                         std::vector<UpstreamConfig> upstreams) {
  if (deps.server == nullptr || deps.manager == nullptr || deps.counter == nullptr ||
      deps.scrubber == nullptr || !deps.session_key) {
    return absl::InvalidArgumentError("gateway: missing dependency");
  }
  std::set<std::string> names;
  for (const auto& u : upstreams) {
    absl::Status valid = ValidateUpstream(u);
    if (!valid.ok()) return valid;
    if (!names.insert(u.name).second) {
      return absl::InvalidArgumentError(base::StrCat("upstream name ", u.name, " is used twice"));
    }
  }
  return std::unique_ptr<Gateway>(new Gateway(std::move(deps), std::move(upstreams)));
}

Gateway::Gateway(GatewayDeps deps, std::vector<UpstreamConfig> upstreams) : deps_(std::move(deps)) {
  for (auto& config : upstreams) {
    std::string name = config.name;
    Upstream& upstream = upstreams_[name];
    std::weak_ptr<bool> alive = alive_;
    UpstreamClient::Listener listener;
    listener.on_catalog = [this, alive, &upstream] {
      if (alive.lock()) OnCatalog(upstream);
    };
    listener.on_resource_updated = [this, alive, name](const std::string& uri) {
      if (alive.lock()) deps_.server->NotifyResourceUpdated(ExposedUri(name, uri));
    };
    upstream.client = std::make_shared<UpstreamClient>(
        deps_.server->executor(), std::move(config), std::move(listener), deps_.backoff);
  }
}

Gateway::~Gateway() { *alive_ = false; }

void Gateway::Start() {
  for (auto& [name, upstream] : upstreams_) upstream.client->Start();
}

void Gateway::Stop() {
  bool removed = false;
  for (auto& [name, upstream] : upstreams_) {
    upstream.client->Stop();
    for (const auto& tool : upstream.tools) removed |= deps_.server->RemoveTool(tool).ok();
    upstream.tools.clear();
  }
  if (removed) deps_.server->NotifyToolsListChanged();
}

bool Gateway::Settled() const {
  for (const auto& [name, upstream] : upstreams_) {
    if (!upstream.client->settled()) return false;
  }
  return true;
}

UpstreamClient* Gateway::upstream(std::string_view name) {
  auto it = upstreams_.find(name);
  return it == upstreams_.end() ? nullptr : it->second.client.get();
}

void Gateway::OnCatalog(Upstream& upstream) {
  const UpstreamCatalog& catalog = upstream.client->catalog();
  const std::string& name = upstream.client->config().name;
  bool tools_changed = false;
  for (const auto& tool : upstream.tools) tools_changed |= deps_.server->RemoveTool(tool).ok();
  upstream.tools.clear();
  std::weak_ptr<bool> alive = alive_;
  for (const Json& tool : catalog.tools) {
    std::string upstream_tool = StringField(tool, w::kName);
    if (upstream_tool.empty()) continue;
    protocol::ToolDefinition definition;
    definition.name = base::StrCat(name, kNameSeparator, upstream_tool);
    definition.title = StringField(tool, w::kTitle);
    definition.description = StringField(tool, w::kDescription);
    if (tool.contains(w::kInputSchema)) definition.input_schema = tool[w::kInputSchema];
    if (tool.contains(w::kOutputSchema)) definition.output_schema = tool[w::kOutputSchema];
    if (tool.contains(w::kAnnotations) && tool[w::kAnnotations].is_object()) {
      definition.annotations = tool[w::kAnnotations];
    }
    std::string exposed = definition.name;
    absl::Status added = deps_.server->AddTool(
        std::move(definition),
        [this, alive, &upstream, upstream_tool](std::shared_ptr<protocol::ToolCall> call) {
          if (!alive.lock()) {
            call->Finish(protocol::ErrorResult("contextd gateway is shutting down"));
            return;
          }
          CallTool(upstream, upstream_tool, call);
        });
    if (!added.ok()) {
      base::LogWarn(base::StrCat("upstream ", name, ": tool ", upstream_tool,
                                 " not exposed: ", added.message()));
      continue;
    }
    upstream.tools.insert(exposed);
    tools_changed = true;
  }
  if (tools_changed) deps_.server->NotifyToolsListChanged();

  bool resources_changed = false;
  auto reader = [this, alive, &upstream](const protocol::ResourceRead& read,
                                         protocol::ResourceDone done) {
    if (!alive.lock()) {
      done(absl::UnavailableError("contextd gateway is shutting down"));
      return;
    }
    ReadResource(upstream, read, std::move(done));
  };
  for (const Json& resource : catalog.resources) {
    std::string uri = StringField(resource, w::kUri);
    if (uri.empty()) continue;
    std::string exposed = ExposedUri(name, uri);
    if (upstream.resources.count(exposed)) continue;
    protocol::ResourceDefinition definition{exposed, StringField(resource, w::kName),
                                            StringField(resource, w::kTitle),
                                            StringField(resource, w::kDescription),
                                            StringField(resource, w::kMimeType)};
    if (definition.name.empty()) definition.name = uri;
    absl::Status added = deps_.server->AddResource(std::move(definition), reader);
    if (added.ok()) {
      upstream.resources.insert(exposed);
      resources_changed = true;
    } else {
      base::LogWarn(base::StrCat("upstream ", name, ": resource ", uri,
                                 " not exposed: ", added.message()));
    }
  }
  for (const Json& tmpl : catalog.resource_templates) {
    std::string uri_template = StringField(tmpl, w::kUriTemplate);
    if (uri_template.empty()) continue;
    std::string exposed = ExposedUri(name, uri_template);
    if (upstream.templates.count(exposed)) continue;
    protocol::ResourceTemplateDefinition definition{
        exposed, StringField(tmpl, w::kName), StringField(tmpl, w::kTitle),
        StringField(tmpl, w::kDescription), StringField(tmpl, w::kMimeType)};
    if (definition.name.empty()) definition.name = uri_template;
    absl::Status added = deps_.server->AddResourceTemplate(std::move(definition), reader);
    if (added.ok()) {
      upstream.templates.insert(exposed);
      resources_changed = true;
    } else {
      base::LogWarn(base::StrCat("upstream ", name, ": resource template ", uri_template,
                                 " not exposed: ", added.message()));
    }
  }
  if (resources_changed) deps_.server->NotifyResourcesListChanged();
}

void Gateway::CallTool(Upstream& upstream, const std::string& upstream_tool,
                       const std::shared_ptr<protocol::ToolCall>& call) {
  const std::string& name = upstream.client->config().name;
  std::string args_text = deps_.scrubber->Scrub(
      call->arguments().dump(-1, ' ', false, Json::error_handler_t::replace));
  auto args_tokens = static_cast<int64_t>(deps_.counter->Count(args_text));
  folding::SessionKey key = deps_.session_key(call->session());
  auto charged = deps_.manager->Charge(
      key, "", folding::ChargeRecord{kToolCallKind, call->tool_name(), args_text, args_tokens});
  if (!charged.ok()) {
    base::LogWarn(base::StrCat("gateway: charging ", call->tool_name(), ": ",
                               charged.status().message()));
  } else if (charged->exhausted) {
    protocol::ToolResult result = protocol::ErrorResult(folding::ExhaustedText(*charged));
    if (deps_.observer != nullptr) {
      deps_.observer->OnProxiedCall(call->session(), charged->branch_id, call->tool_name(),
                                    args_text, "", args_tokens, 0, true);
    }
    call->Finish(std::move(result));
    return;
  }
  // Without deliver_warnings, a threshold crossed by the arguments is reported with the result.
  std::string args_warning_text =
      charged.ok() && charged->warning_crossed && !deps_.deliver_warnings
          ? folding::WarningText(charged->branch_id, charged->used, charged->allocated)
          : std::string();

  RequestHooks hooks;
  std::weak_ptr<protocol::ToolCall> weak_call = call;
  if (call->has_progress_token()) {
    hooks.on_progress = [weak_call](const Json& params) {
      auto c = weak_call.lock();
      if (!c) return;
      double progress = params.value(w::kProgress, 0.0);
      double total = params.contains(w::kTotal) && params[w::kTotal].is_number()
                         ? params[w::kTotal].get<double>()
                         : 0.0;
      c->SendProgress(progress, total, StringField(params, w::kMessage));
    };
  }
  hooks.on_log = [weak_call](const Json& params) {
    auto c = weak_call.lock();
    if (!c || !params.is_object()) return;
    auto level = protocol::ParseLoggingLevel(StringField(params, w::kLevel));
    c->Log(level.value_or(protocol::LoggingLevel::kInfo), StringField(params, w::kLogger),
           params.contains(w::kData) ? params[w::kData] : Json(nullptr));
  };
  hooks.on_server_request = [weak_call](const std::string& method, const Json& params,
                                        std::function<void(absl::StatusOr<Json>)> reply) {
    auto c = weak_call.lock();
    if (!c) {
      reply(absl::CancelledError("the call that caused this request has ended"));
      return;
    }
    c->SendRequest(method, params, std::chrono::milliseconds(0), std::move(reply));
  };

  Json params = {{w::kName, upstream_tool}, {w::kArguments, call->arguments()}};
  std::shared_ptr<UpstreamClient> client = upstream.client;
  std::weak_ptr<bool> alive = alive_;
  int64_t id = client->Request(
      w::kToolsCall, std::move(params),
      [this, alive, call, name, args_text, args_tokens,
       args_warning_text](absl::StatusOr<Json> result) {
        if (!alive.lock()) {
          call->Finish(protocol::ErrorResult("contextd gateway is shutting down"));
          return;
        }
        if (call->cancelled()) return;  // nothing is delivered, so nothing is charged
        FinishCall(call, std::move(result), name, args_text, args_tokens, args_warning_text);
      },
      std::move(hooks));
  if (id != 0) {
    std::weak_ptr<UpstreamClient> weak_client = client;
    call->OnCancelled([weak_client, id] {
      if (auto c = weak_client.lock()) c->Cancel(id, "cancelled by the client");
    });
  }
}

void Gateway::FinishCall(const std::shared_ptr<protocol::ToolCall>& call,
                         absl::StatusOr<Json> result, const std::string& upstream_name,
                         const std::string& args_text, int64_t args_tokens,
                         const std::string& pending_warning) {
  protocol::ToolResult reply;
  if (result.ok()) {
    reply = ResultFromJson(std::move(result).value());
  } else if (absl::IsUnknown(result.status())) {
    reply = protocol::ErrorResult(
        base::StrCat("upstream ", upstream_name, " error: ", result.status().message()));
  } else {
    reply = protocol::ErrorResult(std::string(result.status().message()));
  }
  std::string text = ScrubToolResult(*deps_.scrubber, reply);
  auto tokens = static_cast<int64_t>(deps_.counter->Count(text));
  folding::SessionKey key = deps_.session_key(call->session());
  auto charged = deps_.manager->Charge(
      key, "", folding::ChargeRecord{kToolResultKind, call->tool_name(), text, tokens});
  std::string branch_id;
  if (!charged.ok()) {
    base::LogWarn(base::StrCat("gateway: charging the result of ", call->tool_name(), ": ",
                               charged.status().message()));
  } else {
    branch_id = charged->branch_id;
    if (charged->exhausted) {
      reply = protocol::ErrorResult(folding::ExhaustedText(*charged));
    } else if (!deps_.deliver_warnings) {
      std::string warning =
          charged->warning_crossed
              ? folding::WarningText(charged->branch_id, charged->used, charged->allocated)
              : pending_warning;
      if (!warning.empty()) {
        reply.content.push_back(Json{{w::kType, w::kText}, {w::kText, warning}});
        call->Log(protocol::LoggingLevel::kWarning, "contextd.budget", Json(warning));
      }
    }
  }
  if (deps_.observer != nullptr) {
    deps_.observer->OnProxiedCall(call->session(), branch_id, call->tool_name(), args_text, text,
                                  args_tokens, tokens, reply.is_error);
  }
  if (deps_.deliver_warnings) deps_.deliver_warnings(*call, reply);
  call->Finish(std::move(reply));
}

void Gateway::ReadResource(Upstream& upstream, const protocol::ResourceRead& read,
                           protocol::ResourceDone done) {
  auto original = OriginalUri(read.uri);
  if (!original.ok()) {
    done(absl::NotFoundError(std::string(original.status().message())));
    return;
  }
  std::string name = upstream.client->config().name;
  std::string exposed = read.uri;
  protocol::SessionInfo session = read.session;
  std::weak_ptr<bool> alive = alive_;
  upstream.client->Request(
      w::kResourcesRead, Json{{w::kUri, original->second}},
      [this, alive, name, exposed, session, done = std::move(done)](absl::StatusOr<Json> result) {
        if (!alive.lock()) {
          done(absl::UnavailableError("contextd gateway is shutting down"));
          return;
        }
        if (!result.ok()) {
          if (absl::IsUnknown(result.status())) {
            done(absl::NotFoundError(
                base::StrCat("upstream ", name, " error: ", result.status().message())));
          } else {
            done(result.status());
          }
          return;
        }
        Json contents = result->is_object() && result->contains(w::kContents) &&
                                (*result)[w::kContents].is_array()
                            ? (*result)[w::kContents]
                            : Json::array();
        std::string joined;
        for (Json& item : contents) {
          if (!item.is_object()) continue;
          std::string uri = StringField(item, w::kUri);
          if (!uri.empty()) item[w::kUri] = ExposedUri(name, uri);
          if (item.contains(w::kText) && item[w::kText].is_string()) {
            item[w::kText] = deps_.scrubber->Scrub(item[w::kText].get_ref<const std::string&>());
            if (!joined.empty()) joined.push_back('\n');
            joined += item[w::kText].get_ref<const std::string&>();
          }
        }
        auto tokens = static_cast<int64_t>(deps_.counter->Count(joined));
        auto charged = deps_.manager->Charge(
            deps_.session_key(session), "",
            folding::ChargeRecord{kResourceReadKind, exposed, joined, tokens});
        if (charged.ok() && charged->exhausted) {
          done(absl::ResourceExhaustedError(folding::ExhaustedText(*charged)));
          return;
        }
        if (deps_.observer != nullptr) {
          deps_.observer->OnProxiedCall(session, charged.ok() ? charged->branch_id : "", exposed,
                                        "", joined, 0, tokens, false);
        }
        done(std::move(contents));
      });
}

}  // namespace contextd::gateway
