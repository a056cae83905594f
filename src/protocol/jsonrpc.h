// JSON-RPC 2.0 envelope: parsing raw bytes into validated messages (single or batch) and building
// responses, errors, requests and notifications. No I/O; pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "nlohmann/json.hpp"

namespace contextd::protocol {

using Json = nlohmann::json;

// The standard JSON-RPC error codes, written once.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// MCP: resource not found (spec 2025-06-18+).
inline constexpr int kResourceNotFound = -32002;

enum class MessageKind { kRequest, kNotification, kResponse, kErrorResponse };

// One validated JSON-RPC message.
struct Message {
  MessageKind kind = MessageKind::kRequest;
  Json id;             // string or integer for requests and responses; null for notifications
  std::string method;  // requests and notifications
  Json params;         // object or array, or null when absent
  Json result;         // kResponse
  Json error;          // kErrorResponse: {code, message, data?}
  // True when the message came inside a JSON array payload (a batch). The engine answers batched
  // requests with -32600 unless the session negotiated 2025-03-26, the one MCP version that
  // allows batches; the transport aggregates the answers by `related_request_id`.
  bool batched = false;
};

// An item that could not be accepted: answer it with MakeError(id, code, message).
struct ParseError {
  int code = kInvalidRequest;
  std::string message;
  Json id;  // the offending request's id when it could be read, else null
};

using Parsed = std::variant<Message, ParseError>;

// What one payload (an HTTP body or one NDJSON line) holds.
struct Incoming {
  bool batch = false;         // the payload was a JSON array
  std::vector<Parsed> items;  // never empty
};

// Parses one payload. Never throws. Malformed JSON, invalid UTF-8 or a payload larger than
// `max_bytes` yield a single ParseError (-32700, or -32600 for oversize); an empty batch yields a
// single -32600; each bad item of a batch yields its own ParseError. A request whose id is null is
// invalid (-32600), not a notification. A payload whose objects name a member twice (after
// unescaping, at any depth) yields a single -32600 naming the path
// ("invalid request: params.arguments: duplicate key \"path\""), with the message's id if valid.
Incoming ParseIncoming(std::string_view raw, size_t max_bytes = 4 << 20);

// Builders for outgoing messages.
Json MakeResult(const Json& id, Json result);
Json MakeError(const Json& id, int code, std::string_view message, const Json& data = nullptr);
Json MakeRequest(const Json& id, std::string_view method, Json params);
Json MakeNotification(std::string_view method, Json params);

// Compact serialization; invalid UTF-8 in strings is replaced, never thrown.
std::string Serialize(const Json& message);

// Deepest nesting of arrays and objects ParseIncoming accepts (deeper payloads are -32700), so
// that recursive consumers (dump, schema validation) stay within the stack.
inline constexpr int kMaxJsonDepth = 128;

// True for a JSON-RPC id this codec accepts: a string or an integer (not null, bool, fraction).
bool IsValidId(const Json& id);

// Converts one already-parsed JSON value (an element of a payload) into a Message or ParseError,
// with the same rules as ParseIncoming. `batched` is copied into the Message.
Parsed ParseMessage(Json value, bool batched = false);

}  // namespace contextd::protocol
