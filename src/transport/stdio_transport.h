// The stdio transport: one MCP session over newline-delimited JSON on a pair of file descriptors
// (stdin/stdout of the process). Nothing but protocol is written to the output descriptor; one
// writer thread coalesces outgoing lines into few write() calls. ServeStdio blocks its caller;
// the session's sink may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>

#include "absl/status/status.h"
#include "protocol/session.h"

namespace contextd::transport {

// Tuning of ServeStdio.
struct StdioOptions {
  // Largest accepted line (one JSON-RPC message or batch); longer lines are answered with a
  // -32600 error (id null) and skipped. Default 4 MiB.
  size_t max_message_bytes = 4u << 20;
  // Size of the read buffer.
  size_t read_buffer_bytes = 64u << 10;
  // Requests handed to the session and not yet answered, above which reading pauses
  // (backpressure against a client that pipelines faster than the engine answers).
  size_t max_in_flight = 8192;
  // At EOF, how long to wait for requests in flight to be answered before the session is closed
  // (their answers are written if they arrive in time).
  std::chrono::milliseconds eof_drain_timeout{5000};
  // Sets SIGPIPE to ignored so that a closed output pipe is an error, not a process kill.
  bool ignore_sigpipe = true;
};

// Serves one session (SessionInfo{"stdio", "local", "stdio"}) created through `factory`: reads
// NDJSON from `in_fd`, answers unparsable lines itself (-32700/-32600), passes each message to
// Session::Receive, and writes whatever the session sends to `out_fd`, one line per message.
// The answers to a batch (a JSON array line) are written together as one array line once every
// request of the batch is answered; a batch of only notifications/responses gets no line.
// On EOF of `in_fd`: waits up to eof_drain_timeout for requests in flight, calls
// Session::Close("stdin closed"), flushes the output and returns OK. A write error on `out_fd`
// (client gone) drops further output and is logged to stderr; reading continues until EOF.
// Returns Internal if reading `in_fd` fails with an error other than EOF/EINTR (the session is
// closed first).
absl::Status ServeStdio(protocol::SessionFactory& factory, int in_fd, int out_fd,
                        const StdioOptions& options = {});

}  // namespace contextd::transport
