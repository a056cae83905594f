// MemoryTools: the ReasoningBank as MCP tools (memory_search, memory_record, memory_feedback,
// memory_outcome) and its two hooks into branches: retrieval for branch_create (on the thread
// that received the call) and distillation of returned branches (queued from branch events).
// Every bank call that writes runs on the tools' own worker thread, never on the engine executor:
// the memory store has its own SQLite connection, whose writes would wait on the engine's open
// group transaction. Handlers and event callbacks run on the engine executor; Retrieve on any
// thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "folding/branch.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "memory/memory_bank.h"
#include "protocol/mcp_server.h"
#include "tools/tool_metrics.h"
#include "trail/trail.h"

namespace contextd::tools {

// What MemoryTools reads of the `memory:` configuration (server::MemoryConfig).
struct MemoryToolsOptions {
  bool extract_memory = false;  // distil every returned branch, not only those that ask
  std::string extract_scope = "project";
};

// What retrieval found for one branch_create: candidates best first, or a warning saying why
// there are none (the branch is created either way).
struct MemoryRetrieval {
  std::vector<folding::InjectedContext> candidates;
  std::string warning;
};

class MemoryTools {
 public:
  // Everything must outlive this object. `executor` is the engine's.
  MemoryTools(memory::MemoryBank& bank, folding::BranchManager& manager, trail::Trail& trail,
              folding::EventBus& events, base::Executor& executor, ToolMetrics& metrics,
              const MemoryToolsOptions& options);
  // Stops the worker (queued work is dropped) and unsubscribes.
  ~MemoryTools();
  MemoryTools(const MemoryTools&) = delete;
  MemoryTools& operator=(const MemoryTools&) = delete;

  // Registers the four tools. AlreadyExists if a name is taken.
  absl::Status Register(protocol::McpServer& server);

  // Candidates to inject into a branch of `session` whose task is `description` and `prompt`
  // (both scrubbed). Any thread. Never fails: a failure is a warning and no candidates.
  MemoryRetrieval Retrieve(const protocol::SessionInfo& session, std::string_view description,
                           std::string_view prompt) const;
  // Candidates for a task of one of `tenant`'s model conversations in `project` (lessons at the
  // start of a task, model/lessons.h). Any thread; never fails, as Retrieve.
  MemoryRetrieval RetrieveForTask(const std::string& tenant, const std::string& project,
                                  std::string_view task) const;
  // Counts the use of what model conversation `conversation` received (on the worker; history
  // actor "conversation:<id>"). Any thread.
  void NoteConversationInjected(const std::string& tenant, const std::string& project,
                                const std::string& conversation, std::vector<std::string> ids,
                                int64_t tokens);
  // Counts the use of what branch `branch_id` received (on the worker). Executor only.
  void NoteInjected(const protocol::SessionInfo& session, const folding::CreateResult& created);
  // branch_return's extract_memory when the agent does not say (memory.extract_memory).
  bool extract_by_default() const { return options_.extract_memory; }

  // Indexes the stored vectors (and embeds items that have none) on the worker, with an embedder.
  void LoadVectors();

 private:
  // Runs `fn` (which finishes `call`) on the worker; if it throws, `call` finishes with an error
  // result instead of staying unanswered.
  void OnWorker(std::shared_ptr<protocol::ToolCall> call, std::function<void()> fn);
  MemoryRetrieval RetrieveAs(const memory::Caller& caller, const std::string& query) const;
  void OnBranchEvent(const folding::BranchEvent& event);
  // Reads the branch's trail events (executor) and queues its distillation (worker).
  void QueueExtraction(folding::SessionKey session, folding::Branch branch, bool succeeded);
  void Search(const std::shared_ptr<protocol::ToolCall>& call);
  void Record(const std::shared_ptr<protocol::ToolCall>& call);
  void Rate(const std::shared_ptr<protocol::ToolCall>& call, bool outcome);
  // memory_outcome without memory_id: credits the items injected into the caller's task (its
  // active branch, else its project's model conversations) and not yet credited.
  void CreditTask(const std::shared_ptr<protocol::ToolCall>& call, const folding::SessionKey& key,
                  const memory::Caller& caller, bool succeeded);
  // Remembers `ids` as injected into `task` (a branch id or ProjectTask) until credited; `into`
  // is the actor their injection's history entry named (the branch, "conversation:<id>").
  void AwaitCredit(const std::string& task, const std::vector<std::string>& ids,
                   const std::string& into);
  static std::string ProjectTask(const std::string& tenant, const std::string& project);

  memory::MemoryBank& bank_;
  folding::BranchManager& manager_;
  trail::Trail& trail_;
  folding::EventBus& events_;
  base::Executor& executor_;
  ToolMetrics& metrics_;
  MemoryToolsOptions options_;
  memory::Scope extract_scope_ = memory::Scope::kProject;
  folding::EventBus::SubscriptionId subscription_ = 0;
  // Items injected and not yet credited, by task (AwaitCredit). In memory only: after a restart
  // memory_outcome names its item. Bounded: past the limit the first key in order is dropped.
  static constexpr size_t kMaxUncreditedTasks = 4096;
  std::mutex credit_mu_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> uncredited_;
  std::unique_ptr<base::ThreadExecutor> worker_;
};

}  // namespace contextd::tools
