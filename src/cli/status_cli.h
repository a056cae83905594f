// `contextd status`: is agent traffic reaching a running contextd? Reads GET /healthz and
// GET /metrics of the server (MCP sessions and requests, model requests of the gateway), the
// most recent model conversations with their folds made and skipped (GET /api/v1/conversations;
// nothing from a server without it) and whether Claude Code's configuration points at it. Also
// the Prometheus text parser it uses.
// Single-threaded; a CLI helper, not for use inside the server.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/connect_cli.h"

namespace contextd::cli {

// One sample of the Prometheus text exposition format (0.0.4).
struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the Prometheus text format: comments and blank lines are skipped, label values are
// unescaped (\\, \", \n), values may be NaN/+Inf/-Inf and be followed by a timestamp. Lines that
// do not parse are skipped (a newer server may emit what this client does not know). Never
// fails; never throws.
std::vector<MetricSample> ParsePrometheusText(std::string_view text);

struct StatusCommand {
  std::string url = "http://127.0.0.1:9090";  // contextd's base URL (http only)
  std::string token_file;  // bearer token for /metrics: first token of a `--auth-token-file`
  int conversations = 10;  // model conversations listed, most recent first (0: none)
  // The current time in unix seconds (for "last model request N s ago").
  std::function<double()> now;
};

// Runs `command` against the server and Claude Code's files (current project and user scope of
// `env`), printing a report to `out` and errors to `err`. Returns 0 when the server answered,
// 1 when it is unreachable or its metrics cannot be read, 2 on a usage error (bad URL, token
// file).
int RunStatusCommand(const StatusCommand& command, const AgentEnvironment& env, std::ostream& out,
                     std::ostream& err);

}  // namespace contextd::cli
