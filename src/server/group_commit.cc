#include "server/group_commit.h"

#include <chrono>
#include <utility>

#include "base/logging.h"
#include "base/str_cat.h"

namespace contextd::server {

GroupCommit::GroupCommit(base::Executor& executor, std::function<absl::Status()> commit,
                         std::function<void(const absl::Status&)> on_failure, Metrics* metrics,
                         std::function<void()> after_delivery)
    : executor_(executor),
      commit_(std::move(commit)),
      on_failure_(std::move(on_failure)),
      metrics_(metrics),
      after_delivery_(std::move(after_delivery)) {}

void GroupCommit::OnGroupOpen() {
  open_.store(true);
  // Behind the tasks already queued: under load one commit covers all of them, and with one
  // request in flight the commit follows it at once.
  executor_.Post([this] { Flush(); });
}

void GroupCommit::Hold(std::function<void(const absl::Status&)> deliver) {
  held_.push_back(std::move(deliver));
  ++held_total_;
}

void GroupCommit::Flush() {
  // Cleared before the commit: a group opened after it (by a writer off the executor) sets it
  // again. Nothing open: nothing was written since the last commit (and nothing is held).
  if (!open_.exchange(false)) return;
  const auto started = std::chrono::steady_clock::now();
  absl::Status committed = commit_();
  std::vector<std::function<void(const absl::Status&)>> held;
  held.swap(held_);
  if (metrics_ != nullptr) {
    metrics_->GroupCommitted(
        committed.ok(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        static_cast<double>(held.size()));
  }
  if (committed.ok()) {
    ++commits_;
  } else {
    ++failures_;
    base::LogError(base::StrCat("group commit failed; ", held.size(),
                                " held message(s) answer with an error: ", committed.message()));
    if (on_failure_) on_failure_(committed);
  }
  for (auto& deliver : held) deliver(committed);
  if (committed.ok() && after_delivery_) after_delivery_();
}

}  // namespace contextd::server
