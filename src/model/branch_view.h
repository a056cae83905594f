// The isolated branch view (issue 33, docs/decisions/0035): while a branch is open, the model is
// sent the conversation's opening (the messages before the model's first turn: the task and the
// project's standing instructions), one user turn opening the branch (its description, prompt,
// the create's answer and those of the calls made beside it) and the branch's own turns, instead
// of the parent's whole history. Seen from the provider there are then two conversations that each
// only grow: the parent's (its prefix up to the create turn never changes; the fold follows on the
// return) and the branch's. A view is decided once per branch, in the first request that carries
// the create's answer before the model has answered inside the branch, as a ViewRecord the caller
// stores; later requests apply the stored record. Pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/transcript.h"

namespace contextd::model {

// context_folding.branch_view: what the model sees while a branch is open.
enum class BranchView {
  kIsolated,   // the opening, the branch's opening turn and its own turns (the default)
  kInherited,  // the parent's whole history and the branch's turns (contextd before issue 33)
};
const char* BranchViewName(BranchView view);
// "isolated" or "inherited"; InvalidArgument otherwise.
absl::StatusOr<BranchView> ParseBranchView(std::string_view text);

struct BranchViewOptions {
  BranchView view = BranchView::kIsolated;
  // context_folding.branch_view_keep_opening: the view starts with the conversation's opening
  // (where agents put the task and the project's instructions); off, with the branch's own turn
  // alone (the seed's strict reading of FR-002).
  bool keep_opening = true;
};

// A durable view decision (RewriteKind::kView, keyed by the branch's create call id).
struct ViewRecord {
  std::string branch_id;
  BranchView view = BranchView::kIsolated;
  bool keep_opening = true;
  // The opening turn's text as first sent, when it held no <private> span (the store never keeps
  // one); otherwise empty, and the text is built again from the transcript on each request.
  std::string opening;
  std::string opening_digest;  // Hex(Digest) of the text as first sent

  std::string Serialize() const;
  static absl::StatusOr<ViewRecord> Parse(std::string_view text);
};

// Where a view goes in a transcript: messages [0, keep) are sent as they are, [keep, resume) are
// replaced by one user message whose text is `opening`, and [resume, end) are sent as they are
// (with the plan's other edits).
struct ViewEdit {
  size_t keep = 0;
  size_t resume = 0;
  std::string branch_id;
  std::string opening;
};

// The index of the model's first turn (the first assistant message): the messages before it are
// the conversation's opening. The transcript's size when the model has not answered yet.
size_t OpeningEnd(const Transcript& transcript);

// The message holding the answers to the calls of assistant message `create`: the first user
// message after it (system messages in between pass). nullopt when there is none yet.
std::optional<size_t> AnswerMessage(const Transcript& transcript, size_t create);

// Whether the model has answered inside the branch whose create's answer is message `answer`:
// an assistant message after it. A view decided after that would change a prefix the model
// already answered on (and its thinking is bound to), so such a branch keeps the inherited view.
bool AnsweredInside(const Transcript& transcript, size_t answer);

// Whether a request asks the model to summarise the conversation rather than go on with it (a
// client's compaction): it offers no tools (Codex's compaction, side requests), its last message
// holds a `compaction_trigger` item (Responses), or is a user text opening with a compaction
// prompt a client keeps its tools for (Claude Code's). The gateway also marks the requests of a
// compaction route (ModelRequest::MarkSummary). Its answer replaces the history, so it is sent the
// parent's view, the open branches folded as they stand: a summary of the branch alone would lose
// the parent's work.
bool IsSummaryRequest(const Transcript& transcript, bool offers_tools);

// The text standing for an open branch in a summary request.
std::string OpenBranchText(const std::string& branch_id);

// A call made in the create's turn and what it answered, as the model reads them (scrubbed).
struct OpeningCall {
  std::string tool;
  std::string arguments;
  std::string result;
  bool is_error = false;
};

// What the branch's opening turn says.
struct OpeningParts {
  std::string branch_id;
  std::string description;  // branch_create's arguments
  std::string prompt;
  std::string create_result;       // the create's answer as the client sent it (scrubbed)
  std::vector<OpeningCall> calls;  // the other calls of the create's turn, in order
  std::vector<std::string> texts;  // other text the answer message carried (scrubbed)
  int left_out = 0;                // blocks that are not text (images): not carried
};

// The description and prompt of a branch_create call's arguments (JSON); empty when absent.
void ReadCreateArguments(std::string_view arguments, OpeningParts& parts);

// The text of the user turn that opens a branch's view.
std::string OpeningText(const OpeningParts& parts);

}  // namespace contextd::model
