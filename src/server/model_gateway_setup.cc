#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "server/internal/engine.h"
#include "server/memory_lessons.h"
#include "tools/session_key.h"

namespace contextd::server::internal {
namespace {

// Team mode's key for `provider`: the value of the environment variable `env` names (read once,
// at start; never logged). "" when `env` is empty. FailedPrecondition when the variable is unset or
// empty, or when there are no tenant tokens (the key would serve anyone who can connect).
absl::StatusOr<std::string> ProviderKey(std::string_view provider, const std::string& env,
                                        const std::map<std::string, std::string>& tokens) {
  if (env.empty()) return std::string();
  const char* value = std::getenv(env.c_str());
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(
        BadModelProviderKey(provider, "api_key_env",
                            base::StrCat("the environment variable ", env, " is not set"))
            .message());
  }
  if (tokens.empty()) {
    return absl::FailedPreconditionError(
        BadModelProviderKey(provider, "api_key_env",
                            "a provider key held by contextd needs tenant tokens "
                            "(server.auth_token_file), else anyone who can connect would use it")
            .message());
  }
  return std::string(value);
}

// What /metrics counts of one model request.
Metrics::ModelRequest MetricsOf(const model::ModelRequestReport& report) {
  Metrics::ModelRequest r;
  r.api = report.usage.api;
  r.tenant = report.usage.key.tenant;
  r.project = report.usage.project;
  r.status = report.usage.status;
  r.outcome = report.outcome;
  r.tokens_before = static_cast<double>(report.usage.tokens_before);
  r.tokens_after = static_cast<double>(report.usage.tokens_after);
  r.folds_applied = report.applied.folds_applied;
  r.folds_new = report.applied.folds_new;
  r.redactions_new = report.applied.redactions_new;
  for (model::SkipReason reason : report.applied.skipped) {
    r.skipped.emplace_back(model::SkipReasonName(reason));
  }
  r.input = static_cast<double>(report.usage.input_tokens);
  r.cache_read = static_cast<double>(report.usage.cache_read_input_tokens);
  r.cache_creation = static_cast<double>(report.usage.cache_creation_input_tokens);
  r.output = static_cast<double>(report.usage.output_tokens);
  r.seconds = static_cast<double>(report.usage.duration_ms) / 1000.0;
  r.at_unix_seconds = static_cast<double>(report.usage.at_ms) / 1000.0;
  r.fallback = report.applied.fallback;
  r.auto_fold_outcome = report.applied.auto_fold_outcome;
  r.auto_folds_new = report.applied.auto_folds_new;
  r.auto_fold_tokens = static_cast<double>(report.applied.auto_fold_tokens);
  r.thinking_removed = report.applied.thinking_removed;
  r.thinking_removed_tokens = static_cast<double>(report.applied.thinking_removed_tokens);
  r.lessons = static_cast<double>(report.applied.lessons_injected.size());
  r.lessons_tokens = static_cast<double>(report.applied.lessons_tokens);
  r.view = report.applied.view;
  r.view_tokens_spared = static_cast<double>(report.applied.view_tokens_spared);
  r.unfoldable = report.unfoldable;
  return r;
}

}  // namespace

absl::Status BuildModelGateway(const ServerConfig& config,
                               const std::map<std::string, std::string>& bearer_tokens,
                               Engine& engine) {
  const ModelGatewayConfig& mg = config.model_gateway;
  ASSIGN_OR_RETURN(engine.conversations, engine.backend->OpenConversationStore());
  model::ContextManagerOptions context_options;
  context_options.auto_fold = mg.auto_fold;
  // Validated with the rest of context_folding (FoldingConfig::Validate).
  ASSIGN_OR_RETURN(context_options.branch_view.view,
                   model::ParseBranchView(config.folding.branch_view));
  context_options.branch_view.keep_opening = config.folding.branch_view_keep_opening;
  // Branch lookups, span charges, built-in tool calls and auto-fold's archive go through the
  // ledger the MCP gateway charges through too.
  context_options.lessons.enabled = config.memory.session_injection;
  context_options.lessons.max_tokens = config.memory.session_injection_tokens;
  if (engine.memory_tools && config.memory.session_injection &&
      config.memory.session_injection_tokens > 0) {
    engine.lessons = std::make_unique<MemoryLessons>(*engine.memory_tools, *engine.counter);
  }
  engine.context_manager = std::make_unique<model::ContextManager>(
      context_options, *engine.conversations, *engine.scrubber, *engine.counter,
      engine.ledger.get(), engine.lessons.get());
  // One pooled client per provider: each has its own CA file and timeouts.
  model::ModelGatewayOptions options;
  std::map<std::string, transport::HttpClient*> clients;
  for (const auto& [name, provider] : mg.providers) {
    transport::HttpClientOptions client_options;
    client_options.ca_file = provider.ca_file;
    client_options.connect_timeout = std::chrono::milliseconds(provider.connect_timeout_ms);
    client_options.response_timeout = std::chrono::seconds(provider.response_timeout_seconds);
    client_options.read_timeout = std::chrono::seconds(provider.read_timeout_seconds);
    ASSIGN_OR_RETURN(engine.model_clients[name], transport::HttpClient::Create(client_options));
    clients[name] = engine.model_clients[name].get();
    model::ModelProviderOptions& upstream = options.providers[name];
    upstream.base_url = provider.base_url;
    ASSIGN_OR_RETURN(upstream.api_key, ProviderKey(name, provider.api_key_env, bearer_tokens));
  }
  options.max_body_bytes = static_cast<size_t>(mg.max_body_bytes);
  options.tenant_tokens = bearer_tokens;
  options.project_of_header = [](std::string_view value) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(tools::ProjectRef project, tools::ProjectFromHeader(value));
    return project.id;
  };
  Metrics* metrics = &engine.metrics;
  ASSIGN_OR_RETURN(
      engine.model_gateway,
      model::ModelGateway::Create(options, *engine.context_manager, *engine.conversations, clients,
                                  [metrics](const model::ModelRequestReport& report) {
                                    metrics->ModelRequestDone(MetricsOf(report));
                                  }));
  std::string team_mode;
  std::string routes;
  for (const auto& [name, provider] : options.providers) {
    if (!provider.api_key.empty()) team_mode += " " + name;
  }
  for (const model::ModelApiRow& api : model::ModelApis()) {
    for (const model::ModelApiRoute& route : api.routes) {
      routes += base::StrCat(routes.empty() ? "" : ", ", route.path, " -> ",
                             mg.providers.at(std::string(api.provider)).base_url);
    }
  }
  if (!team_mode.empty()) {
    base::LogInfo(
        base::StrCat("model gateway: team mode (provider key held by contextd) for", team_mode));
  }
  base::LogInfo(base::StrCat("model gateway: ", routes));
  return absl::OkStatus();
}

}  // namespace contextd::server::internal
