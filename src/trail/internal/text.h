// Private text helpers of the trail room (the folded view and auto-scope summaries). Pure
// functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace contextd::trail::internal {

// `text` on one line (newlines, carriage returns and tabs become spaces), cut to at most
// `max_chars` bytes plus "..." when longer; a cut never splits a UTF-8 sequence.
std::string OneLine(std::string_view text, size_t max_chars);

// Whitespace-separated words of `text` (the token count used when no counter is given).
int64_t CountWords(std::string_view text);

}  // namespace contextd::trail::internal
