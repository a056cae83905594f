// ModelRequest: one model API request body as the context manager sees it, whatever the API: the
// provider-neutral transcript (transcript.h), the decoded texts of its blocks, and the body
// rendered back with a RenderPlan applied. Every byte a plan does not change goes out as the client
// sent it. Implemented by AnthropicRequest (Messages), OpenAIChatRequest (Chat Completions) and
// OpenAIResponsesRequest (Responses).
// Not thread-safe; a value owned by one request.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/branch_view.h"
#include "model/fold.h"
#include "model/model_api.h"
#include "model/raw_json.h"
#include "model/transcript.h"

namespace contextd::model {

// How much of a text block an adapter decodes at parse time (Block::text): enough to tell a
// client's <system-reminder> from text a person wrote; the rest is read on demand.
inline constexpr size_t kTextPrefixBytes = 64;

// A JSON string token of the body: [begin, end) in bytes, quotes included.
struct TextSpan {
  uint32_t begin = 0;
  uint32_t end = 0;
};

// What Render changes. Indexes are of the transcript's messages and their blocks.
struct RenderPlan {
  std::vector<FoldEdit> folds;  // disjoint, in order (FoldPlan::edits)
  // (message, block) -> the block sent instead (as RewriteBlock returns it; an Anthropic block
  // without its cache marker: the original's marker, if any, is put back). For a block that is a
  // string (Anthropic or OpenAI string content): a JSON string token.
  std::map<std::pair<size_t, size_t>, std::string> blocks;
  // message -> text content parts added after its content ({"type":"text","text":...} objects
  // joined by ','; a shape both APIs accept).
  std::map<size_t, std::string> appends;
  // (message, block) of thinking blocks (Responses: reasoning items) not sent (auto-fold under
  // thinking). Never a message's only block.
  std::set<std::pair<size_t, size_t>> dropped;
  // An isolated branch view (branch_view.h): messages [view->keep, view->resume) are sent as one
  // user message of text view->opening. No fold, block or append of those messages is rendered.
  std::optional<ViewEdit> view;

  // The first of folds[fold..] past the view's hidden messages (their folds are not rendered):
  // where a renderer goes on after the view's opening.
  size_t FoldAfterView(size_t fold) const {
    while (fold < folds.size() && folds[fold].create_message < view->resume) ++fold;
    return fold;
  }

  // Whether the plan changes nothing (Render then returns the body as sent).
  bool Empty() const {
    return folds.empty() && blocks.empty() && appends.empty() && dropped.empty() && !view;
  }
};

class ModelRequest {
 public:
  virtual ~ModelRequest() = default;

  virtual ModelApi api() const = 0;
  virtual const std::string& body() const = 0;
  // The neutral view. Block::text is filled at parse time only where the fold core needs it:
  // branch_create/branch_return calls and their results (whole), text blocks (their first 64
  // bytes). BlockText reads any block whole. Keys are empty until ComputeKeys.
  virtual const Transcript& transcript() const = 0;
  // The request's `model`, "" when absent.
  virtual const std::string& model() const = 0;
  // Whether the request offers the model tools (a non-empty `tools` array). One that does not
  // cannot go on with an agent's tool loop: a side request (a summary, a title).
  bool offers_tools() const { return offers_tools_; }
  // Whether the request asks for a summary of its conversation (IsSummaryRequest): the gateway
  // marks a compaction route's; the rest is read from the transcript.
  bool asks_summary() const {
    return asks_summary_ || IsSummaryRequest(transcript(), offers_tools_);
  }
  void MarkSummary() { asks_summary_ = true; }
  // How many messages the parse took over from the conversation's previous request.
  virtual size_t reused_messages() const = 0;
  // Why the request cannot be rewritten at all (a metric label: its history is kept by the
  // provider, e.g. a Responses request naming `previous_response_id`): the gateway then forwards
  // it as sent, without Apply. Empty for a request F(.) applies to.
  virtual std::string_view unfoldable_reason() const { return {}; }

  // The key of message 0 (computing it if needed), "" without messages: it names the thread.
  virtual std::string FirstMessageKey() = 0;
  // Fills the block and message keys not known yet.
  virtual void ComputeKeys() = 0;

  // What the model reads of block (message, block), decoded: text, a tool result's text parts
  // joined by newlines, a tool call's arguments (JSON); "" for blocks without text.
  virtual std::string BlockText(size_t message, size_t block) const = 0;
  // The string tokens of block (message, block) that scrubbing reads (offsets in body()).
  virtual const std::vector<TextSpan>& TextSpans(size_t message, size_t block) const = 0;
  // The block's bytes (an Anthropic block without its cache marker) with `replacements` (token
  // spans of TextSpans -> new JSON string tokens) applied: a RenderPlan::blocks value.
  virtual std::string RewriteBlock(
      size_t message, size_t block,
      const std::vector<std::pair<TextSpan, std::string>>& replacements) const = 0;

  // The request with `plan` applied.
  virtual std::string Render(const RenderPlan& plan) const = 0;
  // The transcript as Render(plan) leaves it (for validation and counting), without keys.
  Transcript RenderedTranscript(const RenderPlan& plan) const;

 protected:
  // Set by the adapter's parse from `tools`.
  void SetOffersTools(const RawNode* tools) {
    offers_tools_ = tools != nullptr && tools->type == JsonType::kArray && !tools->children.empty();
  }

 private:
  bool offers_tools_ = false;
  bool asks_summary_ = false;
};

}  // namespace contextd::model
