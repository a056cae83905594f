// The body of `contextd tokens`: reads raw bytes, prints their token count or ids. The cli room
// parses the flags and calls RunTokensCommand. Thread-compatible (uses the given streams only).
#pragma once

#include <istream>
#include <ostream>
#include <string_view>

namespace contextd::cli {

// Reads all of `in` as raw bytes, encodes them with `encoding` ("o200k_base" or "cl100k_base";
// special-token text is one token only with `allow_special`), and writes to `out` either the
// count or, with `ids`, the token ids separated by single spaces, then "\n".
// Returns the process exit code: 0 on success; 2 for an unknown encoding (message on `err`);
// 1 when the input cannot be read or the vocabulary fails to load (message on `err`).
int RunTokensCommand(std::string_view encoding, bool ids, bool allow_special, std::istream& in,
                     std::ostream& out, std::ostream& err);

}  // namespace contextd::cli
