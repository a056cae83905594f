// The server: builds every room's objects from a ServerConfig (engine executor, token counter,
// scrubber, SQLite store, folding engine, MCP engine with the contextd tools, metrics) and serves
// them over stdio or Streamable HTTP until EOF, a signal, or Stop(). One Server per process.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/config.h"

namespace contextd::server {

// Runs the server described by `config` until stdin closes (stdio), or SIGINT/SIGTERM (both).
// Over HTTP it prints `listening on http://ADDR:PORT/mcp` on stderr once it accepts connections.
// Returns the first error that stopped it from starting (bad data dir, port in use, bad rules).
absl::Status RunServer(const ServerConfig& config);

}  // namespace contextd::server
