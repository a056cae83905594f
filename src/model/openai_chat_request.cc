#include "model/openai_chat_request.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::model {
namespace {

// Levels recorded: root, messages, message, content or tool_calls, part or call, a call's
// `function` (whose name and arguments are read).
constexpr int kRecordDepth = 6;

BlockKind PartKind(std::string_view type) {
  if (type == "text" || type == "refusal") return BlockKind::kText;
  if (type == "image_url" || type == "input_audio" || type == "file") return BlockKind::kMedia;
  return BlockKind::kOther;
}

bool IsPreambleRole(std::string_view role) { return role == "system" || role == "developer"; }

// The string tokens of a content that is a string or an array of text parts.
std::vector<TextSpan> ContentTexts(std::string_view doc, const RawNode* content) {
  std::vector<TextSpan> texts;
  if (content == nullptr) return texts;
  if (content->type == JsonType::kString) {
    texts.push_back({content->begin, content->end});
  } else if (content->type == JsonType::kArray) {
    for (const RawNode& part : content->children) {
      if (part.type != JsonType::kObject) continue;
      if (StringMember(doc, part, "type").value_or("") != "text") continue;
      const RawNode* text = FindMember(doc, part, "text");
      if (text == nullptr || text->type != JsonType::kString) continue;
      texts.push_back({text->begin, text->end});
    }
  }
  return texts;
}

// A tool call's name and the member holding its arguments: `function.name` and
// `function.arguments`, or a custom tool call's `custom.name` and `custom.input`.
struct CallParts {
  std::string name;
  const RawNode* arguments = nullptr;
};
CallParts CallOf(std::string_view doc, const RawNode& call) {
  CallParts parts;
  for (const auto& [member, argument] :
       {std::pair<const char*, const char*>{"function", "arguments"}, {"custom", "input"}}) {
    const RawNode* inner = FindMember(doc, call, member);
    if (inner == nullptr || inner->type != JsonType::kObject) continue;
    parts.name = StringMember(doc, *inner, "name").value_or("");
    parts.arguments = FindMember(doc, *inner, argument);
    break;
  }
  return parts;
}

// The decoded arguments (a JSON string holding JSON), or their bytes when they are not a string.
std::string ArgumentsText(std::string_view doc, const RawNode* arguments) {
  if (arguments == nullptr) return "";
  if (arguments->type == JsonType::kString) return DecodeJsonString(arguments->Text(doc));
  return std::string(arguments->Text(doc));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAIChatRequest>> OpenAIChatRequest::Parse(std::string body) {
  std::unique_ptr<OpenAIChatRequest> request(new OpenAIChatRequest());
  request->body_ = std::move(body);
  // Only `messages` is navigated deeply: in a message its content and tool calls, in a tool call
  // its function. Tools, response formats and the rest are validated but not listed.
  static const RecordPolicy policy = [](int depth, std::string_view key, int limit) {
    // Tools down to each function's name and description (ContextdToolNames).
    if (depth == 0) return key == "\"messages\"" ? limit : key == "\"tools\"" ? 4 : 1;
    if (depth == 2) {
      return key == "\"content\"" || key == "\"tool_calls\"" || key == "\"function\"" ? limit : 3;
    }
    if (depth == 4) return key == "\"function\"" || key == "\"custom\"" ? limit : 5;
    return limit;
  };
  auto root = ParseRawJson(request->body_, kRecordDepth, 256, &policy);
  if (!root.ok()) return root.status();
  request->root_ = *std::move(root);
  RETURN_IF_ERROR(request->Index());
  return request;
}

absl::Status OpenAIChatRequest::Index() {
  std::string_view doc = body_;
  if (root_.type != JsonType::kObject) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  messages_ = FindMember(doc, root_, "messages");
  if (messages_ == nullptr || messages_->type != JsonType::kArray) {
    return absl::InvalidArgumentError("messages: an array is required");
  }
  if (auto model = StringMember(doc, root_, "model")) model_ = *model;
  const RawNode* tools = FindMember(doc, root_, "tools");
  names_.DeclareFrom(doc, tools);
  SetOffersTools(tools);
  const std::vector<RawNode>& wires = messages_->children;
  wire_roles_.reserve(wires.size());
  for (size_t w = 0; w < wires.size(); ++w) {
    if (wires[w].type != JsonType::kObject) {
      return absl::InvalidArgumentError(absl::StrCat("messages.", w, ": an object is required"));
    }
    wire_roles_.push_back(StringMember(doc, wires[w], "role").value_or(""));
  }
  while (preamble_ < wires.size() && IsPreambleRole(wire_roles_[preamble_])) ++preamble_;

  // Calls of the previous message that are contextd's branch tools: their results' text is read
  // now (the fold core looks for branch ids in it); every other text is read on demand.
  std::vector<std::string> branch_calls;
  size_t w = preamble_;
  while (w < wires.size()) {
    const std::string& role = wire_roles_[w];
    size_t end = w + 1;
    Role neutral = IsPreambleRole(role) ? Role::kSystem : Role::kOther;
    if (role == "assistant") {
      neutral = Role::kAssistant;
    } else if (role == "user" || role == "tool") {
      neutral = Role::kUser;
      while (end < wires.size() && (wire_roles_[end] == "user" || wire_roles_[end] == "tool")) {
        ++end;
      }
    }
    const size_t m = refs_.size();
    MessageRef& ref = refs_.emplace_back();
    ref.first_wire = w;
    ref.end_wire = end;
    transcript_.messages.emplace_back().role = neutral;
    std::vector<std::string> calls_here;
    for (size_t k = w; k < end; ++k) IndexWire(m, k, branch_calls, calls_here);
    // A system message between a turn and its answer leaves the pairing as it was.
    if (neutral != Role::kSystem) branch_calls = std::move(calls_here);
    w = end;
  }
  return absl::OkStatus();
}

void OpenAIChatRequest::IndexWire(size_t m, size_t wire,
                                  const std::vector<std::string>& branch_calls,
                                  std::vector<std::string>& calls_here) {
  std::string_view doc = body_;
  const RawNode& node = messages_->children[wire];
  MessageRef& ref = refs_[m];
  Message& message = transcript_.messages[m];
  auto add = [&](const RawNode* at, BlockKind kind, std::string type) -> Block& {
    BlockRef& block_ref = ref.blocks.emplace_back();
    block_ref.node = at;
    block_ref.wire = wire;
    Block& block = message.blocks.emplace_back();
    block.kind = kind;
    block.type = std::move(type);
    return block;
  };
  const std::string& role = wire_roles_[wire];
  if (role == "tool") {
    // The whole message is the result: its tool_call_id and its content go together.
    Block& block = add(&node, BlockKind::kToolResult, "tool");
    block.call_id = StringMember(doc, node, "tool_call_id").value_or("");
    ref.blocks.back().texts = ContentTexts(doc, FindMember(doc, node, "content"));
    if (std::find(branch_calls.begin(), branch_calls.end(), block.call_id) != branch_calls.end()) {
      block.text = BlockText(m, message.blocks.size() - 1);
    }
    return;
  }
  if (role == "function") {
    // The deprecated function-call answer: it names no call, so a branch holding it stays whole.
    add(&node, BlockKind::kOther, "function");
    return;
  }
  const RawNode* content = FindMember(doc, node, "content");
  if (content != nullptr && content->type == JsonType::kString) {
    Block& block = add(content, BlockKind::kText, "text");
    ref.blocks.back().texts.push_back({content->begin, content->end});
    block.text = DecodeJsonString(content->Text(doc), kTextPrefixBytes);
  } else if (content != nullptr && content->type == JsonType::kArray) {
    for (const RawNode& part : content->children) {
      if (part.type != JsonType::kObject) {
        add(&part, BlockKind::kOther, "");
        continue;
      }
      std::string type = StringMember(doc, part, "type").value_or("");
      BlockKind kind = PartKind(type);
      Block& block = add(&part, kind, type);
      if (kind != BlockKind::kText) continue;
      const RawNode* text = FindMember(doc, part, type == "refusal" ? "refusal" : "text");
      if (text == nullptr || text->type != JsonType::kString) continue;
      ref.blocks.back().texts.push_back({text->begin, text->end});
      block.text = DecodeJsonString(text->Text(doc), kTextPrefixBytes);
    }
  }
  if (role != "assistant") return;
  if (const RawNode* calls = FindMember(doc, node, "tool_calls");
      calls != nullptr && calls->type == JsonType::kArray) {
    for (const RawNode& call : calls->children) {
      if (call.type != JsonType::kObject) {
        add(&call, BlockKind::kOther, "");
        continue;
      }
      Block& block = add(&call, BlockKind::kToolCall, StringMember(doc, call, "type").value_or(""));
      block.call_id = StringMember(doc, call, "id").value_or("");
      CallParts parts = CallOf(doc, call);
      block.tool_name = std::move(parts.name);
      block.contextd_tool = names_.Resolve(block.tool_name);
      if (IsBranchCall(block)) {
        block.text = ArgumentsText(doc, parts.arguments);
        calls_here.push_back(block.call_id);
      }
    }
  }
  if (const RawNode* legacy = FindMember(doc, node, "function_call");
      legacy != nullptr && legacy->type == JsonType::kObject) {
    add(legacy, BlockKind::kOther, "function_call");
  }
}

std::string OpenAIChatRequest::BlockText(size_t message, size_t block) const {
  const BlockRef& ref = refs_[message].blocks[block];
  std::string_view doc = body_;
  if (transcript_.messages[message].blocks[block].kind == BlockKind::kToolCall) {
    return ArgumentsText(doc, CallOf(doc, *ref.node).arguments);
  }
  std::string out;
  for (const TextSpan& span : ref.texts) {
    if (!out.empty()) out.push_back('\n');
    out += DecodeJsonString(doc.substr(span.begin, span.end - span.begin));
  }
  return out;
}

const std::vector<TextSpan>& OpenAIChatRequest::TextSpans(size_t message, size_t block) const {
  return refs_[message].blocks[block].texts;
}

std::string OpenAIChatRequest::BlockKey(const BlockRef& ref, const Block& block) const {
  // Apart from the Messages adapter's keys: a block of one API never stands for the other's.
  std::string_view bytes = ref.node->Text(body_);
  if (ref.node->type == JsonType::kString) return Digest({"openai-chat:string", bytes});
  if (block.kind == BlockKind::kToolResult) return Digest({"openai-chat:tool", bytes});
  if (block.kind == BlockKind::kToolCall) return Digest({"openai-chat:call", bytes});
  return Digest({"openai-chat:part", bytes});
}

void OpenAIChatRequest::ComputeKey(size_t m) {
  const MessageRef& ref = refs_[m];
  Message& message = transcript_.messages[m];
  std::string key_input = absl::StrCat(KeyRole(message.role), ":");
  size_t b = 0;
  for (size_t wire = ref.first_wire; wire < ref.end_wire; ++wire) {
    // Each element's role marks where it starts (a run of user and tool messages is one message).
    absl::StrAppend(&key_input, "|", wire_roles_[wire], "|");
    for (; b < ref.blocks.size() && ref.blocks[b].wire == wire; ++b) {
      message.blocks[b].key = BlockKey(ref.blocks[b], message.blocks[b]);
      key_input += message.blocks[b].key;
    }
  }
  message.key = Digest({"openai-chat:message", key_input});
}

std::string OpenAIChatRequest::FirstMessageKey() {
  if (refs_.empty()) return "";
  if (transcript_.messages[0].key.empty()) ComputeKey(0);
  return transcript_.messages[0].key;
}

void OpenAIChatRequest::ComputeKeys() {
  for (size_t m = 0; m < refs_.size(); ++m) {
    if (transcript_.messages[m].key.empty()) ComputeKey(m);
  }
}

std::string OpenAIChatRequest::RewriteBlock(
    size_t message, size_t block,
    const std::vector<std::pair<TextSpan, std::string>>& replacements) const {
  return internal::RewriteWireBlock(body_, *refs_[message].blocks[block].node, replacements);
}

void OpenAIChatRequest::RenderAppend(size_t m, const RenderPlan& plan, std::string& out) const {
  auto append = plan.appends.find(m);
  if (append == plan.appends.end() || append->second.empty()) return;
  if (transcript_.messages[m].role == Role::kAssistant) return;
  absl::StrAppend(&out, ",{\"role\":\"user\",\"content\":[", append->second, "]}");
}

void OpenAIChatRequest::RenderFold(const FoldEdit& edit, const RenderPlan& plan,
                                   std::string& out) const {
  auto tool_message = [&](const std::string& id, const std::string& text) {
    absl::StrAppend(&out, ",{\"role\":\"tool\",\"tool_call_id\":", QuoteJsonString(id),
                    ",\"content\":", QuoteJsonString(text), "}");
  };
  tool_message(edit.create_call_id, edit.result_text);
  for (const std::string& id : edit.stub_call_ids) tool_message(id, StubResultText(edit.branch_id));
  // What stays of the span before its end (a person's words), in order, after them.
  internal::RenderKeptSpanItems(body_, *messages_, refs_, edit, plan, out);
  // What the end's run holds besides tool results (its user messages) stays after them.
  const MessageRef& end = refs_[edit.end_message];
  for (size_t wire = end.first_wire; wire < end.end_wire; ++wire) {
    if (wire_roles_[wire] == "tool") continue;
    out.push_back(',');
    internal::RenderWireItem(body_, *messages_, end, edit.end_message, wire, plan, out);
  }
  RenderAppend(edit.end_message, plan, out);
}

std::string OpenAIChatRequest::Render(const RenderPlan& plan) const {
  if (plan.Empty()) return body_;
  if (messages_->children.empty()) return body_;
  return internal::RenderWireArray(
      body_, *messages_, preamble_, refs_, plan,
      {[&](size_t m, std::string& out) { RenderAppend(m, plan, out); },
       [&](const FoldEdit& edit, std::string& out) { RenderFold(edit, plan, out); },
       [&](const ViewEdit& view, std::string& out) {
         absl::StrAppend(&out, "{\"role\":\"user\",\"content\":", QuoteJsonString(view.opening),
                         "}");
       }});
}

}  // namespace contextd::model
