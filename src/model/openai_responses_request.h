// OpenAIResponsesRequest: an OpenAI Responses API request body (POST /v1/responses) read without
// rebuilding it; the Responses implementation of ModelRequest. The body is validated as JSON and
// navigated by byte spans. Its neutral view of `input`: leading `system`/`developer` messages are
// the preamble (like `instructions`, passed through, outside the transcript); each run of
// assistant-side items (assistant messages, `reasoning`, `function_call`, `custom_tool_call`,
// other `*_call` items) is one assistant message; each run of user-side items
// (`function_call_output`, `custom_tool_call_output`, other `*_output` items, user messages) is
// one user message, tool results first; any other item (item_reference, a later system message,
// a type not known) is a message of Role::kOther. A string `input` is one user message of one text
// block. Render() writes the body back with only `input` changed as a RenderPlan says: a fold
// keeps the items of the turn that called branch_create and puts, after them, one
// `function_call_output` (or `custom_tool_call_output`) per call of that turn, then the items of
// the run that held branch_return's result that are not tool results; appended notices are a
// user message item of their own after the run. Every other byte is copied as the client sent
// it; `reasoning` items are never changed. Not thread-safe; a value owned by one request.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/internal/openai_wire_array.h"
#include "model/model_request.h"
#include "model/raw_json.h"
#include "model/tool_names.h"
#include "model/transcript.h"

namespace contextd::model {

class OpenAIResponsesRequest : public ModelRequest {
 public:
  // Parses `body`. InvalidArgument (naming the problem) when it is not JSON, not an object, or
  // `input` is neither absent, null, a string nor an array of objects.
  static absl::StatusOr<std::unique_ptr<OpenAIResponsesRequest>> Parse(std::string body);

  ModelApi api() const override { return ModelApi::kOpenAIResponses; }
  const std::string& body() const override { return body_; }
  const Transcript& transcript() const override { return transcript_; }
  const std::string& model() const override { return model_; }
  size_t reused_messages() const override { return 0; }
  // "previous_response_id" or "conversation" when the request names history the provider keeps
  // (it cannot be folded: the gateway forwards it as sent); empty otherwise.
  std::string_view unfoldable_reason() const override { return unfoldable_; }
  // How many leading `system`/`developer` message items the transcript leaves out.
  size_t preamble() const { return preamble_; }

  std::string FirstMessageKey() override;
  void ComputeKeys() override;

  // A text part's text (a refusal's refusal) or a string content, a tool output's string or text
  // parts joined by newlines, a function call's `arguments` (a custom tool call's `input`)
  // decoded, a reasoning item's summary texts joined by newlines; "" for others.
  std::string BlockText(size_t message, size_t block) const override;
  // The string tokens scrubbing reads: a string content, a text part's text, a tool output's
  // string or the text of its text parts.
  const std::vector<TextSpan>& TextSpans(size_t message, size_t block) const override;
  // The block's bytes with `replacements` applied: a string content's new token, a content
  // part's object, a call's or tool output's whole item.
  std::string RewriteBlock(
      size_t message, size_t block,
      const std::vector<std::pair<TextSpan, std::string>>& replacements) const override;
  // The request with `plan` applied. Appends are rendered for user messages of an array `input`
  // only, each `{"type":"text","text":T}` part as `{"type":"input_text","text":T}` (the text token
  // as stored) in a `{"type":"message","role":"user","content":[...]}` item.
  std::string Render(const RenderPlan& plan) const override;

 private:
  using BlockRef = internal::WireBlockRef;
  using MessageRef = internal::WireMessageRef;
  OpenAIResponsesRequest() = default;
  absl::Status Index();
  // Adds the blocks of `input` item `wire` to message `m` (`results`: only its tool outputs, or
  // only the rest); `branch_calls`: the ids of the previous message's branch tool calls (their
  // outputs' text is read now); the ids of this item's branch tool calls go to `calls_here`.
  void IndexWire(size_t m, size_t wire, bool results, const std::vector<std::string>& branch_calls,
                 std::vector<std::string>& calls_here);
  std::string BlockKey(const BlockRef& ref, const Block& block) const;
  void ComputeKey(size_t m);
  void RenderAppend(size_t m, const RenderPlan& plan, std::string& out) const;
  void RenderFold(const FoldEdit& edit, const RenderPlan& plan, std::string& out) const;

  std::string body_;
  RawNode root_;
  const RawNode* input_ = nullptr;  // the `input` array; null for a string or absent input
  const RawNode* input_string_ = nullptr;
  size_t preamble_ = 0;
  std::vector<std::string> wire_types_;  // per item: its type ("message" for a typeless one)
  std::vector<std::string> wire_roles_;  // per item: its role ("" when none)
  std::vector<MessageRef> refs_;
  Transcript transcript_;
  std::string model_;
  ContextdToolNames names_;  // declared by the request's tool definitions
  std::string unfoldable_;
};

}  // namespace contextd::model
