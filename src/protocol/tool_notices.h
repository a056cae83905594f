// AppendNotice: puts one sentence the model must read (a budget warning, a force-return notice)
// into a tool result so that every client shows it, whichever part of the result it shows the
// model: a text block, and an entry in an array of the structured result (decision 0014).
// Header-only; no state.
#pragma once

#include <string>
#include <string_view>

#include "protocol/mcp_constants.h"
#include "protocol/tool_call.h"

namespace contextd::protocol {

// The structured result's member that carries notices: "warnings" in contextd's own tools, and
// a name an upstream tool is unlikely to use in the results contextd proxies.
inline constexpr std::string_view kNoticesMember = "warnings";
inline constexpr std::string_view kProxiedNoticesMember = "contextd_warnings";

// Appends `text` as a text block of `result` and, when `result` has a structured result (an
// object), to its array member `structured_key` (created when absent; a member of another type
// is left alone, since it belongs to the tool).
inline void AppendNotice(ToolResult& result, const std::string& text,
                         std::string_view structured_key) {
  result.content.push_back(Json{{wire::kType, wire::kText}, {wire::kText, text}});
  if (!result.structured_content.is_object()) return;
  Json& list = result.structured_content[std::string(structured_key)];
  if (list.is_null()) list = Json::array();
  if (list.is_array()) list.push_back(text);
}

// Lets an outputSchema accept kProxiedNoticesMember: a client validates structuredContent against
// the schema it was shown, and a schema that forbids additional properties would otherwise
// reject a result that carries a notice. The member is declared in the schema's top-level
// `properties` (created when absent; `properties` constrains objects only, so this is harmless
// for a schema of another type). A schema that is not an object, or whose `properties` is not
// one, is left as it is. Restrictions inside allOf/anyOf/oneOf are not looked into.
inline void AllowProxiedNotices(Json& output_schema) {
  if (!output_schema.is_object()) return;
  Json& props = output_schema["properties"];
  if (props.is_null()) props = Json::object();
  if (!props.is_object()) return;
  props[std::string(kProxiedNoticesMember)] =
      Json{{"type", "array"},
           {"items", {{"type", "string"}}},
           {"description", "Notices from contextd: budget warnings and force-returns"}};
}

}  // namespace contextd::protocol
