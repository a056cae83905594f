// A small JSON Schema validator for tool inputs: the keywords MCP tools use in practice (type with
// integer vs number, properties, required, additionalProperties, enum, const, minimum/maximum and
// their exclusive forms, minLength/maxLength counted in Unicode code points, items, minItems/
// maxItems, anyOf/oneOf/allOf, local "$ref" into "$defs"/"definitions"). Other keywords (pattern,
// format, ...) are accepted and ignored. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "protocol/jsonrpc.h"

namespace contextd::protocol {

// Checks that `schema` is something ValidateJson can use: a JSON object or a boolean, whose
// "type" (if any) names JSON Schema types. InvalidArgument says what is wrong.
absl::Status CheckSchema(const Json& schema);

// Validates `value` against `schema`. OK when it conforms; otherwise InvalidArgument whose message
// names the first offending location (rooted at `root_name`, e.g. "arguments.items[2].count"), the
// rule (keyword) and the expected value, e.g.
//   "arguments.count: must be >= 1 (minimum), got 0".
absl::Status ValidateJson(const Json& schema, const Json& value,
                          std::string_view root_name = "arguments");

// The "default" of each top-level property of an object schema, as an object
// ({"limit": 10, ...}); empty when none declares one. Defaults are not applied by ValidateJson.
Json SchemaDefaults(const Json& schema);

// Number of Unicode code points in UTF-8 `text` (continuation bytes are not counted).
size_t CodePointCount(std::string_view text);

}  // namespace contextd::protocol
