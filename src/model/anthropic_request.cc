#include "model/anthropic_request.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::model {
namespace {

// Levels recorded: root, messages, message, content, block, block member, content part, part
// member.
constexpr int kRecordDepth = 7;

BlockKind KindOf(std::string_view type) {
  if (type == "text") return BlockKind::kText;
  if (type == "tool_use") return BlockKind::kToolCall;
  if (type == "tool_result") return BlockKind::kToolResult;
  if (type == "thinking" || type == "redacted_thinking") return BlockKind::kThinking;
  if (type == "image" || type == "document") return BlockKind::kMedia;
  // A tool the provider runs (server_tool_use, web_search_tool_result, web_fetch_tool_result,
  // ...): call and result sit in the model's own turn, so a fold removes them together.
  if (type == "server_tool_use" || (type.size() > 12 && type.ends_with("_tool_result"))) {
    return BlockKind::kServerTool;
  }
  return BlockKind::kOther;
}

Role RoleOf(std::string_view role) {
  if (role == "user") return Role::kUser;
  if (role == "assistant") return Role::kAssistant;
  if (role == "system") return Role::kSystem;
  return Role::kOther;
}

// Counts cache_control members among the elements of an array of objects.
int CountMarkers(std::string_view doc, const RawNode* array) {
  int n = 0;
  if (array == nullptr || array->type != JsonType::kArray) return 0;
  for (const RawNode& element : array->children) {
    if (element.type == JsonType::kObject && FindMember(doc, element, "cache_control")) ++n;
  }
  return n;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AnthropicRequest>> AnthropicRequest::Parse(
    std::string body, AnthropicRequest* previous) {
  std::unique_ptr<AnthropicRequest> request(new AnthropicRequest());
  request->body_ = std::move(body);
  // The messages the previous request of the conversation held byte for byte, at the same
  // offsets (everything before their end is unchanged), are taken over instead of read again.
  ArrayReuse reuse;
  size_t reused = 0;
  if (previous != nullptr && previous->messages_ != nullptr) {
    std::string_view now = request->body_;
    std::string_view then = previous->body_;
    size_t n = std::min(now.size(), then.size());
    size_t same = 0;
    // Compare in large chunks first (memcmp is fast), then narrow down.
    constexpr size_t kChunk = 4096;
    while (same + kChunk <= n && std::memcmp(now.data() + same, then.data() + same, kChunk) == 0) {
      same += kChunk;
    }
    while (same < n && now[same] == then[same]) ++same;
    // messages_ points into previous->root_, which `previous` (non-const) owns.
    std::vector<RawNode>& donor = const_cast<RawNode*>(previous->messages_)->children;
    if (previous->messages_->begin < same) {
      while (reused < donor.size() && donor[reused].end <= same &&
             reused < previous->transcript_.messages.size()) {
        ++reused;
      }
    }
    if (reused > 0) reuse = ArrayReuse{previous->messages_->begin, &donor, reused};
  }
  // Only `messages` is navigated deeply, and in a block only its `content` (a tool result's
  // parts): tool schemas, tool inputs and the rest are validated but not listed.
  static const RecordPolicy policy = [](int depth, std::string_view key, int limit) {
    if (depth == 0) return key == "\"messages\"" ? limit : 3;
    if (depth == 4 && key != "\"content\"") return 5;
    return limit;
  };
  auto root =
      ParseRawJson(request->body_, kRecordDepth, 256, &policy, reused > 0 ? &reuse : nullptr);
  if (!root.ok()) return root.status();
  request->root_ = *std::move(root);
  const bool took = reused > 0 && reuse.donor == nullptr;
  request->reused_messages_ = took ? reused : 0;
  RETURN_IF_ERROR(request->Index(took ? previous : nullptr, request->reused_messages_));
  return request;
}

absl::Status AnthropicRequest::Index(AnthropicRequest* previous, size_t reused) {
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
  markers_outside_messages_ =
      CountMarkers(doc, FindMember(doc, root_, "system")) + CountMarkers(doc, tools);
  names_.DeclareFrom(doc, tools);
  SetOffersTools(tools);

  refs_.reserve(messages_->children.size());
  transcript_.messages.reserve(messages_->children.size());
  // Calls of the previous message that are contextd's branch tools: their results' text is read
  // now (the fold core looks for branch ids in it); every other text is read on demand.
  std::vector<std::string> branch_calls;
  for (size_t m = 0; m < messages_->children.size(); ++m) {
    const RawNode& node = messages_->children[m];
    if (node.type != JsonType::kObject) {
      return absl::InvalidArgumentError(absl::StrCat("messages.", m, ": an object is required"));
    }
    if (m < reused) {
      // Taken over from the previous request (same bytes, same offsets): its neutral message,
      // keys included, and its text spans; only the node pointers are found again.
      MessageRef& ref = refs_.emplace_back();
      const MessageRef& old = previous->refs_[m];
      transcript_.messages.push_back(std::move(previous->transcript_.messages[m]));
      ref.node = &node;
      ref.string_content = old.string_content;
      ref.content = FindMember(doc, node, "content");
      ref.blocks.resize(old.blocks.size());
      for (size_t b = 0; b < old.blocks.size(); ++b) {
        BlockRef& block = ref.blocks[b];
        block.texts = old.blocks[b].texts;
        block.node = ref.string_content ? ref.content : &ref.content->children[b];
        if (old.blocks[b].cache_control != nullptr) {
          block.cache_control = FindMember(doc, *block.node, "cache_control");
        }
      }
      const Message& taken = transcript_.messages.back();
      if (taken.role == Role::kSystem || taken.role == Role::kOther) continue;
      branch_calls.clear();
      for (const Block& block : taken.blocks) {
        if (IsBranchCall(block)) branch_calls.push_back(block.call_id);
      }
      continue;
    }
    MessageRef& ref = refs_.emplace_back();
    Message& message = transcript_.messages.emplace_back();
    ref.node = &node;
    message.role = RoleOf(StringMember(doc, node, "role").value_or(""));
    ref.content = FindMember(doc, node, "content");
    std::vector<std::string> calls_here;
    if (ref.content != nullptr && ref.content->type == JsonType::kString) {
      ref.string_content = true;
      BlockRef& block_ref = ref.blocks.emplace_back();
      block_ref.node = ref.content;
      block_ref.texts.push_back({ref.content->begin, ref.content->end});
      Block& block = message.blocks.emplace_back();
      block.kind = BlockKind::kText;
      block.type = "text";
      block.text = DecodeJsonString(ref.content->Text(doc), kTextPrefixBytes);
    } else if (ref.content != nullptr && ref.content->type == JsonType::kArray) {
      for (const RawNode& element : ref.content->children) {
        BlockRef& block_ref = ref.blocks.emplace_back();
        Block& block = message.blocks.emplace_back();
        block_ref.node = &element;
        if (element.type != JsonType::kObject) {
          block.kind = BlockKind::kOther;
          continue;
        }
        block_ref.cache_control = FindMember(doc, element, "cache_control");
        block.cache_marker = block_ref.cache_control != nullptr;
        block.type = StringMember(doc, element, "type").value_or("");
        block.kind = KindOf(block.type);
        switch (block.kind) {
          case BlockKind::kText:
            if (const RawNode* text = FindMember(doc, element, "text");
                text != nullptr && text->type == JsonType::kString) {
              block_ref.texts.push_back({text->begin, text->end});
              block.text = DecodeJsonString(text->Text(doc), kTextPrefixBytes);
            }
            break;
          case BlockKind::kToolCall: {
            block.call_id = StringMember(doc, element, "id").value_or("");
            block.tool_name = StringMember(doc, element, "name").value_or("");
            block.contextd_tool = names_.Resolve(block.tool_name);
            if (IsBranchCall(block)) {
              if (const RawNode* input = FindMember(doc, element, "input")) {
                block.text = std::string(input->Text(doc));
              }
              calls_here.push_back(block.call_id);
            }
            break;
          }
          case BlockKind::kToolResult: {
            block.call_id = StringMember(doc, element, "tool_use_id").value_or("");
            const RawNode* is_error = FindMember(doc, element, "is_error");
            block.is_error = is_error != nullptr && is_error->Text(doc) == "true";
            const RawNode* content = FindMember(doc, element, "content");
            if (content == nullptr) break;
            if (content->type == JsonType::kString) {
              block_ref.texts.push_back({content->begin, content->end});
            } else if (content->type == JsonType::kArray) {
              for (const RawNode& part : content->children) {
                if (part.type != JsonType::kObject) continue;
                if (StringMember(doc, part, "type").value_or("") != "text") continue;
                const RawNode* text = FindMember(doc, part, "text");
                if (text == nullptr || text->type != JsonType::kString) continue;
                block_ref.texts.push_back({text->begin, text->end});
              }
            }
            if (std::find(branch_calls.begin(), branch_calls.end(), block.call_id) !=
                branch_calls.end()) {
              block.text = BlockText(m, message.blocks.size() - 1);
            }
            break;
          }
          case BlockKind::kThinking:
          case BlockKind::kMedia:
          case BlockKind::kServerTool:
          case BlockKind::kOther:
            break;
        }
      }
    }
    // A system message between a turn and its answer leaves the pairing as it was.
    if (message.role != Role::kSystem && message.role != Role::kOther) {
      branch_calls = std::move(calls_here);
    }
  }
  return absl::OkStatus();
}

std::string AnthropicRequest::BlockText(size_t message, size_t block) const {
  const BlockRef& ref = refs_[message].blocks[block];
  std::string_view doc = body_;
  const Block& neutral = transcript_.messages[message].blocks[block];
  if (neutral.kind == BlockKind::kToolCall) {
    if (const RawNode* input = FindMember(doc, *ref.node, "input")) {
      return std::string(input->Text(doc));
    }
    return "";
  }
  if (neutral.kind == BlockKind::kThinking) {
    return StringMember(doc, *ref.node, "thinking").value_or("");
  }
  if (neutral.kind == BlockKind::kServerTool) {
    // What the model reads of a web search or fetch result is in its JSON: counted as is.
    return std::string(ref.node->Text(doc));
  }
  std::string out;
  for (const TextSpan& span : ref.texts) {
    if (!out.empty()) out.push_back('\n');
    out += DecodeJsonString(doc.substr(span.begin, span.end - span.begin));
  }
  return out;
}

std::string AnthropicRequest::BlockKey(const BlockRef& ref, bool string_content) const {
  std::string_view doc = body_;
  if (string_content) return Digest({"string", ref.node->Text(doc)});
  if (ref.node->type != JsonType::kObject) return Digest({"other", ref.node->Text(doc)});
  if (ref.cache_control != nullptr) return Digest({"block", Normalized(ref)});
  return Digest({"block", ref.node->Text(doc)});
}

std::string AnthropicRequest::SystemBlockKey(const BlockRef& ref, bool string_content) const {
  std::string_view doc = body_;
  // Claude Code sends its newest system message as a text block (with the breakpoint) and the
  // same message as a string on later requests: both are one text, and keyed as such.
  bool plain_text = string_content;
  if (!string_content && ref.node->type == JsonType::kObject && ref.texts.size() == 1 &&
      StringMember(doc, *ref.node, "type").value_or("") == "text") {
    plain_text = std::all_of(ref.node->children.begin(), ref.node->children.end(),
                             [&](const RawNode& member) {
                               return KeyIs(doc, member, "type") || KeyIs(doc, member, "text") ||
                                      KeyIs(doc, member, "cache_control");
                             });
  }
  if (!plain_text) return BlockKey(ref, string_content);
  const TextSpan& text = ref.texts.front();
  return Digest({"system-text", DecodeJsonString(doc.substr(text.begin, text.end - text.begin))});
}

void AnthropicRequest::ComputeKey(size_t m) {
  const MessageRef& ref = refs_[m];
  Message& message = transcript_.messages[m];
  const bool other = message.role == Role::kOther || message.role == Role::kSystem;
  std::string key_input = absl::StrCat(KeyRole(message.role), ":");
  for (size_t b = 0; b < ref.blocks.size(); ++b) {
    message.blocks[b].key = message.role == Role::kSystem
                                ? SystemBlockKey(ref.blocks[b], ref.string_content)
                                : BlockKey(ref.blocks[b], ref.string_content);
    key_input += message.blocks[b].key;
  }
  if (other) {
    key_input += Digest({"role", StringMember(body_, *ref.node, "role").value_or("")});
  }
  message.key = Digest({"message", key_input});
}

std::string AnthropicRequest::FirstMessageKey() {
  if (refs_.empty()) return "";
  if (transcript_.messages[0].key.empty()) ComputeKey(0);
  return transcript_.messages[0].key;
}

void AnthropicRequest::ComputeKeys() {
  for (size_t m = 0; m < refs_.size(); ++m) {
    // Message 0 may have its key (FirstMessageKey); taken-over messages have theirs (Parse).
    if (transcript_.messages[m].key.empty()) ComputeKey(m);
  }
}

const std::vector<AnthropicRequest::TextSpan>& AnthropicRequest::TextSpans(size_t message,
                                                                           size_t block) const {
  return refs_[message].blocks[block].texts;
}

std::string AnthropicRequest::Normalized(const BlockRef& ref) const {
  return RewriteBlockRef(ref, {});
}

}  // namespace contextd::model

namespace contextd::model {
namespace {

// `object` (a JSON object's text) with a cache_control member holding `marker` added at its end.
std::string WithMarker(std::string object, std::string_view marker) {
  size_t close = object.rfind('}');
  if (close == std::string::npos) return object;
  size_t open = object.find('{');
  bool empty = object.find_first_not_of(" \t\r\n", open + 1) == close;
  object.insert(close, absl::StrCat(empty ? "" : ",", "\"cache_control\":", std::string(marker)));
  return object;
}

}  // namespace

std::string AnthropicRequest::RewriteBlockRef(
    const BlockRef& ref, const std::vector<std::pair<TextSpan, std::string>>& replacements) const {
  std::string_view doc = body_;
  const RawNode& node = *ref.node;
  if (node.type != JsonType::kObject) {
    // String content: the replacement is the new string token.
    if (!replacements.empty()) return replacements.front().second;
    return std::string(node.Text(doc));
  }
  std::vector<SpanEdit> edits;
  for (const auto& [span, text] : replacements) edits.push_back({span.begin, span.end, text});
  if (ref.cache_control != nullptr) {
    const std::vector<RawNode>& members = node.children;
    size_t k = static_cast<size_t>(ref.cache_control - members.data());
    if (k > 0) {
      edits.push_back({members[k - 1].end, members[k].end, {}});
    } else if (members.size() > 1) {
      edits.push_back({members[0].key_begin, members[1].key_begin, {}});
    } else {
      edits.push_back({members[0].key_begin, members[0].end, {}});
    }
  }
  return Splice(doc, node.begin, node.end, std::move(edits));
}

std::string AnthropicRequest::RewriteBlock(
    size_t message, size_t block,
    const std::vector<std::pair<TextSpan, std::string>>& replacements) const {
  return RewriteBlockRef(refs_[message].blocks[block], replacements);
}

std::string_view AnthropicRequest::Separator(size_t m) const {
  if (m == 0 || m >= messages_->children.size()) return ",";
  const RawNode& prev = messages_->children[m - 1];
  const RawNode& next = messages_->children[m];
  return std::string_view(body_).substr(prev.end, next.begin - prev.end);
}

void AnthropicRequest::RenderBlock(size_t m, size_t b, const RenderPlan& plan,
                                   std::string& out) const {
  const BlockRef& ref = refs_[m].blocks[b];
  auto it = plan.blocks.find({m, b});
  if (it == plan.blocks.end()) {
    out.append(ref.node->Text(body_));
    return;
  }
  if (ref.cache_control == nullptr) {
    out.append(it->second);
    return;
  }
  out.append(WithMarker(it->second, ref.cache_control->Text(body_)));
}

void AnthropicRequest::RenderMessage(size_t m, const RenderPlan& plan, std::string& out) const {
  const MessageRef& ref = refs_[m];
  std::string_view doc = body_;
  auto append = plan.appends.find(m);
  bool changed = append != plan.appends.end();
  for (size_t b = 0; b < ref.blocks.size() && !changed; ++b) {
    changed = plan.blocks.count({m, b}) || plan.dropped.count({m, b});
  }
  if (!changed || ref.content == nullptr) {
    out.append(ref.node->Text(doc));
    return;
  }
  out.append(doc.substr(ref.node->begin, ref.content->begin - ref.node->begin));
  if (ref.string_content && append == plan.appends.end()) {
    RenderBlock(m, 0, plan, out);
  } else {
    out.push_back('[');
    if (ref.string_content) {
      out.append("{\"type\":\"text\",\"text\":");
      RenderBlock(m, 0, plan, out);
      out.push_back('}');
    } else {
      bool first = true;
      for (size_t b = 0; b < ref.blocks.size(); ++b) {
        if (plan.dropped.count({m, b})) continue;
        if (!first) out.push_back(',');
        first = false;
        RenderBlock(m, b, plan, out);
      }
    }
    if (append != plan.appends.end() && !append->second.empty()) {
      if (out.back() != '[') out.push_back(',');
      out.append(append->second);
    }
    out.push_back(']');
  }
  out.append(doc.substr(ref.content->end, ref.node->end - ref.content->end));
}

int AnthropicRequest::MarkerCount(const RenderPlan& plan) const {
  int count = markers_outside_messages_;
  size_t fold = 0;
  for (size_t m = 0; m < refs_.size(); ++m) {
    if (plan.view && m == plan.view->keep) {
      fold = plan.FoldAfterView(fold);
      m = plan.view->resume - 1;
      continue;
    }
    if (fold < plan.folds.size() && m > plan.folds[fold].create_message) {
      const FoldEdit& edit = plan.folds[fold];
      for (const auto& [km, kb] : edit.kept_blocks) {
        count += refs_[km].blocks[kb].cache_control != nullptr;
      }
      m = edit.end_message;
      ++fold;
      continue;
    }
    for (size_t b = 0; b < refs_[m].blocks.size(); ++b) {
      count += refs_[m].blocks[b].cache_control != nullptr && !plan.dropped.count({m, b});
    }
  }
  return count;
}

std::string AnthropicRequest::CreateResultReminders(std::pair<size_t, size_t> at,
                                                    const RenderPlan& plan) const {
  // The block as the model would receive it: its redaction decision, if it has one.
  std::string block;
  RenderBlock(at.first, at.second, plan, block);
  auto parsed = ParseRawJson(block, 3);
  if (!parsed.ok() || parsed->type != JsonType::kObject) return "";
  const RawNode* content = FindMember(block, *parsed, "content");
  std::string text;
  if (content != nullptr && content->type == JsonType::kString) {
    text = DecodeJsonString(content->Text(block));
  } else if (content != nullptr && content->type == JsonType::kArray) {
    for (const RawNode& part : content->children) {
      if (part.type != JsonType::kObject) continue;
      if (auto part_text = StringMember(block, part, "text")) {
        absl::StrAppend(&text, text.empty() ? "" : "\n", *part_text);
      }
    }
  }
  return std::string(AppendedReminders(text));
}

bool AnthropicRequest::RenderFold(const FoldEdit& edit, const RenderPlan& plan, int markers_left,
                                  std::string& out) const {
  std::vector<std::string> blocks;
  std::string result_text = edit.result_text;
  if (edit.create_result) {
    // What the client appended to the create's result (as redacted for the model) rides on.
    std::string reminders = CreateResultReminders(*edit.create_result, plan);
    if (!reminders.empty()) absl::StrAppend(&result_text, "\n\n", reminders);
  }
  blocks.push_back(absl::StrCat(
      "{\"type\":\"tool_result\",\"tool_use_id\":", QuoteJsonString(edit.create_call_id),
      ",\"content\":", QuoteJsonString(result_text), "}"));
  for (const std::string& id : edit.stub_call_ids) {
    blocks.push_back(absl::StrCat("{\"type\":\"tool_result\",\"tool_use_id\":", QuoteJsonString(id),
                                  ",\"content\":", QuoteJsonString(StubResultText(edit.branch_id)),
                                  "}"));
  }
  bool kept_marker = false;
  for (const auto& [km, kb] : edit.kept_blocks) {
    std::string text;
    if (refs_[km].string_content) {
      // A message whose content is a string: its text as a block.
      text = "{\"type\":\"text\",\"text\":";
      RenderBlock(km, kb, plan, text);
      text.push_back('}');
    } else {
      RenderBlock(km, kb, plan, text);
    }
    kept_marker |= refs_[km].blocks[kb].cache_control != nullptr;
    blocks.push_back(std::move(text));
  }
  // A breakpoint on a removed block moves to the block that replaces it (the last one here).
  const RawNode* moved = nullptr;
  for (size_t m = edit.create_message + 1; m <= edit.end_message && moved == nullptr; ++m) {
    for (size_t b = 0; b < refs_[m].blocks.size(); ++b) {
      const BlockRef& ref = refs_[m].blocks[b];
      bool kept = std::find(edit.kept_blocks.begin(), edit.kept_blocks.end(),
                            std::make_pair(m, b)) != edit.kept_blocks.end();
      if (ref.cache_control != nullptr && !kept) {
        moved = ref.cache_control;
        break;
      }
    }
  }
  const bool move = moved != nullptr && !kept_marker && markers_left > 0;
  if (move) blocks.back() = WithMarker(std::move(blocks.back()), moved->Text(body_));
  out.append("{\"role\":\"user\",\"content\":[");
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(blocks[i]);
  }
  auto append = plan.appends.find(edit.end_message);
  if (append != plan.appends.end() && !append->second.empty()) {
    out.push_back(',');
    out.append(append->second);
  }
  out.append("]}");
  return move;
}

bool AnthropicRequest::RenderOpening(const ViewEdit& view, int markers_left,
                                     std::string& out) const {
  std::string block =
      absl::StrCat("{\"type\":\"text\",\"text\":", QuoteJsonString(view.opening), "}");
  const RawNode* moved = nullptr;
  for (size_t m = view.keep; m < view.resume && m < refs_.size() && moved == nullptr; ++m) {
    for (const BlockRef& ref : refs_[m].blocks) {
      if (ref.cache_control != nullptr) {
        moved = ref.cache_control;
        break;
      }
    }
  }
  const bool move = moved != nullptr && markers_left > 0;
  if (move) block = WithMarker(std::move(block), moved->Text(body_));
  absl::StrAppend(&out, "{\"role\":\"user\",\"content\":[", block, "]}");
  return move;
}

std::string AnthropicRequest::Render(const RenderPlan& plan) const {
  if (plan.Empty()) return body_;
  std::string_view doc = body_;
  std::string out;
  out.reserve(body_.size());
  out.append(doc.substr(0, messages_->begin));
  out.push_back('[');
  int markers_left = 4 - MarkerCount(plan);
  size_t fold = 0;
  const size_t n = refs_.size();
  for (size_t m = 0; m < n; ++m) {
    if (m > 0) out.append(Separator(m));
    if (plan.view && m == plan.view->keep) {
      if (RenderOpening(*plan.view, markers_left, out)) markers_left -= 1;
      fold = plan.FoldAfterView(fold);
      m = plan.view->resume - 1;
      continue;
    }
    RenderMessage(m, plan, out);
    if (fold < plan.folds.size() && plan.folds[fold].create_message == m) {
      const FoldEdit& edit = plan.folds[fold];
      out.push_back(',');
      // A moved marker uses one of the four.
      if (RenderFold(edit, plan, markers_left, out)) markers_left -= 1;
      m = edit.end_message;
      ++fold;
    }
  }
  out.push_back(']');
  out.append(doc.substr(messages_->end));
  return out;
}

}  // namespace contextd::model
