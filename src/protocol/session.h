// The boundary between transports and the MCP engine. A transport (stdio, Streamable HTTP) parses
// bytes with protocol::ParseIncoming, creates one Session per MCP session through a SessionFactory,
// feeds it messages, and delivers whatever the session sends through its MessageSink.
// Implementations of all three interfaces are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "protocol/jsonrpc.h"

namespace contextd::protocol {

// Who is on the other end of a session.
struct SessionInfo {
  std::string session_id;        // Mcp-Session-Id over HTTP; "stdio" on stdio
  std::string tenant = "local";  // from the bearer token over HTTP; "local" on stdio
  std::string transport;         // "stdio" or "http"
  // The project the session's branches, trail and memories belong to: "" until the engine fixes
  // it at the session's first tool call, resource read or prompt (then from the client's roots,
  // else `project_header`, else "default"; see McpServer::SetProjectResolver).
  std::string project;
  // What `project` was derived from, for people: the root's path or the header's value ("" for
  // the default project). Never part of a key.
  std::string project_label;
  // The X-Contextd-Project header of the request that created the session (HTTP), as sent; ""
  // when absent. Checked with ValidProjectHeader by the transport.
  std::string project_header;
};

// True when `value` may name a project in an X-Contextd-Project header: an absolute path
// ('/'-prefixed, at most 4096 bytes, no control characters), hashed like a root, or an explicit
// id of 1-128 characters from [A-Za-z0-9._:-].
inline bool ValidProjectHeader(std::string_view value) {
  if (value.empty()) return false;
  if (value.front() == '/') {
    if (value.size() > 4096) return false;
    for (char c : value) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    }
    return true;
  }
  if (value.size() > 128) return false;
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// What initialize negotiated: enough for another process sharing the session's store to continue
// it without a new initialize (Streamable HTTP across instances, decision 0025).
struct SessionResume {
  std::string protocol_version;
  Json client_capabilities = Json::object();
  Json client_info;
};

// Where a session's outbound messages go. Implemented by transports.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Delivers one JSON-RPC message to the client. `related_request_id` is the id of the client
  // request the message belongs to: its response, and the progress, log and server-to-client
  // requests issued while handling it (Streamable HTTP puts those on that POST's stream). It is
  // null for messages that belong to no request (list_changed, resources/updated, ...), which go
  // to the standalone stream (HTTP GET) or stdout. Must not block on the network; may be called
  // from any thread, including after the client went away (then it drops the message).
  virtual void Send(Json message, const Json& related_request_id) = 0;
  // Asks the transport to close the stream that carries the messages of the client request
  // `related_request_id` before its response, for a client that resumes it later (Streamable
  // HTTP: the POST's SSE stream gets an event id and a retry delay, then ends; the client resumes
  // with GET and Last-Event-ID and gets what was sent meanwhile). Later messages of the request
  // are kept (bounded) until then. Does nothing where streams cannot be resumed (stdio, a client
  // that accepts only JSON, a request already answered). Any thread.
  virtual void CloseStream(const Json& related_request_id) { (void)related_request_id; }
};

// One MCP session as the transports see it. Implemented by the engine.
class Session {
 public:
  virtual ~Session() = default;
  // Hands over one message of the client (request, notification or response to a
  // server-to-client request). Returns at once; the answer goes to the sink.
  virtual void Receive(Message message) = 0;
  // The negotiated protocol version, or "" before initialize has succeeded.
  virtual std::string protocol_version() const = 0;
  // Ends the session (stdio EOF, HTTP DELETE, idle timeout, shutdown): cancels work in flight,
  // fails pending server-to-client requests, releases resources. Idempotent.
  virtual void Close(std::string_view reason) = 0;
  // Close, then `done` once what ending the session changed (its branches force-returned, its
  // trail folded) is durable: OK, or the error that lost those changes. Called exactly once, on
  // the engine's thread, also when the session was already closed (then once what that close
  // changed is durable); not at all if the engine stops first. For an answer that must not
  // promise an end a crash could undo (HTTP DELETE).
  virtual void CloseThen(std::string_view reason,
                         std::function<void(const absl::Status&)> done) = 0;
};

// Creates sessions. Implemented by the engine (server wiring decides which features exist).
class SessionFactory {
 public:
  virtual ~SessionFactory() = default;
  // A new session that will send through `sink`. Never returns null.
  virtual std::shared_ptr<Session> CreateSession(SessionInfo info,
                                                 std::shared_ptr<MessageSink> sink) = 0;
  // A session initialized elsewhere (`info` with its project if one was fixed), continued here in
  // the initialized state with what `resume` says initialize negotiated; no initialize is
  // expected. nullptr where sessions cannot be resumed.
  virtual std::shared_ptr<Session> ResumeSession(SessionInfo info, const SessionResume& resume,
                                                 std::shared_ptr<MessageSink> sink) {
    (void)info;
    (void)resume;
    (void)sink;
    return nullptr;
  }
};

}  // namespace contextd::protocol
