#include <cstdlib>
#include <optional>

#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "folding/text.h"
#include "scrub/private_spans.h"
#include "server/internal/engine.h"
#include "tools/session_key.h"

namespace contextd::server::internal {
namespace {

// Team mode's provider key: the value of the environment variable `env` names (read once, at
// start; never logged). "" when `env` is empty. FailedPrecondition when the variable is unset or
// empty, or when there are no tenant tokens (the key would serve anyone who can connect).
absl::StatusOr<std::string> ProviderKey(std::string_view key, const std::string& env,
                                        const std::map<std::string, std::string>& tokens) {
  if (env.empty()) return std::string();
  const char* value = std::getenv(env.c_str());
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(base::StrCat(
        "config key '", key, "': the environment variable ", env, " is not set"));
  }
  if (tokens.empty()) {
    return absl::FailedPreconditionError(base::StrCat(
        "config key '", key, "': a provider key held by contextd needs tenant tokens "
        "(server.auth_token_file), else anyone who can connect would use it"));
  }
  return std::string(value);
}

}  // namespace

absl::Status BuildModelGateway(const ServerConfig& config,
                               const std::map<std::string, std::string>& bearer_tokens,
                               Engine& engine) {
  const ModelGatewayConfig& mg = config.model_gateway;
  ASSIGN_OR_RETURN(engine.conversations, engine.backend->OpenConversationStore());
  const tokens::TokenCounter* counter = engine.counter.get();
  folding::BranchStore* branches = engine.store.get();
  model::TenantBranchLookup lookup =
      [branches, counter](const std::string& tenant,
                          const std::string& id) -> std::optional<model::BranchFacts> {
    auto branch = branches->Get(id);
    if (!branch.ok()) {
      base::LogWarn(base::StrCat("model gateway: branch lookup: ", branch.status().message()));
      return std::nullopt;
    }
    if (!branch->has_value() || (*branch)->session.tenant != tenant) return std::nullopt;
    const folding::Branch& b = **branch;
    model::BranchFacts facts;
    facts.branch_id = b.id;
    facts.ended = folding::IsTerminal(b.status);
    facts.status = folding::BranchStatusName(b.status);
    facts.finish_reason = b.finish_reason;
    facts.summary = b.summary;
    facts.tokens_used = b.tokens_used;
    facts.tokens_folded = std::max<int64_t>(
        0, b.tokens_used - static_cast<int64_t>(counter->Count(b.summary)));
    return facts;
  };
  // The tokens the model receives inside a branch are charged to it on the engine executor.
  folding::BranchManager* manager = engine.manager.get();
  base::ThreadExecutor* executor = engine.executor.get();
  model::TenantBranchCharger charger =
      [branches, manager, executor](const std::string& tenant, const std::string& id,
                                    const std::string& label, const std::string& excerpt,
                                    int64_t tokens) -> std::optional<model::SpanCharge> {
    auto branch = branches->Get(id);
    if (!branch.ok() || !branch->has_value() || (*branch)->session.tenant != tenant ||
        folding::IsTerminal((*branch)->status)) {
      return std::nullopt;
    }
    folding::SessionKey session = (*branch)->session;
    std::optional<model::SpanCharge> charged;
    executor->RunSync([&] {
      // What the model received inside the branch (built-in tools included), counted by the
      // gateway; `excerpt` feeds a partial summary if this charge exhausts the branch.
      folding::ChargeRecord record{"tool_result", label, excerpt.empty() ? label : excerpt, tokens};
      auto outcome = manager->Charge(session, id, record);
      if (!outcome.ok()) {
        base::LogWarn(base::StrCat("model gateway: charging ", id, ": ", outcome.status().message()));
        return;
      }
      model::SpanCharge result;
      if (outcome->warning_crossed) {
        result.warning = folding::WarningText(id, outcome->used, outcome->allocated);
      }
      result.exhausted = outcome->exhausted;
      charged = result;
    });
    return charged;
  };
  // Built-in tool work (Read, Bash, ...) reaches the trail too: in the branch it was made in, or
  // the root of the session the conversation's branches belong to.
  trail::Trail* trail = engine.trail.get();
  // The trail session a conversation's events belong to: that of its anchor branch, else one
  // named after the conversation.
  auto session_of = [branches](const model::ConversationKey& key, const std::string& anchor) {
    // The request's project (X-Contextd-Project), so that trail_unfold from an MCP session of
    // the same project finds what the gateway recorded.
    trail::SessionRef session{key.tenant, key.project, "model:" + key.conversation};
    if (!anchor.empty()) {
      auto branch = branches->Get(anchor);
      if (branch.ok() && branch->has_value() && (*branch)->session.tenant == key.tenant) {
        const folding::SessionKey& owner = (*branch)->session;
        session = trail::SessionRef{owner.tenant, owner.project, owner.session_id};
      }
    }
    return session;
  };
  model::TenantCallRecorder recorder =
      [session_of, trail, executor](const model::ConversationKey& key, const std::string& anchor,
                                    const std::vector<model::ModelToolCall>& calls) {
        trail::SessionRef session = session_of(key, anchor);
        // Posted, not waited for: the trail need not hold the calls before the model request
        // leaves (the conversation's own decisions are durable by then).
        executor->Post([trail, session, calls] {
          for (const model::ModelToolCall& call : calls) {
            auto recorded = trail->RecordToolCall(session, call.branch_id, call.tool,
                                                  call.arguments, call.result,
                                                  call.tokens_arguments, call.tokens_result,
                                                  call.is_error);
            if (!recorded.ok() && !call.branch_id.empty()) {
              // The branch's scope is gone (folded meanwhile): the session root keeps it.
              recorded = trail->RecordToolCall(session, "", call.tool, call.arguments,
                                               call.result, call.tokens_arguments,
                                               call.tokens_result, call.is_error);
            }
            if (!recorded.ok()) {
              base::LogWarn(base::StrCat("trail: recording ", call.tool, " from the model "
                                         "gateway: ", recorded.status().message()));
            }
          }
        });
      };
  // Auto-fold keeps each result it folds in the trail first (found where the recorder above put
  // it, else recorded now), on the executor, after the recordings posted before it.
  model::TenantResultArchiver archiver =
      [session_of, trail, executor](const model::ConversationKey& key, const std::string& anchor,
                                    const std::vector<model::ModelToolCall>& calls) {
        trail::SessionRef session = session_of(key, anchor);
        std::vector<std::optional<model::TrailRef>> refs(calls.size());
        executor->RunSync([&] {
          for (size_t i = 0; i < calls.size(); ++i) {
            const model::ModelToolCall& call = calls[i];
            auto kept = trail->FindOrRecordToolCall(session, "", call.tool, call.arguments,
                                                    call.result, call.tokens_arguments,
                                                    call.tokens_result, call.is_error);
            if (!kept.ok()) {
              base::LogWarn(base::StrCat("trail: keeping an auto-folded ", call.tool,
                                         " result: ", kept.status().message()));
              continue;
            }
            refs[i] = model::TrailRef{kept->scope_id, kept->result_seq};
          }
        });
        return refs;
      };
  model::ContextManagerOptions context_options;
  context_options.auto_fold = mg.auto_fold;
  engine.context_manager = std::make_unique<model::ContextManager>(
      context_options, *engine.conversations, *engine.scrubber, *counter, std::move(lookup),
      std::move(charger), std::move(recorder), std::move(archiver));
  // One pooled client per upstream: each has its own CA file and timeouts.
  auto client_for = [](const std::string& ca_file, int64_t connect_ms, int64_t response_s,
                       int64_t read_s) {
    transport::HttpClientOptions client_options;
    client_options.ca_file = ca_file;
    client_options.connect_timeout = std::chrono::milliseconds(connect_ms);
    client_options.response_timeout = std::chrono::seconds(response_s);
    client_options.read_timeout = std::chrono::seconds(read_s);
    return transport::HttpClient::Create(client_options);
  };
  ASSIGN_OR_RETURN(engine.model_client,
                   client_for(mg.anthropic_ca_file, mg.anthropic_connect_timeout_ms,
                              mg.anthropic_response_timeout_seconds,
                              mg.anthropic_read_timeout_seconds));
  ASSIGN_OR_RETURN(engine.openai_client,
                   client_for(mg.openai_ca_file, mg.openai_connect_timeout_ms,
                              mg.openai_response_timeout_seconds, mg.openai_read_timeout_seconds));
  model::ModelGatewayOptions options;
  options.anthropic_base_url = mg.anthropic_base_url;
  options.openai_base_url = mg.openai_base_url;
  options.max_body_bytes = static_cast<size_t>(mg.max_body_bytes);
  options.tenant_tokens = bearer_tokens;
  ASSIGN_OR_RETURN(options.anthropic_api_key,
                   ProviderKey("model_gateway.anthropic.api_key_env", mg.anthropic_api_key_env,
                               bearer_tokens));
  ASSIGN_OR_RETURN(options.openai_api_key,
                   ProviderKey("model_gateway.openai.api_key_env", mg.openai_api_key_env,
                               bearer_tokens));
  options.project_of_header = [](std::string_view value) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(tools::ProjectRef project, tools::ProjectFromHeader(value));
    return project.id;
  };
  Metrics* metrics = &engine.metrics;
  engine.model_gateway = std::make_unique<model::ModelGateway>(
      options, *engine.context_manager, *engine.conversations, *engine.model_client,
      *engine.openai_client,
      [metrics](const model::ModelRequestReport& report) {
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
        r.unfoldable = report.unfoldable;
        metrics->ModelRequestDone(r);
      });
  if (!options.anthropic_api_key.empty() || !options.openai_api_key.empty()) {
    base::LogInfo(base::StrCat("model gateway: team mode (provider key held by contextd) for",
                               options.anthropic_api_key.empty() ? "" : " anthropic",
                               options.openai_api_key.empty() ? "" : " openai"));
  }
  base::LogInfo(base::StrCat("model gateway: /v1/messages -> ", mg.anthropic_base_url,
                             ", /v1/chat/completions and /v1/responses -> ",
                             mg.openai_base_url));
  return absl::OkStatus();
}

}  // namespace contextd::server::internal
