// Gateway: contextd in front of the agent's other MCP servers ("upstreams"). For each configured
// upstream it runs an UpstreamClient and re-exposes the upstream's tools as `<name>__<tool>`,
// its prompts as `<name>__<prompt>`, its resources as `contextd+upstream://<name>/<original uri>`
// (reversible: strip the prefix) and its resource templates likewise prefixed; what vanishes
// from a re-listed catalog is removed again. Every tools/call is intercepted:
//   arguments: serialized -> scrubbed -> counted -> charged ("tool_call") -> forwarded (unscrubbed)
//   result:    text blocks and structuredContent strings scrubbed in place -> joined text counted
//              -> charged ("tool_result") -> InterceptionObserver -> budget warning/exhaustion
//              applied -> reply.
// resources/read and prompts/get results are scrubbed, counted and charged the same way.
// Progress, cancellation, log messages and server-to-client requests (sampling, elicitation,
// roots) of a forwarded call are relayed between the client whose call caused them and the
// upstream.
// Thread-safety: construct anywhere; Start/Stop and everything else run on the engine executor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "folding/branch_ledger.h"
#include "gateway/upstream_client.h"
#include "gateway/upstream_config.h"
#include "protocol/mcp_server.h"
#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::gateway {

// URI scheme prefix of re-exposed upstream resources: "contextd+upstream://<name>/<uri>".
inline constexpr std::string_view kResourceScheme = "contextd+upstream://";
// Separator between the upstream name and the upstream's tool/template name.
inline constexpr std::string_view kNameSeparator = "__";

// Told about every proxied call after interception, before the reply is sent (the trail
// recorder implements it). Called on the executor; must not block.
class InterceptionObserver {
 public:
  virtual ~InterceptionObserver() = default;
  // `branch_id`: the branch the result was charged to ("" = session root). `tool`:
  // "<upstream>__<tool>". Args and result are the scrubbed texts that were charged; `is_error`
  // is the isError of the reply (upstream error, unavailable, or budget exhausted).
  virtual void OnProxiedCall(const protocol::SessionInfo& session, std::string_view branch_id,
                             std::string_view tool, std::string_view scrubbed_args,
                             std::string_view scrubbed_result, int64_t args_tokens,
                             int64_t result_tokens, bool is_error) = 0;
};

// What the gateway uses; everything must outlive the Gateway.
struct GatewayDeps {
  protocol::McpServer* server = nullptr;
  // Charges each proxied call to the session's active branch (folding::EngineBranchLedger over
  // the engine's BranchManager; called on the executor).
  folding::BranchLedger* ledger = nullptr;
  const tokens::TokenCounter* counter = nullptr;
  const scrub::Scrubber* scrubber = nullptr;
  // The owner of a session's branches (tools::SessionKeyFor).
  std::function<folding::SessionKey(const protocol::SessionInfo&)> session_key;
  // Optional: the trail recorder.
  InterceptionObserver* observer = nullptr;
  // Optional: adds the budget warnings pending for the call's session to a reply (and logs them
  // to the client): tools::FoldingTools::DeliverWarnings, so that a warning reaches the agent
  // exactly once whichever tool's reply carries it. When null, a charge that crosses the warning
  // threshold appends the ledger's warning (folding::WarningText) itself and logs it at level
  // warning.
  std::function<void(protocol::ToolCall&, protocol::ToolResult&)> deliver_warnings;
  // Restart delays of crashed upstreams.
  UpstreamClient::Backoff backoff;
};

class Gateway {
 public:
  // `upstreams` must each pass ValidateUpstream and have distinct names (InvalidArgument from
  // Create otherwise).
  static absl::StatusOr<std::unique_ptr<Gateway>> Create(GatewayDeps deps,
                                                         std::vector<UpstreamConfig> upstreams);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Starts every upstream (asynchronously: their tools are registered, and list_changed sent,
  // as each becomes ready). Executor only.
  void Start();
  // Stops every upstream (kills the children) and unregisters their tools, resources, templates
  // and prompts. Executor only.
  void Stop();

  // True when every upstream is ready or has failed its first start (startup may wait for this,
  // bounded, so that the first tools/list already holds the upstream tools). Executor only.
  bool Settled() const;

  // The client of upstream `name`, or null. Executor only (tests, status).
  UpstreamClient* upstream(std::string_view name);

  // "contextd+upstream://<name>/<uri>" for an upstream resource uri.
  static std::string ExposedUri(std::string_view upstream, std::string_view uri);
  // The inverse: {upstream name, original uri}; InvalidArgument for a uri not of that form.
  static absl::StatusOr<std::pair<std::string, std::string>> OriginalUri(std::string_view exposed);

 private:
  struct Upstream {
    std::shared_ptr<UpstreamClient> client;
    std::set<std::string> tools;  // exposed names currently registered
    // Exposed uri / uri template / prompt name -> the upstream's listing entry it was made from
    // (a changed entry is re-registered, a vanished one removed).
    std::map<std::string, Json> resources;
    std::map<std::string, Json> templates;
    std::map<std::string, Json> prompts;
  };
  Gateway(GatewayDeps deps, std::vector<UpstreamConfig> upstreams);

  void OnCatalog(Upstream& upstream);
  // Brings the resources, templates and prompts registered for `upstream` in line with its
  // catalog; returns {resources changed, prompts changed}.
  std::pair<bool, bool> SyncResourcesAndPrompts(Upstream& upstream);
  // Removes everything registered for `upstream` from the server (and notifies).
  void Unregister(Upstream& upstream);
  void GetPrompt(Upstream& upstream, const std::string& upstream_prompt, const std::string& exposed,
                 const std::map<std::string, std::string>& arguments,
                 const protocol::SessionInfo& session, protocol::PromptDone done);
  void CallTool(Upstream& upstream, const std::string& upstream_tool,
                const std::shared_ptr<protocol::ToolCall>& call);
  void FinishCall(const std::shared_ptr<protocol::ToolCall>& call, absl::StatusOr<Json> result,
                  const std::string& upstream_name, const std::string& args_text,
                  int64_t args_tokens, const std::string& pending_warning);
  void ReadResource(Upstream& upstream, const protocol::ResourceRead& read,
                    protocol::ResourceDone done);

  GatewayDeps deps_;
  std::map<std::string, Upstream, std::less<>> upstreams_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Scrubs, in place, the text of one MCP content block (a text block, or an embedded resource's
// text) and returns the scrubbed text; nullopt for blocks without text (images, audio, links).
std::optional<std::string> ScrubContentBlock(const scrub::Scrubber& scrubber, Json& block);

// Scrubs, in place, every text block (and embedded resource text) of an MCP tool result's
// `content` and every string value inside `structuredContent`; returns the text that is counted
// and charged: the text blocks joined by "\n", then structuredContent serialized (if present).
std::string ScrubToolResult(const scrub::Scrubber& scrubber, protocol::ToolResult& result);

}  // namespace contextd::gateway
