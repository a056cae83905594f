// Reading a tool call's validated arguments (a JSON object) by name, for the tools of this room:
// a member of the wrong type reads as absent. Header-only; no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/tool_call.h"

namespace contextd::tools::internal {

inline std::optional<std::string> OptString(const protocol::Json& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

inline std::optional<int64_t> OptInt(const protocol::Json& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

inline bool OptBool(const protocol::Json& args, const char* key, bool fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

inline std::string StringArg(const protocol::Json& args, const char* key,
                             std::string fallback = "") {
  return OptString(args, key).value_or(std::move(fallback));
}

inline int64_t IntArg(const protocol::Json& args, const char* key, int64_t fallback) {
  return OptInt(args, key).value_or(fallback);
}

}  // namespace contextd::tools::internal
