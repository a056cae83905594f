// Compact JSON text for a Json value, as every contextd transport sends it: the exact bytes of
// nlohmann's dump(-1, ' ', false, error_handler_t::replace) (no whitespace, UTF-8 kept as is,
// control characters escaped, invalid UTF-8 replaced by U+FFFD), with fewer instructions.
// nlohmann's serializer decodes every byte of every string through its UTF-8 state machine;
// responses are mostly ASCII text, and serializing them was a quarter of each HTTP thread's
// instructions per branch round trip (this writer cut those threads' total by a sixth, decision
// 0012). Floating-point
// numbers, binary values and strings that are not valid UTF-8 are rare here and written by
// nlohmann itself, so their bytes match by construction.
#pragma once

#include <string>

#include "protocol/jsonrpc.h"

namespace contextd::protocol {

// Appends the compact text of `value` to `out`. Never throws on a value's content (it may throw
// std::bad_alloc).
void AppendCompactJson(std::string& out, const Json& value);

}  // namespace contextd::protocol
