// The contextd trail tools (context_view, trail_unfold, trail_search) and resources
// (trail://sessions/{id}, trail://scopes/{id}) as MCP tools on the engine, plus the bridge that
// feeds the folding engine's branch events into the Trail (a scope per branch, folded with the
// branch's summary). Handlers and event callbacks run on the engine executor, where the Trail
// lives. Not thread-safe beyond that.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "folding/branch_store.h"
#include "folding/events.h"
#include "protocol/mcp_server.h"
#include "tokens/token_counter.h"
#include "trail/trail.h"

namespace contextd::tools {

// The trail's owner of a session (same tenant/project/session as the folding engine's key).
trail::SessionRef TrailSessionFor(const protocol::SessionInfo& info);
trail::SessionRef TrailSessionFor(const folding::SessionKey& key);

class TrailTools {
 public:
  // Subscribes to `events` at once (construct it before BranchManager::Recover so that branches
  // force-returned at startup fold their scopes). `branches` supplies descriptions, prompts and
  // summaries (already scrubbed by the engine); `counter` counts them. All must outlive this.
  TrailTools(trail::Trail& trail, folding::EventBus& events, folding::BranchStore& branches,
             const tokens::TokenCounter& counter);
  ~TrailTools();
  TrailTools(const TrailTools&) = delete;
  TrailTools& operator=(const TrailTools&) = delete;

  // Registers the three tools and the two resource templates. AlreadyExists if a name is taken.
  // Each of the tools first folds the session's open auto-scope (FoldAutoScope).
  absl::Status Register(protocol::McpServer& server);

  // The session called a contextd tool: folds its open auto-scope, if any
  // (Trail::FoldAutoScope); a failure is logged (the scope stays open until the next chance).
  // FoldingTools calls it before each of its tools.
  void FoldAutoScope(const protocol::SessionInfo& session);

 private:
  void OnEvent(const folding::BranchEvent& event);
  // The branch `event` is about: the one it carries, else read from the store into `storage`.
  // NotFound if the store has none.
  absl::StatusOr<const folding::Branch*> EventBranch(const folding::BranchEvent& event,
                                                     std::optional<folding::Branch>& storage);
  void View(const std::shared_ptr<protocol::ToolCall>& call);
  void Unfold(const std::shared_ptr<protocol::ToolCall>& call);
  // trail_unfold with `event`: that event (and a tool result's call) of `scope`.
  void UnfoldEvent(const std::shared_ptr<protocol::ToolCall>& call, const trail::Scope& scope,
                   int64_t seq);
  void Search(const std::shared_ptr<protocol::ToolCall>& call);

  trail::Trail& trail_;
  folding::EventBus& events_;
  folding::BranchStore& branches_;
  const tokens::TokenCounter& counter_;
  folding::EventBus::SubscriptionId subscription_ = 0;
};

}  // namespace contextd::tools
