// AnthropicRequest: a Messages API request body (POST /v1/messages) read without rebuilding it.
// The body is validated as JSON and navigated by byte spans; `transcript()` is its provider-neutral
// view. Render() writes the body back with only `messages` content changed as a RenderPlan says:
// every byte outside the changed blocks (other fields, unknown roles and block types, kept
// assistant messages with their thinking signatures) is copied as the client sent it.
// The Messages implementation of ModelRequest. Not thread-safe; a value owned by one request.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/fold.h"
#include "model/model_request.h"
#include "model/raw_json.h"
#include "model/tool_names.h"
#include "model/transcript.h"

namespace contextd::model {

class AnthropicRequest : public ModelRequest {
 public:
  using TextSpan = model::TextSpan;

  // Parses `body`. InvalidArgument (naming the problem) when it is not JSON, not an object, or
  // `messages` is missing or not an array of objects.
  // With `previous` (the conversation's last request, owned by the caller and spent by this:
  // only its destruction is safe afterwards), the messages it holds byte for byte at the same
  // offsets are taken over instead of read again.
  static absl::StatusOr<std::unique_ptr<AnthropicRequest>> Parse(
      std::string body, AnthropicRequest* previous = nullptr);

  // How many messages Parse took over from `previous`.
  size_t reused_messages() const override { return reused_messages_; }

  ModelApi api() const override { return ModelApi::kAnthropicMessages; }
  const std::string& body() const override { return body_; }
  // The neutral view. Block::text is filled at parse time only where the fold core needs it:
  // branch_create/branch_return calls and their results (whole), text blocks (their first 64
  // bytes). BlockText reads any block whole. Keys are empty until ComputeKeys.
  const Transcript& transcript() const override { return transcript_; }

  // The key of message 0 (computing it if needed), "" without messages: it names the thread.
  std::string FirstMessageKey() override;
  // Fills the block and message keys not known yet (messages Parse took over from the previous
  // request keep theirs: only a new tail is hashed).
  void ComputeKeys() override;

  // What the model reads of block (message, block), decoded: a text block's or a string
  // content's text, a tool result's text parts joined by newlines, a tool call's input (JSON),
  // a thinking block's thinking; "" for others.
  std::string BlockText(size_t message, size_t block) const override;
  const std::string& model() const override { return model_; }

  // The decoded text strings of block (message, block) that scrubbing reads, with the offsets
  // of their tokens in body(): a text block's text, a tool result's string content or the text
  // of its text parts; a string-content message's string.
  const std::vector<TextSpan>& TextSpans(size_t message, size_t block) const override;

  // The block's bytes without its cache marker, with `replacements` (token spans of TextSpans ->
  // new JSON string tokens) applied. For a string-content message: the new string token.
  std::string RewriteBlock(
      size_t message, size_t block,
      const std::vector<std::pair<TextSpan, std::string>>& replacements) const override;

  // The request with `plan` applied.
  std::string Render(const RenderPlan& plan) const override;

 private:
  struct BlockRef {
    const RawNode* node = nullptr;           // the block object (or the string content)
    const RawNode* cache_control = nullptr;  // its cache_control member
    std::vector<TextSpan> texts;
  };
  struct MessageRef {
    const RawNode* node = nullptr;
    const RawNode* content = nullptr;  // null when absent
    bool string_content = false;
    std::vector<BlockRef> blocks;
  };
  AnthropicRequest() = default;
  absl::Status Index(AnthropicRequest* previous, size_t reused);
  // The block's bytes without its cache_control member.
  std::string Normalized(const BlockRef& ref) const;
  std::string BlockKey(const BlockRef& ref, bool string_content) const;
  // A system message's block: its text alone when it is nothing but text, whether sent as a
  // string or as a text block (with or without a breakpoint).
  std::string SystemBlockKey(const BlockRef& ref, bool string_content) const;
  void ComputeKey(size_t m);
  std::string RewriteBlockRef(
      const BlockRef& ref, const std::vector<std::pair<TextSpan, std::string>>& replacements) const;
  // The bytes between messages m-1 and m as the client sent them ("," for a new neighbour).
  std::string_view Separator(size_t m) const;
  void RenderBlock(size_t m, size_t b, const RenderPlan& plan, std::string& out) const;
  void RenderMessage(size_t m, const RenderPlan& plan, std::string& out) const;
  // Writes the message that stands for a fold; true if it moved a breakpoint onto it.
  bool RenderFold(const FoldEdit& edit, const RenderPlan& plan, int markers_left,
                  std::string& out) const;
  // Writes the user message that opens a branch view; true if it moved a breakpoint onto it (the
  // first of the hidden messages' breakpoints, while one of the four is left).
  bool RenderOpening(const ViewEdit& view, int markers_left, std::string& out) const;
  int MarkerCount(const RenderPlan& plan) const;
  // The reminders the client appended to the create's result block `at`, as the model receives
  // that block (FoldEdit::create_result); "" when none.
  std::string CreateResultReminders(std::pair<size_t, size_t> at, const RenderPlan& plan) const;

  std::string body_;
  RawNode root_;
  const RawNode* messages_ = nullptr;
  std::vector<MessageRef> refs_;
  Transcript transcript_;
  std::string model_;
  ContextdToolNames names_;  // declared by the request's tool definitions
  int markers_outside_messages_ = 0;
  size_t reused_messages_ = 0;
};

}  // namespace contextd::model
