// The server: builds every room's objects from a ServerConfig (engine executor, token counter,
// scrubber, SQLite store, folding engine, MCP engine with the contextd tools, metrics) and serves
// them over stdio or Streamable HTTP until EOF, a signal, or Stop(). One Server per process.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/config.h"

namespace contextd::protocol {
class McpServer;
}  // namespace contextd::protocol

namespace contextd::server {

// Registers test-only tools, resources and prompts on the MCP engine before sessions start (the
// MCP conformance suite's fixtures, in the test binary `contextd-conformance`).
using RegisterFixtures = std::function<absl::Status(protocol::McpServer&)>;

// Runs the server described by `config` until stdin closes (stdio), or SIGINT/SIGTERM (both).
// Over HTTP it prints `listening on http://ADDR:PORT/mcp` on stderr once it accepts connections.
// With config.conformance_fixtures, `fixtures` registers them; FailedPrecondition if it is empty
// (the production binary has none). Returns the first error that stopped it from starting (bad
// data dir, port in use, bad rules).
absl::Status RunServer(const ServerConfig& config, const RegisterFixtures& fixtures = nullptr);

}  // namespace contextd::server
