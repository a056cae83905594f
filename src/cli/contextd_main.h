// The `contextd` command line as a function, so that the production binary (main.cc) and the
// test binary contextd-conformance (testing/conformance_main.cc: plus the MCP conformance
// fixtures) share it. Call once per process, from main.
#pragma once

#include "server/server.h"

namespace contextd::cli {

// Parses `argv` and runs the subcommand it names; returns the process's exit code (0 ok, 2 bad
// usage or a failed command). `fixtures` non-empty adds `serve --conformance-fixtures`, which
// registers them.
int RunContextd(int argc, char** argv, const server::RegisterFixtures& fixtures = nullptr);

}  // namespace contextd::cli
