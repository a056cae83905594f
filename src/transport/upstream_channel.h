// UpstreamChannel: a message pipe from contextd (as an MCP client) to one upstream MCP server.
// Lines out are serialized JSON-RPC messages; lines in arrive through UpstreamCallbacks. Two
// implementations: UpstreamStdioChannel (child process) and UpstreamHttpChannel (Streamable
// HTTP). Thread-safety: Send/Close/pid from any thread; callbacks never run concurrently and
// must not call Close.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace contextd::transport {

// Callbacks of a channel (run on a thread of the channel, one at a time).
struct UpstreamCallbacks {
  // One complete JSON-RPC message (or batch) from the upstream.
  std::function<void(std::string line)> on_line;
  // The upstream is gone (process exited, connection refused, session expired); `reason` says
  // how. Called at most once, after the last on_line.
  std::function<void(std::string reason)> on_closed;
};

class UpstreamChannel {
 public:
  virtual ~UpstreamChannel() = default;
  // Sends one serialized message (no newline inside). Unavailable once the channel is closed or
  // the write fails.
  virtual absl::Status Send(std::string_view line) = 0;
  // Ends the channel (kills the child / aborts requests in flight) and joins its threads; no
  // callback runs after it returns. Idempotent. Must not be called from a callback.
  virtual void Close(int grace_ms = 500) = 0;
  // The child's process id; -1 for channels without a process.
  virtual pid_t pid() const { return -1; }
};

}  // namespace contextd::transport
