// Configuration of one upstream MCP server that contextd fronts (the YAML `upstreams:` list), and
// its validation. Plain values; no state, thread-compatible.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace contextd::gateway {

// An upstream started as a child process speaking NDJSON MCP on its stdin/stdout.
struct StdioUpstream {
  // Program to run; looked up on PATH when it has no '/'.
  std::string command;
  // Arguments after the program name.
  std::vector<std::string> args;
  // Extra environment variables, added to (and overriding) contextd's own environment.
  std::map<std::string, std::string> env;
  // Working directory of the child; empty keeps contextd's.
  std::string cwd;
};

// An upstream reached over MCP Streamable HTTP.
struct HttpUpstream {
  // Endpoint URL, e.g. "http://127.0.0.1:8080/mcp" or "https://mcp.example.com/mcp".
  std::string url;
  // Extra headers sent with every request (e.g. Authorization).
  std::map<std::string, std::string> headers;
  // https only: PEM file of the CA certificate(s) that sign the server's certificate, trusted
  // instead of the system trust store. Empty: the system trust store.
  std::string ca_file;
};

// One entry of `upstreams:`. Exactly one of `stdio` and `http` is set.
struct UpstreamConfig {
  // Name used to prefix the upstream's tools (`<name>__<tool>`); matches [a-z0-9_-]+.
  std::string name;
  std::optional<StdioUpstream> stdio;
  std::optional<HttpUpstream> http;
  // Longest wait for one upstream request before the call answers isError "unavailable".
  std::chrono::milliseconds call_timeout{30000};
};

// Returns OK when `config` is usable; InvalidArgument naming the problem when the name is empty or
// not [a-z0-9_-]+, when not exactly one of stdio/http is set, when stdio.command or http.url is
// empty, when http.url is not http:// or https://, when http.ca_file is set for an http:// url,
// or when call_timeout is not positive.
absl::Status ValidateUpstream(const UpstreamConfig& config);

}  // namespace contextd::gateway
