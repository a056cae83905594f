// GroupCommit: one database commit per batch of engine work instead of one per write, without ever
// acknowledging a change before it is durable. The database opens a group transaction at the
// first write after a commit and tells GroupCommit, which queues one flush task behind the work
// already waiting on the engine executor; every message the MCP sessions send meanwhile is held
// (it is the protocol::OutboundGate of the McpServer) and goes out, in order, once the flush has
// committed. Thread-safety: OnGroupOpen may be called from any thread; the rest runs on the
// executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "protocol/mcp_server.h"
#include "server/metrics.h"

namespace contextd::server {

class GroupCommit final : public protocol::OutboundGate {
 public:
  // `commit` commits the open group (store::Backend::CommitGroup) and says whether it stuck.
  // `on_failure` runs on the executor after a failed commit, before the held messages go out
  // (the server drops the engine's cached state there, so that it follows the store again).
  // `executor` must outlive this object, and tasks it queued must not run after its destruction
  // (destroy it after the executor has stopped, or Flush() first and post nothing more).
  // `metrics` (may be null) must outlive this object. `after_delivery` (may be null) runs on
  // the executor after a successful commit's held messages went out: upkeep that may take a
  // while (store::Backend::AfterGroupDelivered) without delaying them.
  GroupCommit(base::Executor& executor, std::function<absl::Status()> commit,
              std::function<void(const absl::Status&)> on_failure, Metrics* metrics = nullptr,
              std::function<void()> after_delivery = nullptr);
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // A group transaction was opened: messages are held from now on, and one flush is queued on
  // the executor. Any thread (the database calls it under its own mutex, so it only posts).
  void OnGroupOpen();

  // protocol::OutboundGate: holding while a group is open.
  bool Holding() const override { return open_.load(); }
  void Hold(std::function<void(const absl::Status&)> deliver) override;

  // Commits the open group now (nothing to do if none is open) and delivers what was held with
  // its outcome. The queued flush task calls it; the server also calls it at shutdown. Executor
  // only.
  void Flush();

  // Groups committed and failed so far, and messages held in all (for metrics and tests).
  int64_t commits() const { return commits_; }
  int64_t failures() const { return failures_; }
  int64_t held_total() const { return held_total_; }

 private:
  base::Executor& executor_;
  std::function<absl::Status()> commit_;
  std::function<void(const absl::Status&)> on_failure_;
  Metrics* metrics_;
  std::function<void()> after_delivery_;
  std::atomic<bool> open_{false};
  std::vector<std::function<void(const absl::Status&)>> held_;  // executor only
  int64_t commits_ = 0;
  int64_t failures_ = 0;
  int64_t held_total_ = 0;
};

}  // namespace contextd::server
