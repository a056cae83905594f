// BranchManager: how branches end other than by branch_return (force-returns by budget, deadline
// or a parent's end, with their partial summaries) and how they come back after a restart.
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "folding/branch_manager.h"
#include "folding/internal/branch_txn.h"
#include "folding/internal/sv.h"
#include "folding/text.h"
#include "scrub/private_spans.h"

namespace contextd::folding {
namespace {

using internal::EventFor;
using internal::kRecentExcerpts;
using internal::Sv;

// Characters of an excerpt.
constexpr size_t kExcerptChars = 160;
// Bytes of a record scrubbed to make its excerpt: enough that a secret starting inside the
// excerpt is scrubbed whole (PEM keys are a few KB), without scrubbing megabytes on the executor.
constexpr size_t kExcerptScrubWindow = 16384;
// Characters of the description quoted in a partial summary.
constexpr size_t kSummaryDescriptionChars = 100;

}  // namespace

absl::Status BranchManager::ReloadFromStore() {
  CheckOnExecutor();
  for (auto& [id, node] : nodes_) {
    if (node.timer != 0) executor_.CancelTimer(node.timer);
  }
  nodes_.clear();
  sessions_.clear();
  active_count_ = 0;
  ASSIGN_OR_RETURN(std::vector<Branch> live, store_.ListLive());
  for (const Branch& b : live) {
    RETURN_IF_ERROR(EnsureSession(b.session).status());
  }
  return absl::OkStatus();
}

std::string BranchManager::MakeExcerpt(std::string_view text) const {
  std::string_view window = text.substr(0, std::min(text.size(), kExcerptScrubWindow));
  // Do not cut inside a UTF-8 sequence.
  while (window.size() < text.size() && !window.empty() &&
         (static_cast<unsigned char>(text[window.size()]) & 0xC0) == 0x80) {
    window.remove_suffix(1);
  }
  // Private spans withheld before the scrub (the excerpt is stored). The window is a prefix:
  // a span it cuts keeps its opening tag and is withheld to the window's end.
  std::string scrubbed = scrubber_.Scrub(scrub::WithholdPrivate(window));
  std::string line;
  line.reserve(std::min(scrubbed.size(), kExcerptChars * 4));
  bool space = false;
  for (char c : scrubbed) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space) line.push_back(' ');
    space = false;
    line.push_back(c);
    if (line.size() > kExcerptChars * 4) break;
  }
  std::string_view cut = Utf8Prefix(line, kExcerptChars);
  bool truncated = cut.size() < line.size() || window.size() < text.size();
  // A cut inside a withheld marker closes it again (the marker holds nothing private; this
  // keeps what follows the excerpt in a partial summary from being withheld with it).
  std::string out = scrub::WithholdPrivate(cut);
  if (truncated) out += "...";
  return out;
}

std::string BranchManager::PartialSummary(const Branch& b, const std::deque<Excerpt>& recent,
                                          int64_t records_total, BranchStatus status,
                                          std::string_view reason) const {
  std::string_view desc = Utf8Prefix(b.description, kSummaryDescriptionChars);
  std::string header =
      absl::StrCat("[partial summary, written by contextd] Branch ", b.id, " (\"",
                   scrub::WithholdPrivate(desc), desc.size() < b.description.size() ? "..." : "",
                   "\") ended with status ", BranchStatusName(status), ": ", Sv(reason), ".");
  std::vector<std::string> lines;
  for (const Excerpt& e : recent) {
    lines.push_back(absl::StrCat("- ", e.kind, e.label.empty() ? "" : " ", e.label, ": ", e.text));
  }
  auto compose = [&](size_t keep) {
    if (records_total == 0) return absl::StrCat(header, " Nothing was recorded in it.");
    std::string out = header;
    if (keep == 0) {
      absl::StrAppend(&out, " ", records_total, " records omitted.");
      return out;
    }
    if (static_cast<int64_t>(keep) < records_total) {
      absl::StrAppend(&out, "\nLast ", keep, " of ", records_total, " records:");
    } else {
      absl::StrAppend(&out, "\nRecorded:");
    }
    for (size_t i = lines.size() - keep; i < lines.size(); ++i)
      absl::StrAppend(&out, "\n", lines[i]);
    return out;
  };
  std::string text;
  for (size_t keep = lines.size();; --keep) {
    text = compose(keep);
    if (static_cast<int64_t>(counter_.Count(text)) <= kPartialSummaryMaxTokens || keep == 0) break;
  }
  // Only a pathological counter gets here: cut characters until it fits.
  while (static_cast<int64_t>(counter_.Count(text)) > kPartialSummaryMaxTokens && !text.empty()) {
    text = std::string(Utf8Prefix(text, Utf8Length(text) * 9 / 10));
  }
  return text;
}

absl::StatusOr<RecoverResult> BranchManager::Recover() {
  CheckOnExecutor();
  ASSIGN_OR_RETURN(std::vector<Branch> live, store_.ListLive());
  RecoverResult result;
  if (live.empty()) return result;
  const base::Clock& clock = executor_.clock();
  for (Branch& b : live) {
    ASSIGN_OR_RETURN(auto recent, store_.GetRecentCharges(b.id, kRecentExcerpts));
    std::string id = b.id;
    b.deadline_mono = clock.Now();
    SessionState& state = sessions_[b.session];
    AddNode(std::move(b), state);
    Node& node = nodes_.at(id);
    if (node.timer != 0) {
      executor_.CancelTimer(node.timer);
      node.timer = 0;
    }
    for (ChargeRow& r : recent.rows) {
      node.recent.push_back(Excerpt{std::move(r.kind), std::move(r.label), std::move(r.excerpt)});
    }
    node.records_total = recent.total;
  }
  std::vector<std::string> order;
  for (auto& [id, node] : nodes_) order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return nodes_.at(a).branch.depth > nodes_.at(b).branch.depth;
  });
  Txn txn(*this);
  for (const std::string& id : order) {
    const Branch& b = nodes_.at(id).branch;
    absl::Status st = CheckTransition(id, txn.StatusOf(id), BranchStatus::kFailed);
    if (!st.ok()) continue;
    FinishInTxn(txn, id, BranchStatus::kFailed, "server restarted", std::nullopt);
    result.force_returned.push_back(b.id);
  }
  absl::Status committed = txn.Commit();
  // The recovered branches are not kept in memory: sessions reload them from the store.
  for (auto& [id, node] : nodes_) {
    if (node.timer != 0) executor_.CancelTimer(node.timer);
  }
  nodes_.clear();
  sessions_.clear();
  active_count_ = 0;
  RETURN_IF_ERROR(committed);
  return result;
}

void BranchManager::FinishInTxn(Txn& txn, const std::string& id, BranchStatus status,
                                std::string reason, std::optional<std::string> summary) {
  Branch& b = txn.Get(id);
  if (!summary.has_value()) {
    int64_t total = 0;
    std::deque<Excerpt> recent = txn.Excerpts(id, &total);
    summary = PartialSummary(b, recent, total, status, reason);
  }
  b.status = status;
  b.summary = std::move(*summary);
  b.finish_reason = std::move(reason);
  b.finished_at_ms = txn.now_ms();
  txn.Ended(id);
  if (!b.parent_id.empty() && nodes_.count(b.parent_id) > 0) {
    Branch& parent = txn.Get(b.parent_id);
    parent.reserved_for_children -= b.budget_allocated;
    if (parent.reserved_for_children < 0) parent.reserved_for_children = 0;
    parent.tokens_used += b.tokens_used;
    txn.Record(parent.id, "branch_return", b.id,
               absl::StrCat(BranchStatusName(status), ", ", b.tokens_used,
                            " tokens: ", MakeExcerpt(b.summary)),
               b.tokens_used);
  }
  BranchEvent e = EventFor(status == BranchStatus::kCompleted ? BranchEventType::kFolded
                                                              : BranchEventType::kForceReturned,
                           b);
  int64_t summary_tokens = static_cast<int64_t>(counter_.Count(b.summary));
  e.tokens = std::max<int64_t>(0, b.tokens_used - summary_tokens);
  e.text_tokens = summary_tokens;
  e.reason = b.finish_reason;
  txn.Event(std::move(e));
}

std::vector<std::string> BranchManager::ForceReturnDescendants(Txn& txn, const std::string& id,
                                                               const std::string& reason) {
  std::vector<std::string> live;
  std::vector<std::string> stack = nodes_.at(id).children;
  while (!stack.empty()) {
    std::string cur = std::move(stack.back());
    stack.pop_back();
    const Node& node = nodes_.at(cur);
    if (IsLive(txn.StatusOf(cur))) live.push_back(cur);
    stack.insert(stack.end(), node.children.begin(), node.children.end());
  }
  // Deepest first; among equals, the later created (they sit later in `active`) first.
  std::stable_sort(live.begin(), live.end(), [&](const std::string& a, const std::string& b) {
    const Branch& ba = nodes_.at(a).branch;
    const Branch& bb = nodes_.at(b).branch;
    if (ba.depth != bb.depth) return ba.depth > bb.depth;
    return ba.created_at_ms > bb.created_at_ms;
  });
  for (const std::string& d : live)
    FinishInTxn(txn, d, BranchStatus::kFailed, reason, std::nullopt);
  return live;
}

absl::Status BranchManager::ForceReturn(const std::string& id, BranchStatus status,
                                        std::string reason, std::vector<std::string>* ended) {
  Txn txn(*this);
  RETURN_IF_ERROR(CheckTransition(id, nodes_.at(id).branch.status, status));
  std::string why = status == BranchStatus::kTimeout ? "timed out" : "was force-returned";
  std::vector<std::string> kids =
      ForceReturnDescendants(txn, id, absl::StrCat("parent ", id, " ", why));
  FinishInTxn(txn, id, status, std::move(reason), std::nullopt);
  RETURN_IF_ERROR(txn.Commit());
  if (ended != nullptr) {
    ended->insert(ended->end(), kids.begin(), kids.end());
    ended->push_back(id);
  }
  return absl::OkStatus();
}

void BranchManager::OnDeadline(const std::string& id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  Node& node = it->second;
  node.timer = 0;
  if (!IsLive(node.branch.status)) return;
  // Where instances share the store, the one that claims the branch force-returns it; the others
  // follow the store (PgBranchStore; single-writer stores always answer kClaimed).
  auto claim = store_.ClaimDeadline(id, executor_.clock().WallMillis(), kDeadlineLeaseMs);
  if (!claim.ok() || *claim == DeadlineClaim::kHeldElsewhere) {
    if (!claim.ok()) {
      base::LogError(absl::StrCat("branch ", id, ": deadline claim: ", claim.status().ToString()));
    }
    std::weak_ptr<int> alive = alive_;
    node.timer = executor_.PostAfter(
        claim.ok() ? std::chrono::milliseconds(kDeadlineLeaseMs) : std::chrono::milliseconds(1000),
        [this, alive, id] {
          if (!alive.expired()) OnDeadline(id);
        });
    return;
  }
  if (*claim == DeadlineClaim::kEnded) {
    // Another instance ended it: drop what this one remembers of the session and reload it.
    SessionKey session = node.branch.session;
    ForgetSession(session);
    if (absl::Status st = EnsureSession(session).status(); !st.ok()) {
      base::LogError(absl::StrCat("branch ", id, ": reloading its session: ", st.ToString()));
    }
    return;
  }
  int64_t timeout_s = (node.branch.deadline_wall_ms - node.branch.created_at_ms + 500) / 1000;
  absl::Status st =
      ForceReturn(id, BranchStatus::kTimeout,
                  absl::StrCat("deadline passed (timeout ", timeout_s, " s)"), nullptr);
  if (st.code() == absl::StatusCode::kAborted) {
    // Another instance changed the session since it was cached: reload it; the branch's timer,
    // armed again, fires at once if it is still live and past its deadline.
    SessionKey session = nodes_.at(id).branch.session;
    ForgetSession(session);
    if (absl::Status loaded = EnsureSession(session).status(); !loaded.ok()) {
      base::LogError(absl::StrCat("branch ", id, ": reloading its session: ", loaded.ToString()));
    }
    return;
  }
  if (!st.ok()) {
    // The store failed: try again shortly rather than leave a branch past its deadline.
    base::LogError(absl::StrCat("branch ", id, ": timeout not recorded: ", st.ToString()));
    Node& again = nodes_.at(id);
    std::weak_ptr<int> alive = alive_;
    again.timer = executor_.PostAfter(std::chrono::seconds(1), [this, alive, id] {
      if (!alive.expired()) OnDeadline(id);
    });
  }
}

}  // namespace contextd::folding
