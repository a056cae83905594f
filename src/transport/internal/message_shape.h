// Small predicates on JSON-RPC payloads that both server transports (stdio, HTTP) need to decide
// how to frame an answer. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "protocol/jsonrpc.h"

namespace contextd::transport::internal {

// True for a payload that is an empty JSON array ("[ ]"): JSON-RPC answers it with a single
// error object, not an array.
inline bool IsEmptyArray(std::string_view raw) {
  size_t i = raw.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || raw[i] != '[') return false;
  size_t j = raw.find_first_not_of(" \t\r\n", i + 1);
  return j != std::string_view::npos && raw[j] == ']';
}

// True for a JSON-RPC response object (result or error, no method).
inline bool IsResponse(const protocol::Json& m) {
  return m.is_object() && !m.contains("method") && m.contains("id") &&
         (m.contains("result") || m.contains("error"));
}

}  // namespace contextd::transport::internal
