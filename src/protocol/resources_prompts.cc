// Resources, resource templates, prompts and completion: McpSession's resources/read,
// resources/subscribe and unsubscribe, prompts/get and completion/complete, and McpServer's
// registry and listings of them. Their list methods and notifications are routed in
// mcp_server.cc.
#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/internal/mcp_session.h"
#include "protocol/internal/strings.h"
#include "protocol/mcp_constants.h"
#include "protocol/mcp_server.h"

namespace contextd::protocol {

using internal::Cat;
using internal::kNullId;
using internal::Msg;
using internal::RunOn;

namespace {

constexpr size_t kMaxCompletionValues = 100;

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
        return absl::InvalidArgumentError(Cat("uri template has adjacent variables: ", tmpl));
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

}  // namespace

// ------------------------------------------------------------------------------------------------
// McpSession: resources, prompts and completion

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
    ReplyError(m.id, kInvalidParams, Cat("invalid params: ", m.method, " needs a string \"uri\""));
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
                 Cat("invalid params: missing required argument '", arg.name, "' of prompt ",
                     prompt->definition.name));
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
  const std::string value = arg.contains(wire::kValue) && arg[wire::kValue].is_string()
                                ? arg[wire::kValue].get<std::string>()
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

// ------------------------------------------------------------------------------------------------
// McpServer: the resource, template, prompt and completion registry

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
    return absl::InvalidArgumentError(
        "a resource template needs a uriTemplate, a name and a reader");
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
  return AddAsyncPrompt(
      std::move(definition),
      [handler = std::move(handler)](const std::map<std::string, std::string>& arguments,
                                     const SessionInfo& session,
                                     PromptDone done) { done(handler(arguments, session)); });
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
  auto it = std::find_if(templates_.begin(), templates_.end(),
                         [&](const auto& t) { return t->definition.uri_template == uri_template; });
  if (it == templates_.end())
    return absl::NotFoundError(Cat("no resource template ", uri_template));
  templates_.erase(it);
  return absl::OkStatus();
}

absl::Status McpServer::AddCompletion(std::string_view ref_type, std::string_view ref,
                                      std::string_view argument, CompletionProvider provider) {
  if ((ref_type != wire::kRefPrompt && ref_type != wire::kRefResource) || ref.empty() ||
      argument.empty() || !provider) {
    return absl::InvalidArgumentError(
        "a completion needs ref type ref/prompt or ref/resource, a ref, an argument and a "
        "provider");
  }
  std::lock_guard<std::mutex> lock(mu_);
  completions_[CompletionKey(ref_type, ref, argument)] = std::move(provider);
  return absl::OkStatus();
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

}  // namespace contextd::protocol
