// UpstreamStdioChannel: the client side of the MCP stdio transport. It starts an upstream MCP
// server as a child process (fork/exec with three pipes), writes NDJSON lines to its stdin,
// splits its stdout into lines for the caller, drains its stderr into contextd's log, and kills
// it on Close. No JSON-RPC here: the caller speaks the protocol.
// Thread-safety: Send/Close/pid may be called from any thread. Callbacks run on the channel's
// reader thread (never concurrently with each other) and must not call Close themselves.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/upstream_channel.h"

namespace contextd::transport {

// What to run and how.
struct UpstreamStdioOptions {
  std::string command;                     // looked up on PATH when it has no '/'
  std::vector<std::string> args;           // after the program name
  std::map<std::string, std::string> env;  // added to (overriding) the parent's environment
  std::string cwd;                         // empty: the parent's
  size_t max_line_bytes = 64 << 20;        // longer stdout lines are dropped (and logged)
  std::string log_name;                    // prefix of the child's stderr lines in the log
};

// Callbacks of a stdio channel (both run on its stdout reader thread). on_closed's reason is
// e.g. "exited with status 1" or "killed by signal 9".
using UpstreamStdioCallbacks = UpstreamCallbacks;

class UpstreamStdioChannel final : public UpstreamChannel {
 public:
  // Starts the child. Unavailable if the pipes or fork fail; NotFound if exec fails (the child
  // reports errno through a close-on-exec pipe, so a missing program is an error here rather
  // than a later EOF). Sets SIGPIPE to ignored process-wide so that writing to a dead child is an
  // error, not a kill.
  static absl::StatusOr<std::unique_ptr<UpstreamStdioChannel>> Start(
      const UpstreamStdioOptions& options, UpstreamStdioCallbacks callbacks);

  // Closes (see Close).
  ~UpstreamStdioChannel() override;
  UpstreamStdioChannel(const UpstreamStdioChannel&) = delete;
  UpstreamStdioChannel& operator=(const UpstreamStdioChannel&) = delete;

  // Writes `line` plus '\n' to the child's stdin (blocking until written). `line` must not hold
  // a newline. Unavailable once the child's stdin is closed or the write fails.
  absl::Status Send(std::string_view line) override;

  // Closes the child's stdin, waits up to `grace_ms` for it to exit, then SIGTERM, then SIGKILL
  // after another `grace_ms`; reaps it and joins the reader threads. on_closed has run (or will
  // never run) when this returns. Idempotent. Must not be called from a callback.
  void Close(int grace_ms = 500) override;

  // The child's process id (valid until Close returns).
  pid_t pid() const override { return pid_; }

 private:
  UpstreamStdioChannel() = default;
  void ReadStdout();
  void ReadStderr();
  // Reaps the child if it has exited (or waits for it when `block`); returns how it ended.
  std::string Reap(bool block);

  UpstreamStdioOptions options_;
  UpstreamStdioCallbacks callbacks_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::mutex write_mu_;  // serializes Send and guards stdin_fd_
  std::mutex reap_mu_;   // guards reaped_ / exit_reason_
  bool reaped_ = false;
  std::string exit_reason_;
  std::atomic<bool> closed_{false};
  std::thread stdout_thread_;
  std::thread stderr_thread_;
};

}  // namespace contextd::transport
