// OpenAIChatRequest: an OpenAI Chat Completions request body (POST /v1/chat/completions) read
// without rebuilding it; the Chat implementation of ModelRequest. The body is validated as JSON
// and navigated by byte spans. Its neutral view: the leading `system`/`developer` messages are the
// preamble (like the Messages API's `system`: passed through, outside the transcript); then each
// `assistant` message is one message (its content, then one kToolCall block per `tool_calls`
// entry), each run of `tool` and `user` messages is one user message (a tool message is one
// kToolResult block, answering `tool_call_id`; a user message gives its string content or its
// content parts), and any other role is a message of Role::kOther. Render() writes the body back
// with only `messages` changed as a RenderPlan says: a fold keeps the assistant message that
// called branch_create and puts, after it, one `tool` message per call of that message (the
// summary for branch_create, a stub for the others) and the user messages of the run that held
// branch_return's result; appended notices are a user message of their own after the run.
// Every other byte is copied as the client sent it. Not thread-safe; a value owned by one request.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/internal/openai_wire_array.h"
#include "model/model_request.h"
#include "model/raw_json.h"
#include "model/tool_names.h"
#include "model/transcript.h"

namespace contextd::model {

class OpenAIChatRequest : public ModelRequest {
 public:
  // Parses `body`. InvalidArgument (naming the problem) when it is not JSON, not an object, or
  // `messages` is missing or not an array of objects.
  static absl::StatusOr<std::unique_ptr<OpenAIChatRequest>> Parse(std::string body);

  ModelApi api() const override { return ModelApi::kOpenAIChat; }
  const std::string& body() const override { return body_; }
  const Transcript& transcript() const override { return transcript_; }
  const std::string& model() const override { return model_; }
  size_t reused_messages() const override { return 0; }
  // How many leading `system`/`developer` messages the transcript leaves out.
  size_t preamble() const { return preamble_; }

  std::string FirstMessageKey() override;
  void ComputeKeys() override;

  // A string content's or text part's text (a refusal part's refusal), a tool message's string
  // content or text parts joined by newlines, a tool call's `function.arguments` (or a custom
  // tool call's `input`) decoded; "" for others.
  std::string BlockText(size_t message, size_t block) const override;
  // The string tokens scrubbing reads: a string content, a text part's text, a tool message's
  // string content or the text of its text parts.
  const std::vector<TextSpan>& TextSpans(size_t message, size_t block) const override;
  // The block's bytes with `replacements` applied: a string content's new token, a content
  // part's or tool call's object, a tool message's whole object.
  std::string RewriteBlock(
      size_t message, size_t block,
      const std::vector<std::pair<TextSpan, std::string>>& replacements) const override;
  // The request with `plan` applied. Appends are rendered for user messages only (the context
  // manager appends nothing to an assistant message, whose tool calls must meet their results).
  std::string Render(const RenderPlan& plan) const override;

 private:
  using BlockRef = internal::WireBlockRef;
  using MessageRef = internal::WireMessageRef;
  OpenAIChatRequest() = default;
  absl::Status Index();
  // Adds the blocks of `messages` element `wire` to message `m`; `branch_calls`: the ids of the
  // previous message's branch tool calls (their results' text is read now); the ids of this
  // element's branch tool calls are added to `calls_here`.
  void IndexWire(size_t m, size_t wire, const std::vector<std::string>& branch_calls,
                 std::vector<std::string>& calls_here);
  std::string BlockKey(const BlockRef& ref, const Block& block) const;
  void ComputeKey(size_t m);
  void RenderAppend(size_t m, const RenderPlan& plan, std::string& out) const;
  void RenderFold(const FoldEdit& edit, const RenderPlan& plan, std::string& out) const;

  std::string body_;
  RawNode root_;
  const RawNode* messages_ = nullptr;
  size_t preamble_ = 0;
  std::vector<std::string> wire_roles_;  // per `messages` element, its role ("" when none)
  std::vector<MessageRef> refs_;
  Transcript transcript_;
  std::string model_;
  ContextdToolNames names_;  // declared by the request's tool definitions
};

}  // namespace contextd::model
