// The names of contextd's own MCP tools and the opening of branch_create's description: wire
// strings written once, read by the tools that register them (server) and by the model gateway,
// which recognises contextd's tools in a model request however the client prefixed them.
// Constants only; thread-safe.
#pragma once

#include <array>
#include <string_view>

namespace contextd::protocol {

inline constexpr std::string_view kBranchCreateTool = "branch_create";
inline constexpr std::string_view kBranchReturnTool = "branch_return";
inline constexpr std::string_view kBranchStatusTool = "branch_status";

// Every tool contextd itself serves (upstream tools it proxies are `<upstream>__<tool>`).
inline constexpr std::array<std::string_view, 10> kContextdToolNames = {
    "branch_create", "branch_return", "branch_status", "context_view",    "trail_unfold",
    "trail_search",  "memory_search", "memory_record", "memory_feedback", "memory_outcome"};

// How branch_create's description begins. A model request whose tool definitions hold a tool
// named `<prefix>branch_create` with this description names contextd's tools `<prefix><tool>`,
// whatever the user called the server in the client's config.
inline constexpr std::string_view kBranchCreateDescriptionOpening =
    "Open a branch: an isolated sub-context for a subtask";

}  // namespace contextd::protocol
