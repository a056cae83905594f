#include "protocol/jsonrpc.h"

#include <utility>

#include "base/json_keys.h"
#include "protocol/json_writer.h"
#include "protocol/mcp_constants.h"

namespace contextd::protocol {
namespace {

ParseError Invalid(std::string message, Json id = nullptr) {
  return ParseError{kInvalidRequest, std::move(message), std::move(id)};
}

// Nesting depth of `raw`, scanning brackets outside strings. Stops early past the limit.
int NestingDepth(std::string_view raw) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : raw) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          max_depth = depth;
          if (max_depth > kMaxJsonDepth) return max_depth;
        }
        break;
      case ']':
      case '}':
        --depth;
        break;
      default:
        break;
    }
  }
  return max_depth;
}

// A payload that names a member twice: contextd reads the last of the two (nlohmann), a peer may
// read the first; one reading is all contextd accepts (decision 0029). The id is echoed when the
// message's own id is a valid one.
ParseError DuplicateKeyError(const Json& value, const base::DuplicateJsonKey& dup) {
  Json id = nullptr;
  if (value.is_object()) {
    auto it = value.find(wire::kId);
    if (it != value.end() && IsValidId(*it)) id = *it;
  }
  return Invalid("invalid request: " + dup.Describe(), std::move(id));
}

}  // namespace

bool IsValidId(const Json& id) { return id.is_string() || id.is_number_integer(); }

Parsed ParseMessage(Json value, bool batched) {
  if (!value.is_object()) return Invalid("invalid request: a JSON-RPC message must be an object");
  // The id is echoed in errors only when it is a valid one.
  Json id = nullptr;
  auto id_it = value.find(wire::kId);
  const bool has_id = id_it != value.end();
  if (has_id && IsValidId(*id_it)) id = *id_it;

  auto version = value.find(wire::kJsonrpc);
  if (version == value.end() || !version->is_string() ||
      version->get_ref<const std::string&>() != wire::kJsonrpcVersion) {
    return Invalid("invalid request: \"jsonrpc\" must be \"2.0\"", std::move(id));
  }

  Message m;
  m.batched = batched;
  auto method = value.find(wire::kMethod);
  if (method != value.end()) {
    if (!method->is_string()) {
      return Invalid("invalid request: \"method\" must be a string", std::move(id));
    }
    if (value.contains(wire::kResult) || value.contains(wire::kError)) {
      return Invalid("invalid request: a request cannot carry \"result\" or \"error\"",
                     std::move(id));
    }
    if (has_id && !IsValidId(*id_it)) {
      return Invalid("invalid request: \"id\" must be a string or an integer");
    }
    auto params = value.find(wire::kParams);
    if (params != value.end()) {
      if (!params->is_object() && !params->is_array()) {
        return Invalid("invalid request: \"params\" must be an object or an array", std::move(id));
      }
      m.params = std::move(*params);
    }
    m.method = std::move(method->get_ref<std::string&>());
    m.kind = has_id ? MessageKind::kRequest : MessageKind::kNotification;
    m.id = std::move(id);
    return m;
  }

  // A response to one of our requests.
  auto result = value.find(wire::kResult);
  auto error = value.find(wire::kError);
  const bool has_result = result != value.end();
  const bool has_error = error != value.end();
  if (has_result == has_error) {
    return Invalid("invalid message: needs \"method\", or exactly one of \"result\" and \"error\"",
                   std::move(id));
  }
  if (!has_id) return Invalid("invalid response: \"id\" is missing");
  if (has_result) {
    if (!IsValidId(*id_it))
      return Invalid("invalid response: \"id\" must be a string or an integer");
    m.kind = MessageKind::kResponse;
    m.result = std::move(*result);
  } else {
    // An error response may carry id null (the peer could not read our id).
    if (!IsValidId(*id_it) && !id_it->is_null()) {
      return Invalid("invalid response: \"id\" must be a string, an integer or null");
    }
    if (!error->is_object()) return Invalid("invalid response: \"error\" must be an object", id);
    auto code = error->find(wire::kCode);
    auto message = error->find(wire::kMessage);
    if (code == error->end() || !code->is_number_integer() || message == error->end() ||
        !message->is_string()) {
      return Invalid(
          "invalid response: \"error\" needs an integer \"code\" and a string \"message\"",
          std::move(id));
    }
    m.kind = MessageKind::kErrorResponse;
    m.error = std::move(*error);
  }
  m.id = std::move(id);
  return m;
}

Incoming ParseIncoming(std::string_view raw, size_t max_bytes) {
  Incoming in;
  if (raw.size() > max_bytes) {
    in.items.emplace_back(ParseError{kInvalidRequest,
                                     "message too large: " + std::to_string(raw.size()) +
                                         " bytes, limit " + std::to_string(max_bytes),
                                     nullptr});
    return in;
  }
  if (NestingDepth(raw) > kMaxJsonDepth) {
    in.items.emplace_back(ParseError{
        kParseError,
        "parse error: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
        nullptr});
    return in;
  }
  // No exceptions: malformed JSON and invalid UTF-8 yield a discarded value.
  Json value = Json::parse(raw.begin(), raw.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    in.items.emplace_back(
        ParseError{kParseError, "parse error: the payload is not valid JSON (UTF-8)", nullptr});
    return in;
  }
  if (auto dup = base::FindDuplicateJsonKey(raw)) {
    // A batch is refused as a whole: only the first duplicate is located.
    in.batch = value.is_array();
    in.items.emplace_back(DuplicateKeyError(value, *dup));
    return in;
  }
  if (value.is_array()) {
    in.batch = true;
    if (value.empty()) {
      in.items.emplace_back(Invalid("invalid request: empty batch"));
      return in;
    }
    in.items.reserve(value.size());
    for (auto& element : value) in.items.push_back(ParseMessage(std::move(element), true));
    return in;
  }
  in.items.push_back(ParseMessage(std::move(value), false));
  return in;
}

Json MakeResult(const Json& id, Json result) {
  Json m = Json::object();
  m[wire::kJsonrpc] = wire::kJsonrpcVersion;
  m[wire::kId] = id;
  m[wire::kResult] = std::move(result);
  return m;
}

Json MakeError(const Json& id, int code, std::string_view message, const Json& data) {
  Json error = Json::object();
  error[wire::kCode] = code;
  error[wire::kMessage] = message;
  if (!data.is_null()) error[wire::kData] = data;
  Json m = Json::object();
  m[wire::kJsonrpc] = wire::kJsonrpcVersion;
  m[wire::kId] = id;
  m[wire::kError] = std::move(error);
  return m;
}

Json MakeRequest(const Json& id, std::string_view method, Json params) {
  Json m = Json::object();
  m[wire::kJsonrpc] = wire::kJsonrpcVersion;
  m[wire::kId] = id;
  m[wire::kMethod] = method;
  if (!params.is_null()) m[wire::kParams] = std::move(params);
  return m;
}

Json MakeNotification(std::string_view method, Json params) {
  Json m = Json::object();
  m[wire::kJsonrpc] = wire::kJsonrpcVersion;
  m[wire::kMethod] = method;
  if (!params.is_null()) m[wire::kParams] = std::move(params);
  return m;
}

std::string Serialize(const Json& message) {
  std::string out;
  AppendCompactJson(out, message);
  return out;
}

}  // namespace contextd::protocol
