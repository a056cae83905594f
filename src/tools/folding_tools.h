// The contextd folding tools (branch_create, branch_return, branch_status) as MCP tools on the
// engine: JSON Schemas, argument mapping, reply text + structuredContent, budget warnings
// delivered in the next reply inside the branch and as notifications/message. Handlers run on the
// engine executor, where the BranchManager lives. Not thread-safe beyond that.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "protocol/mcp_server.h"
#include "scrub/scrubber.h"
#include "tools/session_key.h"
#include "tools/tool_metrics.h"

namespace contextd::tools {

class MemoryTools;

class FoldingTools {
 public:
  // `manager`, `events`, `metrics` and `scrubber` must outlive this object (and the McpServer's
  // calls). Error messages, which may quote the agent's input, pass through `scrubber`.
  FoldingTools(folding::BranchManager& manager, folding::EventBus& events, ToolMetrics& metrics,
               const scrub::Scrubber& scrubber);
  ~FoldingTools();
  FoldingTools(const FoldingTools&) = delete;
  FoldingTools& operator=(const FoldingTools&) = delete;

  // Registers the three tools on `server`. AlreadyExists if a name is taken.
  absl::Status Register(protocol::McpServer& server);

  // Runs `hook` on the executor at the start of each of the three tools' calls, before the
  // tool acts (the server folds the session's auto-scope: TrailTools::FoldAutoScope). Set it
  // before calls arrive; null (the default) runs nothing.
  void SetBeforeCall(std::function<void(const protocol::SessionInfo&)> hook);

  // Memories for new branches and distillation of returned ones (null: none). Set it before calls
  // arrive; `memory` must outlive this object.
  void SetMemory(MemoryTools* memory) { memory_ = memory; }

  // What the model gateway sent while a branch was open (model/branch_view.h): requests in the
  // isolated and the inherited view, and the tokens the isolated view left out.
  struct BranchViews {
    int64_t isolated_requests = 0;
    int64_t inherited_requests = 0;
    int64_t tokens_spared = 0;
  };
  using BranchViewsSource =
      std::function<std::optional<BranchViews>(const std::string& tenant, const std::string& id)>;
  // branch_status shows each branch's views (`model_views`) from `source` (set by the server
  // when the model gateway runs; null, the default: not shown). Set it before calls arrive.
  void SetBranchViews(BranchViewsSource source) { branch_views_ = std::move(source); }

  // Drops what is kept for a session that ended (its undelivered warnings). Executor only.
  void ForgetSession(const protocol::SessionInfo& info);

  // Appends the notices pending for the call's session (budget warnings, branches force-returned
  // by their deadline) to `result` (a text block each, and the structured result's array member
  // `structured_key`, see protocol/tool_notices.h) and sends each as a notifications/message at
  // level warning. Executor only.
  void DeliverWarnings(protocol::ToolCall& call, protocol::ToolResult& result,
                       std::string_view structured_key);

 private:
  void Create(const std::shared_ptr<protocol::ToolCall>& call);
  void Return(const std::shared_ptr<protocol::ToolCall>& call);
  void Status(const std::shared_ptr<protocol::ToolCall>& call);
  void OnEvent(const folding::BranchEvent& event);
  // Finishes `call` with an isError result holding `status`'s message, scrubbed.
  void FinishWithError(protocol::ToolCall& call, const absl::Status& status);

  folding::BranchManager& manager_;
  folding::EventBus& events_;
  ToolMetrics& metrics_;
  const scrub::Scrubber& scrubber_;
  folding::EventBus::SubscriptionId subscription_ = 0;
  std::function<void(const protocol::SessionInfo&)> before_call_;
  BranchViewsSource branch_views_;
  MemoryTools* memory_ = nullptr;
  // Warnings raised by charges, by session, until a reply in that session carries them.
  std::map<std::string, std::vector<std::string>> pending_warnings_;
};

}  // namespace contextd::tools
