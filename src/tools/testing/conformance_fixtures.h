// Conformance fixtures: the tools, resources, prompts and completions that the
// @modelcontextprotocol/conformance server scenarios call (test_simple_text,
// test_tool_with_progress, test_sampling, test://static-text, test_prompt_with_arguments, ...),
// registered on the real MCP engine. Registered only by the test binary: `contextd-conformance
// serve --conformance-fixtures` (src/cli/testing); the production contextd does not link them.
// RegisterConformanceFixtures may be called from any thread before sessions start.
#pragma once

#include "absl/status/status.h"
#include "protocol/mcp_server.h"

namespace contextd::tools::testing {

// Registers every conformance fixture on `server`. Returns the first registration error
// (AlreadyExists if called twice on the same server).
absl::Status RegisterConformanceFixtures(protocol::McpServer& server);

// The uri of the fixture resource whose updates subscribers receive (test://watched-resource).
inline constexpr char kWatchedResourceUri[] = "test://watched-resource";

}  // namespace contextd::tools::testing
