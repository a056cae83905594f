#include "model/tool_names.h"

#include <algorithm>
#include <array>
#include <optional>

#include "protocol/contextd_tools.h"

namespace contextd::model {
namespace {

// How clients prefix the tools of a server named "contextd", longest first so that
// "contextd__x" is not read as "contextd_" + "_x".
constexpr std::array<std::string_view, 6> kDefaultPrefixes = {
    "mcp__contextd__", "contextd__", "contextd_", "contextd.", "contextd/", "contextd-"};

bool IsOwnTool(std::string_view name) {
  return std::find(protocol::kContextdToolNames.begin(), protocol::kContextdToolNames.end(),
                   name) != protocol::kContextdToolNames.end();
}

}  // namespace

std::string NamespacedToolName(std::string_view space, std::string_view name) {
  std::string out(space);
  if (!space.empty() && !space.ends_with("__")) out += "__";
  out += name;
  return out;
}

bool ContextdToolNames::Declare(std::string_view name, std::string_view description) {
  if (!name.ends_with(protocol::kBranchCreateTool)) return false;
  if (!description.starts_with(protocol::kBranchCreateDescriptionOpening)) return false;
  std::string prefix(name.substr(0, name.size() - protocol::kBranchCreateTool.size()));
  if (prefix.empty()) return false;  // the bare names are always contextd's
  if (std::find(declared_.begin(), declared_.end(), prefix) != declared_.end()) return true;
  declared_.push_back(std::move(prefix));
  std::stable_sort(declared_.begin(), declared_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return true;
}

namespace {

// The opening of the description member of `holder`, decoded only as far as a Declare needs.
std::optional<std::string> DescriptionOpening(std::string_view doc, const RawNode& holder) {
  const RawNode* description = FindMember(doc, holder, "description");
  if (description == nullptr || description->type != JsonType::kString) return std::nullopt;
  return DecodeJsonString(description->Text(doc), protocol::kBranchCreateDescriptionOpening.size());
}

}  // namespace

void ContextdToolNames::DeclareFrom(std::string_view doc, const RawNode* tools) {
  if (tools == nullptr || tools->type != JsonType::kArray) return;
  // Each request lists every tool (Claude Code: dozens, with long descriptions): only a name
  // ending in branch_create has its description's opening read.
  auto declare = [&](std::string name, const RawNode& holder) {
    if (!name.ends_with(protocol::kBranchCreateTool)) return;
    if (std::optional<std::string> opening = DescriptionOpening(doc, holder))
      Declare(name, *opening);
  };
  for (const RawNode& tool : tools->children) {
    if (tool.type != JsonType::kObject || tool.children.empty()) continue;
    const RawNode* holder = &tool;
    if (const RawNode* function = FindMember(doc, tool, "function");
        function != nullptr && function->type == JsonType::kObject) {
      holder = function;  // Chat Completions
    }
    std::optional<std::string> name = StringMember(doc, *holder, "name");
    if (!name) continue;
    if (StringMember(doc, tool, "type").value_or("") != "namespace") {
      declare(*name, *holder);
      continue;
    }
    const RawNode* inner = FindMember(doc, tool, "tools");
    if (inner == nullptr || inner->type != JsonType::kArray) continue;
    for (const RawNode& member : inner->children) {
      if (member.type != JsonType::kObject) continue;
      if (std::optional<std::string> inner_name = StringMember(doc, member, "name")) {
        declare(NamespacedToolName(*name, *inner_name), member);
      }
    }
  }
}

std::string ContextdToolNames::Resolve(std::string_view name) const {
  if (IsOwnTool(name)) return std::string(name);
  for (const std::string& prefix : declared_) {
    if (name.size() > prefix.size() && name.starts_with(prefix)) {
      return std::string(name.substr(prefix.size()));
    }
  }
  for (std::string_view prefix : kDefaultPrefixes) {
    if (name.size() > prefix.size() && name.starts_with(prefix)) {
      return std::string(name.substr(prefix.size()));
    }
  }
  return "";
}

bool IsBranchCall(const Block& block) {
  return block.kind == BlockKind::kToolCall &&
         (block.contextd_tool == protocol::kBranchCreateTool ||
          block.contextd_tool == protocol::kBranchReturnTool);
}

bool ContextdToolNames::IsBranchTool(std::string_view name) const {
  std::string tool = Resolve(name);
  return tool == protocol::kBranchCreateTool || tool == protocol::kBranchReturnTool;
}

}  // namespace contextd::model
