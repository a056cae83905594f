#include "gateway/gateway.h"

#include <optional>
#include <utility>

#include "base/foreign_text.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "folding/text.h"
#include "protocol/mcp_constants.h"
#include "protocol/tool_notices.h"

namespace contextd::gateway {
namespace w = protocol::wire;

namespace {

constexpr char kToolCallKind[] = "tool_call";
constexpr char kToolResultKind[] = "tool_result";
constexpr char kResourceReadKind[] = "resource_read";
constexpr char kPromptGetKind[] = "prompt_get";

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

// A catalog entry's prose (title, description) as the agent sees it: scrubbed.
std::string ScrubbedField(const scrub::Scrubber& scrubber, const Json& object,
                          std::string_view key) {
  std::string text = StringField(object, key);
  return text.empty() ? text : scrubber.Scrub(text);
}

// Scrubs the prose of a JSON Schema: every string "title" and "description", at any depth (the
// parser bounds the depth), which clients show the model; also inside enum, const, default
// and examples values that are objects. Property names, patterns and the string values of enum,
// const, default and examples are kept: they are part of the contract with the upstream tool.
void ScrubSchemaProse(const scrub::Scrubber& scrubber, Json& schema) {
  if (schema.is_object()) {
    for (auto& [key, value] : schema.items()) {
      if ((key == w::kTitle || key == w::kDescription) && value.is_string()) {
        value = scrubber.Scrub(value.get_ref<const std::string&>());
      } else {
        ScrubSchemaProse(scrubber, value);
      }
    }
  } else if (schema.is_array()) {
    for (auto& item : schema) ScrubSchemaProse(scrubber, item);
  }
}

protocol::ToolResult ResultFromJson(Json json) {
  protocol::ToolResult result;
  if (!json.is_object()) {
    result.is_error = true;
    result.content =
        Json::array({{{w::kType, w::kText}, {w::kText, "upstream sent a malformed result"}}});
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

std::optional<std::string> ScrubContentBlock(const scrub::Scrubber& scrubber, Json& block) {
  if (!block.is_object()) return std::nullopt;
  std::string type = StringField(block, w::kType);
  if (type == w::kText && block.contains(w::kText) && block[w::kText].is_string()) {
    block[w::kText] = scrubber.Scrub(block[w::kText].get_ref<const std::string&>());
    return block[w::kText].get<std::string>();
  }
  if (type == "resource" && block.contains("resource") && block["resource"].is_object()) {
    Json& resource = block["resource"];
    if (resource.contains(w::kText) && resource[w::kText].is_string()) {
      resource[w::kText] = scrubber.Scrub(resource[w::kText].get_ref<const std::string&>());
      return resource[w::kText].get<std::string>();
    }
  }
  return std::nullopt;
}

std::string ScrubToolResult(const scrub::Scrubber& scrubber, protocol::ToolResult& result) {
  std::string joined;
  bool first = true;
  auto append = [&](const std::string& text) {
    if (!first) joined.push_back('\n');
    first = false;
    joined += text;
  };
  for (Json& block : result.content) {
    if (auto text = ScrubContentBlock(scrubber, block)) append(*text);
  }
  if (!result.structured_content.is_null()) {
    ScrubStrings(scrubber, result.structured_content);
    append(base::DumpJson(result.structured_content));
  }
  return joined;
}

std::string Gateway::ExposedUri(std::string_view upstream, std::string_view uri) {
  return base::StrCat(kResourceScheme, upstream, "/", uri);
}

absl::StatusOr<std::pair<std::string, std::string>> Gateway::OriginalUri(std::string_view exposed) {
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
  if (deps.server == nullptr || deps.ledger == nullptr || deps.counter == nullptr ||
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
    upstream.client = std::make_shared<UpstreamClient>(deps_.server->executor(), std::move(config),
                                                       std::move(listener), deps_.backoff);
  }
}

Gateway::~Gateway() { *alive_ = false; }

void Gateway::Start() {
  for (auto& [name, upstream] : upstreams_) upstream.client->Start();
}

void Gateway::Stop() {
  for (auto& [name, upstream] : upstreams_) {
    upstream.client->Stop();
    Unregister(upstream);
  }
}

void Gateway::Unregister(Upstream& upstream) {
  bool tools = false, resources = false, prompts = false;
  for (const auto& tool : upstream.tools) tools |= deps_.server->RemoveTool(tool).ok();
  for (const auto& [uri, entry] : upstream.resources) {
    resources |= deps_.server->RemoveResource(uri).ok();
  }
  for (const auto& [uri, entry] : upstream.templates) {
    resources |= deps_.server->RemoveResourceTemplate(uri).ok();
  }
  for (const auto& [prompt, entry] : upstream.prompts) {
    prompts |= deps_.server->RemovePrompt(prompt).ok();
  }
  upstream.tools.clear();
  upstream.resources.clear();
  upstream.templates.clear();
  upstream.prompts.clear();
  if (tools) deps_.server->NotifyToolsListChanged();
  if (resources) deps_.server->NotifyResourcesListChanged();
  if (prompts) deps_.server->NotifyPromptsListChanged();
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
    // The upstream's names and URIs are identifiers and stay as they are; its prose is shown to
    // the model and is scrubbed like everything else it sees.
    definition.title = ScrubbedField(*deps_.scrubber, tool, w::kTitle);
    definition.description = ScrubbedField(*deps_.scrubber, tool, w::kDescription);
    if (tool.contains(w::kInputSchema)) {
      definition.input_schema = tool[w::kInputSchema];
      ScrubSchemaProse(*deps_.scrubber, definition.input_schema);
    }
    if (tool.contains(w::kOutputSchema)) {
      definition.output_schema = tool[w::kOutputSchema];
      ScrubSchemaProse(*deps_.scrubber, definition.output_schema);
      protocol::AllowProxiedNotices(definition.output_schema);
    }
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

  auto [resources_changed, prompts_changed] = SyncResourcesAndPrompts(upstream);
  if (resources_changed) deps_.server->NotifyResourcesListChanged();
  if (prompts_changed) deps_.server->NotifyPromptsListChanged();
}

std::pair<bool, bool> Gateway::SyncResourcesAndPrompts(Upstream& upstream) {
  const UpstreamCatalog& catalog = upstream.client->catalog();
  const std::string& name = upstream.client->config().name;
  std::weak_ptr<bool> alive = alive_;
  auto reader = [this, alive, &upstream](const protocol::ResourceRead& read,
                                         protocol::ResourceDone done) {
    if (!alive.lock()) {
      done(absl::UnavailableError("contextd gateway is shutting down"));
      return;
    }
    ReadResource(upstream, read, std::move(done));
  };

  // One kind of item: `key_of` gives an entry's exposed key ("" = skip the entry); entries that
  // vanished or changed are removed, new or changed ones added with `add`.
  auto sync = [&](const Json& listed, std::map<std::string, Json>& registered,
                  const std::function<std::string(const Json&)>& key_of,
                  const std::function<absl::Status(std::string_view)>& remove,
                  const std::function<absl::Status(const std::string&, const Json&)>& add,
                  std::string_view what) {
    std::map<std::string, const Json*> wanted;
    for (const Json& entry : listed) {
      std::string key = key_of(entry);
      if (!key.empty()) wanted.emplace(std::move(key), &entry);
    }
    bool changed = false;
    for (auto it = registered.begin(); it != registered.end();) {
      auto w_it = wanted.find(it->first);
      if (w_it != wanted.end() && *w_it->second == it->second) {
        ++it;
        continue;
      }
      changed |= remove(it->first).ok();
      it = registered.erase(it);
    }
    for (const auto& [key, entry] : wanted) {
      if (registered.count(key)) continue;
      absl::Status added = add(key, *entry);
      if (added.ok()) {
        registered.emplace(key, *entry);
        changed = true;
      } else {
        base::LogWarn(base::StrCat("upstream ", name, ": ", what, " ", key,
                                   " not exposed: ", added.message()));
      }
    }
    return changed;
  };

  bool resources_changed = sync(
      catalog.resources, upstream.resources,
      [&](const Json& r) {
        std::string uri = StringField(r, w::kUri);
        return uri.empty() ? uri : ExposedUri(name, uri);
      },
      [&](std::string_view uri) { return deps_.server->RemoveResource(uri); },
      [&](const std::string& exposed, const Json& r) {
        protocol::ResourceDefinition definition{
            exposed, StringField(r, w::kName), ScrubbedField(*deps_.scrubber, r, w::kTitle),
            ScrubbedField(*deps_.scrubber, r, w::kDescription), StringField(r, w::kMimeType)};
        if (definition.name.empty()) definition.name = StringField(r, w::kUri);
        return deps_.server->AddResource(std::move(definition), reader);
      },
      "resource");
  resources_changed |= sync(
      catalog.resource_templates, upstream.templates,
      [&](const Json& t) {
        std::string uri_template = StringField(t, w::kUriTemplate);
        return uri_template.empty() ? uri_template : ExposedUri(name, uri_template);
      },
      [&](std::string_view uri) { return deps_.server->RemoveResourceTemplate(uri); },
      [&](const std::string& exposed, const Json& t) {
        protocol::ResourceTemplateDefinition definition{
            exposed, StringField(t, w::kName), ScrubbedField(*deps_.scrubber, t, w::kTitle),
            ScrubbedField(*deps_.scrubber, t, w::kDescription), StringField(t, w::kMimeType)};
        if (definition.name.empty()) definition.name = StringField(t, w::kUriTemplate);
        return deps_.server->AddResourceTemplate(std::move(definition), reader);
      },
      "resource template");
  bool prompts_changed = sync(
      catalog.prompts, upstream.prompts,
      [&](const Json& p) {
        std::string prompt = StringField(p, w::kName);
        return prompt.empty() ? prompt : base::StrCat(name, kNameSeparator, prompt);
      },
      [&](std::string_view exposed) { return deps_.server->RemovePrompt(exposed); },
      [&](const std::string& exposed, const Json& p) {
        protocol::PromptDefinition definition;
        definition.name = exposed;
        definition.title = ScrubbedField(*deps_.scrubber, p, w::kTitle);
        definition.description = ScrubbedField(*deps_.scrubber, p, w::kDescription);
        if (p.contains(w::kArguments) && p[w::kArguments].is_array()) {
          for (const Json& a : p[w::kArguments]) {
            std::string arg = StringField(a, w::kName);
            if (arg.empty()) continue;
            bool required = a.contains(w::kRequired) && a[w::kRequired].is_boolean() &&
                            a[w::kRequired].get<bool>();
            definition.arguments.push_back(protocol::PromptArgument{
                arg, ScrubbedField(*deps_.scrubber, a, w::kDescription), required});
          }
        }
        std::string upstream_prompt = StringField(p, w::kName);
        return deps_.server->AddAsyncPrompt(
            std::move(definition),
            [this, alive, &upstream, upstream_prompt, exposed](
                const std::map<std::string, std::string>& arguments,
                const protocol::SessionInfo& session, protocol::PromptDone done) {
              if (!alive.lock()) {
                done(absl::UnavailableError("contextd gateway is shutting down"));
                return;
              }
              GetPrompt(upstream, upstream_prompt, exposed, arguments, session, std::move(done));
            });
      },
      "prompt");
  return {resources_changed, prompts_changed};
}

void Gateway::GetPrompt(Upstream& upstream, const std::string& upstream_prompt,
                        const std::string& exposed,
                        const std::map<std::string, std::string>& arguments,
                        const protocol::SessionInfo& session, protocol::PromptDone done) {
  Json args = Json::object();
  for (const auto& [k, v] : arguments) args[k] = v;
  std::string name = upstream.client->config().name;
  std::weak_ptr<bool> alive = alive_;
  upstream.client->Request(
      w::kPromptsGet, Json{{w::kName, upstream_prompt}, {w::kArguments, std::move(args)}},
      [this, alive, name, exposed, session, done = std::move(done)](absl::StatusOr<Json> result) {
        if (!alive.lock()) {
          done(absl::UnavailableError("contextd gateway is shutting down"));
          return;
        }
        if (!result.ok()) {
          if (absl::IsUnknown(result.status())) {
            // A JSON-RPC error of the upstream ("<code>: <message>"): invalid params stay so.
            std::string message(result.status().message());
            std::string text = base::StrCat("upstream ", name, " error: ", message);
            done(message.rfind("-32602:", 0) == 0 ? absl::InvalidArgumentError(text)
                                                  : absl::InternalError(text));
          } else {
            done(result.status());
          }
          return;
        }
        Json& r = *result;
        if (!r.is_object() || !r.contains(w::kMessages) || !r[w::kMessages].is_array()) {
          done(absl::InternalError(
              base::StrCat("upstream ", name, " sent a malformed prompts/get result")));
          return;
        }
        Json reply = Json::object();
        std::string joined;
        auto append = [&joined](const std::string& text) {
          if (!joined.empty()) joined.push_back('\n');
          joined += text;
        };
        std::string description = StringField(r, w::kDescription);
        if (!description.empty()) {
          reply[w::kDescription] = deps_.scrubber->Scrub(description);
          append(reply[w::kDescription].get<std::string>());
        }
        Json messages = Json::array();
        for (Json& message : r[w::kMessages]) {
          if (!message.is_object() || !message.contains(w::kContent) ||
              !message[w::kContent].is_object() || StringField(message, w::kRole).empty()) {
            done(absl::InternalError(base::StrCat(
                "upstream ", name, " sent a malformed prompt message (needs role and content)")));
            return;
          }
          Json out = {{w::kRole, StringField(message, w::kRole)},
                      {w::kContent, std::move(message[w::kContent])}};
          if (auto text = ScrubContentBlock(*deps_.scrubber, out[w::kContent])) append(*text);
          messages.push_back(std::move(out));
        }
        reply[w::kMessages] = std::move(messages);
        auto tokens = static_cast<int64_t>(deps_.counter->Count(joined));
        auto charged =
            deps_.ledger->Charge(deps_.session_key(session), "",
                                 folding::ChargeRecord{kPromptGetKind, exposed, joined, tokens});
        if (!charged.ok()) {
          base::LogWarn(
              base::StrCat("gateway: charging prompt ", exposed, ": ", charged.status().message()));
        }
        bool exhausted = charged.ok() && charged->outcome.exhausted;
        if (deps_.observer != nullptr) {
          deps_.observer->OnProxiedCall(session, charged.ok() ? charged->outcome.branch_id : "",
                                        exposed, "", joined, 0, tokens, exhausted);
        }
        if (exhausted) {
          done(absl::ResourceExhaustedError(folding::ExhaustedText(charged->outcome)));
          return;
        }
        done(std::move(reply));
      });
}

void Gateway::CallTool(Upstream& upstream, const std::string& upstream_tool,
                       const std::shared_ptr<protocol::ToolCall>& call) {
  const std::string& name = upstream.client->config().name;
  std::string args_text = deps_.scrubber->Scrub(base::DumpJson(call->arguments()));
  auto args_tokens = static_cast<int64_t>(deps_.counter->Count(args_text));
  folding::SessionKey key = deps_.session_key(call->session());
  auto charged = deps_.ledger->Charge(
      key, "", folding::ChargeRecord{kToolCallKind, call->tool_name(), args_text, args_tokens});
  if (!charged.ok()) {
    base::LogWarn(
        base::StrCat("gateway: charging ", call->tool_name(), ": ", charged.status().message()));
  } else if (charged->outcome.exhausted) {
    protocol::ToolResult result = protocol::ErrorResult(folding::ExhaustedText(charged->outcome));
    if (deps_.observer != nullptr) {
      deps_.observer->OnProxiedCall(call->session(), charged->outcome.branch_id, call->tool_name(),
                                    args_text, "", args_tokens, 0, true);
    }
    call->Finish(std::move(result));
    return;
  }
  // Without deliver_warnings, a threshold crossed by the arguments is reported with the result.
  std::string args_warning_text =
      charged.ok() && !deps_.deliver_warnings ? charged->warning : std::string();

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
  auto charged = deps_.ledger->Charge(
      key, "", folding::ChargeRecord{kToolResultKind, call->tool_name(), text, tokens});
  std::string branch_id;
  if (!charged.ok()) {
    base::LogWarn(base::StrCat("gateway: charging the result of ", call->tool_name(), ": ",
                               charged.status().message()));
  } else {
    branch_id = charged->outcome.branch_id;
    if (charged->outcome.exhausted) {
      reply = protocol::ErrorResult(folding::ExhaustedText(charged->outcome));
    } else if (!deps_.deliver_warnings) {
      std::string warning = !charged->warning.empty() ? charged->warning : pending_warning;
      if (!warning.empty()) {
        protocol::AppendNotice(reply, warning, protocol::kProxiedNoticesMember);
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
        // The uri is stored as the charge's and the trail event's label: scrubbed like the
        // contents (an upstream's uri may carry a token in its query).
        const std::string label = deps_.scrubber->Scrub(exposed);
        auto charged =
            deps_.ledger->Charge(deps_.session_key(session), "",
                                 folding::ChargeRecord{kResourceReadKind, label, joined, tokens});
        if (charged.ok() && charged->outcome.exhausted) {
          done(absl::ResourceExhaustedError(folding::ExhaustedText(charged->outcome)));
          return;
        }
        if (deps_.observer != nullptr) {
          deps_.observer->OnProxiedCall(session, charged.ok() ? charged->outcome.branch_id : "",
                                        label, "", joined, 0, tokens, false);
        }
        done(std::move(contents));
      });
}

}  // namespace contextd::gateway
