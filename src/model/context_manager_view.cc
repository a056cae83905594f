// ContextManager's branch view (branch_view.h): deciding it, building its opening turn, and what
// a plan's messages weigh. Split from context_manager.cc, whose class it belongs to.
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "model/context_manager.h"
#include "model/raw_json.h"
#include "scrub/private_spans.h"

namespace contextd::model {
namespace {

// The texts of an append decision's parts (`{"type":"text","text":...}` objects joined by ',').
std::vector<std::string> AppendTexts(std::string_view value) {
  std::vector<std::string> texts;
  const std::string parts = absl::StrCat("[", std::string(value), "]");
  auto parsed = ParseRawJson(parts, 3);
  if (!parsed.ok()) return texts;
  for (const RawNode& part : parsed->children) {
    if (part.type != JsonType::kObject) continue;
    if (auto text = StringMember(parts, part, "text")) texts.push_back(*std::move(text));
  }
  return texts;
}

}  // namespace

std::string ContextManager::BuildOpening(const ModelRequest& request, const OpenBranch& branch,
                                         size_t answer, const ThreadState& state) const {
  const Transcript& t = request.transcript();
  const size_t create = branch.create_message;
  OpeningParts parts;
  parts.branch_id = branch.branch_id;
  std::map<std::string, size_t> calls;  // call id -> its block in the create message
  for (size_t b = 0; b < t.messages[create].blocks.size(); ++b) {
    const Block& block = t.messages[create].blocks[b];
    if (block.kind != BlockKind::kToolCall) continue;
    calls.emplace(block.call_id, b);
    if (block.call_id == branch.create_call_id) {
      ReadCreateArguments(request.BlockText(create, b), parts);
    }
  }
  parts.description = scrubber_.Scrub(parts.description);
  parts.prompt = scrubber_.Scrub(parts.prompt);
  const Message& message = t.messages[answer];
  for (size_t b = 0; b < message.blocks.size(); ++b) {
    const Block& block = message.blocks[b];
    if (block.kind == BlockKind::kText) {
      parts.texts.push_back(scrubber_.Scrub(request.BlockText(answer, b)));
      continue;
    }
    if (block.kind != BlockKind::kToolResult) {
      ++parts.left_out;
      continue;
    }
    std::string result = scrubber_.Scrub(request.BlockText(answer, b));
    if (block.call_id == branch.create_call_id) {
      parts.create_result = std::move(result);
      continue;
    }
    auto call = calls.find(block.call_id);
    if (call == calls.end()) continue;  // an invalid transcript: the view is refused later
    const Block& call_block = t.messages[create].blocks[call->second];
    parts.calls.push_back({call_block.tool_name,
                           scrubber_.Scrub(request.BlockText(create, call->second)),
                           std::move(result), block.is_error});
  }
  // What contextd appended to the answer (a budget notice) rides on.
  if (auto append = state.appends.find(message.key); append != state.appends.end()) {
    for (std::string& text : AppendTexts(append->second)) parts.texts.push_back(std::move(text));
  }
  return OpeningText(parts);
}

void ContextManager::FoldForSummary(const std::string& tenant, const ModelRequest& request,
                                    const FoldPlan& folds, const ThreadState& state,
                                    RenderPlan& plan) const {
  std::set<std::string> open;
  for (const OpenBranch& branch : folds.open_branches) open.insert(branch.branch_id);
  // The open branches read as ended here: folded up to the tail, as a force-return would be,
  // without a decision (the branches go on; the summary replaces this history).
  FoldPlan so_far = PlanFolds(
      request.transcript(), state.folds,
      [&](const std::string& id) -> std::optional<BranchFacts> {
        std::optional<BranchFacts> facts = Find(tenant, id);
        if (facts && open.count(id)) facts->ended = true;
        return facts;
      },
      &state.settled);
  for (FoldEdit& edit : so_far.edits) {
    if (open.count(edit.branch_id)) edit.result_text = OpenBranchText(edit.branch_id);
  }
  plan.folds = std::move(so_far.edits);
}

std::optional<ViewEdit> ContextManager::ViewOf(const ModelRequest& request,
                                               const OpenBranch& branch, const ViewRecord& record,
                                               ThreadState& state) const {
  const Transcript& t = request.transcript();
  std::optional<size_t> answer = AnswerMessage(t, branch.create_message);
  if (!answer) return std::nullopt;
  ViewEdit edit;
  edit.keep = record.keep_opening ? std::min(OpeningEnd(t), branch.create_message) : 0;
  edit.resume = *answer + 1;
  edit.branch_id = record.branch_id;
  edit.opening = record.opening;
  if (edit.opening.empty()) {
    // Held a <private> span when decided: built again once per thread in memory, as it was then
    // unless the rules changed.
    auto [built, fresh] = state.view_openings.try_emplace(branch.create_call_id);
    if (fresh) {
      built->second = BuildOpening(request, branch, *answer, state);
      if (Hex(Digest({built->second})) != record.opening_digest) {
        base::LogWarn(
            absl::StrCat("model gateway: the view of branch ", record.branch_id,
                         " could not be repeated byte for byte (the scrub rules changed "
                         "since it was sent); it is sent as built with the current rules"));
      }
    }
    edit.opening = built->second;
  }
  return edit;
}

void ContextManager::DecideView(const ModelRequest& request, const OpenBranch& branch,
                                ThreadState& state, const RenderPlan& plan,
                                ConversationUpdate& update) const {
  const Transcript& t = request.transcript();
  std::optional<size_t> answer = AnswerMessage(t, branch.create_message);
  if (!answer) return;
  ViewRecord record;
  record.branch_id = branch.branch_id;
  record.keep_opening = options_.branch_view.keep_opening;
  // Once the model has answered inside the branch on the history it had, that history stays.
  record.view = options_.branch_view.view == BranchView::kIsolated && !AnsweredInside(t, *answer)
                    ? BranchView::kIsolated
                    : BranchView::kInherited;
  if (record.view == BranchView::kIsolated) {
    std::string opening = BuildOpening(request, branch, *answer, state);
    record.opening_digest = Hex(Digest({opening}));
    if (scrub::ContainsPrivate(opening)) {
      state.view_openings[branch.create_call_id] = std::move(opening);  // memory only
    } else {
      record.opening = std::move(opening);
    }
    RenderPlan with_view;
    with_view.folds = plan.folds;
    with_view.view = ViewOf(request, branch, record, state);
    // A view that would break a valid transcript is not taken: the branch keeps what it had.
    if (ValidateTranscript(t).ok() &&
        !ValidateTranscript(request.RenderedTranscript(with_view)).ok()) {
      base::LogWarn(absl::StrCat("model gateway: branch ", record.branch_id,
                                 " keeps the inherited view (an isolated one was not valid)"));
      record = ViewRecord{record.branch_id, BranchView::kInherited, record.keep_opening, "", ""};
    }
  }
  update.new_rewrites.push_back({RewriteKind::kView, branch.create_call_id, record.Serialize()});
  state.views.emplace(branch.create_call_id, std::move(record));
}

void ContextManager::ApplyView(const std::string& tenant, const ModelRequest& request,
                               const FoldPlan& folds, ThreadState& state, RenderPlan& plan,
                               ConversationUpdate& update, AppliedRequest& applied) const {
  if (folds.open_branches.empty()) return;
  const OpenBranch& innermost = folds.open_branches.back();
  // Decided by the branch's own first request, not by a summary request (whose answer is not
  // the branch's).
  if (!request.asks_summary() && !state.views.count(innermost.create_call_id)) {
    DecideView(request, innermost, state, plan, update);
  }
  // The innermost open branch with an isolated view gives the view: a branch that inherits,
  // inside an isolated one, inherits that one's view (what its parent was sent).
  for (auto it = folds.open_branches.rbegin(); it != folds.open_branches.rend(); ++it) {
    auto record = state.views.find(it->create_call_id);
    if (record == state.views.end() || record->second.view != BranchView::kIsolated) continue;
    if (request.asks_summary()) {
      FoldForSummary(tenant, request, folds, state, plan);
      applied.view = "summary";
      return;
    }
    plan.view = ViewOf(request, *it, record->second, state);
    if (plan.view) {
      applied.view = BranchViewName(BranchView::kIsolated);
      return;
    }
  }
  applied.view = BranchViewName(BranchView::kInherited);
}

void ContextManager::KeepInheritedView(ThreadState& state, ConversationUpdate& update,
                                       AppliedRequest& applied) {
  for (Rewrite& rewrite : update.new_rewrites) {
    if (rewrite.kind != RewriteKind::kView) continue;
    auto it = state.views.find(rewrite.key);
    if (it == state.views.end() || it->second.view != BranchView::kIsolated) continue;
    it->second =
        ViewRecord{it->second.branch_id, BranchView::kInherited, it->second.keep_opening, "", ""};
    rewrite.value = it->second.Serialize();
    applied.view = BranchViewName(BranchView::kInherited);
    applied.view_tokens_spared = 0;
  }
}

int64_t ContextManager::PlanTokens(ThreadState& state, const ModelRequest& request,
                                   const RenderPlan& plan, size_t from, size_t to) const {
  int64_t n = 0;
  for (size_t m = from; m < to; ++m) {
    n += MessageTokens(state, request, m);
    if (auto append = plan.appends.find(m); append != plan.appends.end()) {
      n += TextTokens(state, append->second);
    }
  }
  for (const auto& [m, b] : plan.dropped) {
    if (m >= from && m < to) n -= Tokens(state, request, m, b);
  }
  for (const FoldEdit& edit : plan.folds) {
    if (edit.create_message < from || edit.create_message >= to) continue;
    for (size_t m = edit.create_message + 1; m <= edit.end_message; ++m) {
      n -= MessageTokens(state, request, m);
    }
    for (const auto& [m, b] : edit.kept_blocks) n += Tokens(state, request, m, b);
    n += TextTokens(state, edit.result_text);
    n += static_cast<int64_t>(edit.stub_call_ids.size()) *
         TextTokens(state, StubResultText(edit.branch_id));
  }
  return n;
}

}  // namespace contextd::model
