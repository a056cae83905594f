#include "model/openai_responses_request.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::model {
namespace {

// Levels recorded: root, input, item, an item's content/output/summary, a part, a part's members.
constexpr int kRecordDepth = 5;

// Which neutral message an `input` item belongs to.
enum class Side { kUser, kAssistant, kSystem, kOther };

bool IsPreambleRole(std::string_view role) { return role == "system" || role == "developer"; }

Side SideOf(std::string_view type, std::string_view role) {
  if (type == "message") {
    if (role == "user") return Side::kUser;
    if (role == "assistant") return Side::kAssistant;
    if (IsPreambleRole(role)) return Side::kSystem;  // past the preamble: a harness update
    return Side::kOther;
  }
  // The model's output: its reasoning and its calls (client tools and provider-run ones alike).
  if (type == "reasoning" || type.ends_with("_call")) return Side::kAssistant;
  // What the client sends back for a call.
  if (type.ends_with("_output")) return Side::kUser;
  return Side::kOther;
}

// The calls the fold core pairs with their outputs (other `*_call` items are kOther blocks).
bool IsToolCall(std::string_view type) {
  return type == "function_call" || type == "custom_tool_call";
}
bool IsToolOutput(std::string_view type) {
  return type == "function_call_output" || type == "custom_tool_call_output";
}

bool IsTextPart(std::string_view type) {
  return type == "input_text" || type == "output_text" || type == "text";
}

BlockKind PartKind(std::string_view type) {
  if (IsTextPart(type) || type == "refusal") return BlockKind::kText;
  if (type == "input_image" || type == "input_file" || type == "input_audio") {
    return BlockKind::kMedia;
  }
  return BlockKind::kOther;
}

// The string tokens of a value that is a string or an array of text parts.
std::vector<TextSpan> ValueTexts(std::string_view doc, const RawNode* value) {
  std::vector<TextSpan> texts;
  if (value == nullptr) return texts;
  if (value->type == JsonType::kString) {
    texts.push_back({value->begin, value->end});
  } else if (value->type == JsonType::kArray) {
    for (const RawNode& part : value->children) {
      if (part.type != JsonType::kObject) continue;
      if (!IsTextPart(StringMember(doc, part, "type").value_or(""))) continue;
      const RawNode* text = FindMember(doc, part, "text");
      if (text == nullptr || text->type != JsonType::kString) continue;
      texts.push_back({text->begin, text->end});
    }
  }
  return texts;
}

// The member of a call item holding what it passes the tool: a function call's `arguments` (a
// JSON string holding JSON), a custom tool call's `input` (free text).
const RawNode* ArgumentsOf(std::string_view doc, const RawNode& item, std::string_view type) {
  return FindMember(doc, item, type == "custom_tool_call" ? "input" : "arguments");
}

std::string ArgumentsText(std::string_view doc, const RawNode* arguments) {
  if (arguments == nullptr) return "";
  if (arguments->type == JsonType::kString) return DecodeJsonString(arguments->Text(doc));
  return std::string(arguments->Text(doc));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAIResponsesRequest>> OpenAIResponsesRequest::Parse(
    std::string body) {
  std::unique_ptr<OpenAIResponsesRequest> request(new OpenAIResponsesRequest());
  request->body_ = std::move(body);
  // Only `input` is navigated deeply: in an item its content, output or summary parts. Tools,
  // instructions and the rest are validated but not listed.
  static const RecordPolicy policy = [](int depth, std::string_view key, int limit) {
    // Tools down to each one's name and description, in namespaces too (ContextdToolNames).
    if (depth == 0) return key == "\"input\"" || key == "\"tools\"" ? limit : 1;
    if (depth == 2) {
      return key == "\"content\"" || key == "\"output\"" || key == "\"summary\"" ||
                     key == "\"tools\""
                 ? limit
                 : 3;
    }
    return limit;
  };
  auto root = ParseRawJson(request->body_, kRecordDepth, 256, &policy);
  if (!root.ok()) return root.status();
  request->root_ = *std::move(root);
  RETURN_IF_ERROR(request->Index());
  return request;
}

absl::Status OpenAIResponsesRequest::Index() {
  std::string_view doc = body_;
  if (root_.type != JsonType::kObject) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  if (auto model = StringMember(doc, root_, "model")) model_ = *model;
  const RawNode* tools = FindMember(doc, root_, "tools");
  names_.DeclareFrom(doc, tools);
  SetOffersTools(tools);
  // History kept by the provider: what the model reads is not in this body, so no rewrite of it
  // could keep the conversation consistent.
  for (const char* name : {"previous_response_id", "conversation"}) {
    const RawNode* member = FindMember(doc, root_, name);
    if (member != nullptr && member->type != JsonType::kNull) {
      unfoldable_ = name;
      break;
    }
  }
  const RawNode* input = FindMember(doc, root_, "input");
  if (input == nullptr || input->type == JsonType::kNull) return absl::OkStatus();
  if (input->type == JsonType::kString) {
    // One user message of one text block (scrubbed like a Chat string content; nothing to fold).
    input_string_ = input;
    MessageRef& ref = refs_.emplace_back();
    BlockRef& block_ref = ref.blocks.emplace_back();
    block_ref.node = input;
    block_ref.texts.push_back({input->begin, input->end});
    Message& message = transcript_.messages.emplace_back();
    message.role = Role::kUser;
    Block& block = message.blocks.emplace_back();
    block.kind = BlockKind::kText;
    block.type = "input_text";
    block.text = DecodeJsonString(input->Text(doc), kTextPrefixBytes);
    return absl::OkStatus();
  }
  if (input->type != JsonType::kArray) {
    return absl::InvalidArgumentError("input: a string or an array of items is required");
  }
  input_ = input;
  const std::vector<RawNode>& wires = input_->children;
  wire_types_.reserve(wires.size());
  wire_roles_.reserve(wires.size());
  for (size_t w = 0; w < wires.size(); ++w) {
    if (wires[w].type != JsonType::kObject) {
      return absl::InvalidArgumentError(absl::StrCat("input.", w, ": an object is required"));
    }
    std::string role = StringMember(doc, wires[w], "role").value_or("");
    std::string type = StringMember(doc, wires[w], "type").value_or("");
    // An item without a type but with a role is a message (EasyInputMessage).
    if (type.empty() && FindMember(doc, wires[w], "role") != nullptr) type = "message";
    wire_types_.push_back(std::move(type));
    wire_roles_.push_back(std::move(role));
  }
  while (preamble_ < wires.size() && wire_types_[preamble_] == "message" &&
         IsPreambleRole(wire_roles_[preamble_])) {
    ++preamble_;
  }

  // Calls of the previous message that are contextd's branch tools: their outputs' text is read
  // now (the fold core looks for branch ids in it); every other text is read on demand.
  std::vector<std::string> branch_calls;
  size_t w = preamble_;
  while (w < wires.size()) {
    const Side side = SideOf(wire_types_[w], wire_roles_[w]);
    size_t end = w + 1;
    if (side != Side::kOther) {
      while (end < wires.size() && SideOf(wire_types_[end], wire_roles_[end]) == side) ++end;
    }
    const size_t m = refs_.size();
    MessageRef& ref = refs_.emplace_back();
    ref.first_wire = w;
    ref.end_wire = end;
    transcript_.messages.emplace_back().role = side == Side::kUser        ? Role::kUser
                                               : side == Side::kAssistant ? Role::kAssistant
                                               : side == Side::kSystem    ? Role::kSystem
                                                                          : Role::kOther;
    std::vector<std::string> calls_here;
    // Tool outputs first, as a Messages user turn holds its results; then the rest, in order.
    for (bool results : {true, false}) {
      for (size_t k = w; k < end; ++k) IndexWire(m, k, results, branch_calls, calls_here);
    }
    // A system message between a turn and its answer leaves the pairing as it was.
    if (side != Side::kSystem) branch_calls = std::move(calls_here);
    w = end;
  }
  return absl::OkStatus();
}

void OpenAIResponsesRequest::IndexWire(size_t m, size_t wire, bool results,
                                       const std::vector<std::string>& branch_calls,
                                       std::vector<std::string>& calls_here) {
  std::string_view doc = body_;
  const RawNode& node = input_->children[wire];
  const std::string& type = wire_types_[wire];
  if (IsToolOutput(type) != results) return;
  MessageRef& ref = refs_[m];
  Message& message = transcript_.messages[m];
  auto add = [&](const RawNode* at, BlockKind kind, std::string block_type) -> Block& {
    BlockRef& block_ref = ref.blocks.emplace_back();
    block_ref.node = at;
    block_ref.wire = wire;
    Block& block = message.blocks.emplace_back();
    block.kind = kind;
    block.type = std::move(block_type);
    return block;
  };
  if (results) {
    // The whole item is the result: its call_id and its output go together.
    Block& block = add(&node, BlockKind::kToolResult, type);
    block.call_id = StringMember(doc, node, "call_id").value_or("");
    ref.blocks.back().texts = ValueTexts(doc, FindMember(doc, node, "output"));
    if (std::find(branch_calls.begin(), branch_calls.end(), block.call_id) != branch_calls.end()) {
      block.text = BlockText(m, message.blocks.size() - 1);
    }
    return;
  }
  if (IsToolCall(type)) {
    Block& block = add(&node, BlockKind::kToolCall, type);
    block.call_id = StringMember(doc, node, "call_id").value_or("");
    std::string name = StringMember(doc, node, "name").value_or("");
    // A tool offered inside a namespace (Codex: "mcp__contextd") is named with it, as MCP
    // clients name their tools.
    block.tool_name = NamespacedToolName(StringMember(doc, node, "namespace").value_or(""), name);
    block.contextd_tool = names_.Resolve(block.tool_name);
    if (IsBranchCall(block)) {
      block.text = ArgumentsText(doc, ArgumentsOf(doc, node, type));
      calls_here.push_back(block.call_id);
    }
    return;
  }
  if (type == "reasoning") {
    // Bound to the items before it by the provider: never changed, never scrubbed.
    add(&node, BlockKind::kThinking, type);
    return;
  }
  if (type != "message") {
    // A provider-run tool's call, an item reference, a type not known: passed through, and a
    // branch holding one is left whole.
    add(&node, BlockKind::kOther, type);
    return;
  }
  const RawNode* content = FindMember(doc, node, "content");
  if (content != nullptr && content->type == JsonType::kString) {
    Block& block = add(content, BlockKind::kText, "input_text");
    ref.blocks.back().texts.push_back({content->begin, content->end});
    block.text = DecodeJsonString(content->Text(doc), kTextPrefixBytes);
  } else if (content != nullptr && content->type == JsonType::kArray) {
    for (const RawNode& part : content->children) {
      if (part.type != JsonType::kObject) {
        add(&part, BlockKind::kOther, "");
        continue;
      }
      std::string part_type = StringMember(doc, part, "type").value_or("");
      BlockKind kind = PartKind(part_type);
      Block& block = add(&part, kind, part_type);
      if (kind != BlockKind::kText) continue;
      const RawNode* text = FindMember(doc, part, part_type == "refusal" ? "refusal" : "text");
      if (text == nullptr || text->type != JsonType::kString) continue;
      ref.blocks.back().texts.push_back({text->begin, text->end});
      block.text = DecodeJsonString(text->Text(doc), kTextPrefixBytes);
    }
  }
}

std::string OpenAIResponsesRequest::BlockText(size_t message, size_t block) const {
  const BlockRef& ref = refs_[message].blocks[block];
  const Block& neutral = transcript_.messages[message].blocks[block];
  std::string_view doc = body_;
  if (neutral.kind == BlockKind::kToolCall) {
    return ArgumentsText(doc, ArgumentsOf(doc, *ref.node, neutral.type));
  }
  std::vector<TextSpan> summary;
  const std::vector<TextSpan>* spans = &ref.texts;
  if (neutral.kind == BlockKind::kThinking) {
    // What the client sees of the reasoning: its summary (the rest is encrypted).
    const RawNode* parts = FindMember(doc, *ref.node, "summary");
    if (parts != nullptr && parts->type == JsonType::kArray) {
      for (const RawNode& part : parts->children) {
        if (part.type != JsonType::kObject) continue;
        const RawNode* text = FindMember(doc, part, "text");
        if (text != nullptr && text->type == JsonType::kString) {
          summary.push_back({text->begin, text->end});
        }
      }
    }
    spans = &summary;
  }
  std::string out;
  for (const TextSpan& span : *spans) {
    if (!out.empty()) out.push_back('\n');
    out += DecodeJsonString(doc.substr(span.begin, span.end - span.begin));
  }
  return out;
}

const std::vector<TextSpan>& OpenAIResponsesRequest::TextSpans(size_t message, size_t block) const {
  return refs_[message].blocks[block].texts;
}

std::string OpenAIResponsesRequest::BlockKey(const BlockRef& ref, const Block& block) const {
  // Apart from the other adapters' keys: a block of one API never stands for another's.
  std::string_view bytes = ref.node->Text(body_);
  if (ref.node->type == JsonType::kString) return Digest({"openai-responses:string", bytes});
  switch (block.kind) {
    case BlockKind::kToolResult:
      return Digest({"openai-responses:output", bytes});
    case BlockKind::kToolCall:
      return Digest({"openai-responses:call", bytes});
    case BlockKind::kThinking:
      return Digest({"openai-responses:reasoning", bytes});
    default:
      break;
  }
  return Digest({"openai-responses:part", bytes});
}

void OpenAIResponsesRequest::ComputeKey(size_t m) {
  MessageRef& ref = refs_[m];
  Message& message = transcript_.messages[m];
  for (size_t b = 0; b < ref.blocks.size(); ++b) {
    message.blocks[b].key = BlockKey(ref.blocks[b], message.blocks[b]);
  }
  std::string key_input = absl::StrCat(KeyRole(message.role), ":");
  if (input_string_ != nullptr) {
    absl::StrAppend(&key_input, "|string|", message.blocks[0].key);
  }
  for (size_t wire = ref.first_wire; wire < ref.end_wire; ++wire) {
    // Each item's type and role mark where it starts (a run of items is one message); its blocks
    // follow in their transcript order.
    absl::StrAppend(&key_input, "|", wire_types_[wire], ":", wire_roles_[wire], "|");
    for (size_t b = 0; b < ref.blocks.size(); ++b) {
      if (ref.blocks[b].wire == wire) key_input += message.blocks[b].key;
    }
  }
  message.key = Digest({"openai-responses:message", key_input});
}

std::string OpenAIResponsesRequest::FirstMessageKey() {
  if (refs_.empty()) return "";
  if (transcript_.messages[0].key.empty()) ComputeKey(0);
  return transcript_.messages[0].key;
}

void OpenAIResponsesRequest::ComputeKeys() {
  for (size_t m = 0; m < refs_.size(); ++m) {
    if (transcript_.messages[m].key.empty()) ComputeKey(m);
  }
}

std::string OpenAIResponsesRequest::RewriteBlock(
    size_t message, size_t block,
    const std::vector<std::pair<TextSpan, std::string>>& replacements) const {
  return internal::RewriteWireBlock(body_, *refs_[message].blocks[block].node, replacements);
}

void OpenAIResponsesRequest::RenderAppend(size_t m, const RenderPlan& plan,
                                          std::string& out) const {
  auto append = plan.appends.find(m);
  if (append == plan.appends.end() || append->second.empty()) return;
  if (transcript_.messages[m].role != Role::kUser) return;
  // The stored parts are `{"type":"text","text":T}` (the shape the other APIs take); user content
  // in Responses is `input_text`: each part's text token is carried over as stored.
  const std::string parts = absl::StrCat("[", append->second, "]");
  auto parsed = ParseRawJson(parts, 3);
  if (!parsed.ok()) return;
  std::string content;
  for (const RawNode& part : parsed->children) {
    if (part.type != JsonType::kObject) continue;
    const RawNode* text = FindMember(parts, part, "text");
    if (text == nullptr || text->type != JsonType::kString) continue;
    absl::StrAppend(&content, content.empty() ? "" : ",",
                    "{\"type\":\"input_text\",\"text\":", std::string(text->Text(parts)), "}");
  }
  if (content.empty()) return;
  absl::StrAppend(&out, ",{\"type\":\"message\",\"role\":\"user\",\"content\":[", content, "]}");
}

void OpenAIResponsesRequest::RenderFold(const FoldEdit& edit, const RenderPlan& plan,
                                        std::string& out) const {
  const Message& create = transcript_.messages[edit.create_message];
  auto output_item = [&](const std::string& id, const std::string& text) {
    // The output of the call's own kind: a custom tool call is answered by a custom output.
    const char* type = "function_call_output";
    for (const Block& block : create.blocks) {
      if (block.kind == BlockKind::kToolCall && block.call_id == id &&
          block.type == "custom_tool_call") {
        type = "custom_tool_call_output";
      }
    }
    absl::StrAppend(&out, ",{\"type\":\"", type, "\",\"call_id\":", QuoteJsonString(id),
                    ",\"output\":", QuoteJsonString(text), "}");
  };
  output_item(edit.create_call_id, edit.result_text);
  for (const std::string& id : edit.stub_call_ids) output_item(id, StubResultText(edit.branch_id));
  // What stays of the span before its end (a person's words), in order, after them.
  internal::RenderKeptSpanItems(body_, *input_, refs_, edit, plan, out);
  // What the end's run holds besides tool outputs (its user messages) stays after them.
  const MessageRef& end = refs_[edit.end_message];
  for (size_t wire = end.first_wire; wire < end.end_wire; ++wire) {
    if (IsToolOutput(wire_types_[wire])) continue;
    out.push_back(',');
    internal::RenderWireItem(body_, *input_, end, edit.end_message, wire, plan, out);
  }
  RenderAppend(edit.end_message, plan, out);
}

std::string OpenAIResponsesRequest::Render(const RenderPlan& plan) const {
  if (plan.Empty()) return body_;
  if (input_string_ != nullptr) {
    // A string input can only have its text rewritten (nothing to fold; a notice would need it
    // turned into an array, and no branch can be open in a conversation of one message).
    auto it = plan.blocks.find({0, 0});
    if (it == plan.blocks.end()) return body_;
    return Splice(body_, 0, static_cast<uint32_t>(body_.size()),
                  {{input_string_->begin, input_string_->end, it->second}});
  }
  if (input_ == nullptr || input_->children.empty()) return body_;
  return internal::RenderWireArray(
      body_, *input_, preamble_, refs_, plan,
      {[&](size_t m, std::string& out) { RenderAppend(m, plan, out); },
       [&](const FoldEdit& edit, std::string& out) { RenderFold(edit, plan, out); },
       [&](const ViewEdit& view, std::string& out) {
         absl::StrAppend(&out,
                         "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                         "\"input_text\",\"text\":",
                         QuoteJsonString(view.opening), "}]}");
       }});
}

}  // namespace contextd::model
