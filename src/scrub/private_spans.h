// Private spans: text a user wraps in <private>...</private> reaches the model but is never
// written to storage. WithholdPrivate() is what every storage path applies to a text before it
// keeps it; ContainsPrivate() is its cheap test. Pure functions over bytes (no allocation on the
// test, one copy on the common path of WithholdPrivate); thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace contextd::scrub {

// What a withheld span becomes. It is itself a private span, so withholding is idempotent.
inline constexpr std::string_view kWithheldPrivate = "<private>[withheld]</private>";

// Returns `text` with every private span replaced by kWithheldPrivate. Tags match ASCII
// case-insensitively:
// - an opening tag is `<private>`, or `<private` followed by ASCII whitespace and anything up to
//   the next `>` (attributes are withheld with the span); `<privateKey>` or `<private/>` are not;
// - a closing tag is `</private`, optional ASCII whitespace, `>`.
// Spans nest: a span ends at the closing tag that brings the depth back to 0, and adjacent
// spans become one marker. Fail closed: an opening tag that is never closed (or whose `>` never
// comes) withholds the rest of the text; a closing tag with no open span withholds everything
// before it (its opening tag was cut off, e.g. by a window, or a redaction swallowed it).
// Linear time. A text without a tag (ContainsPrivate false) is returned unchanged.
std::string WithholdPrivate(std::string_view text);

// True when `text` holds an opening or closing private tag, i.e. when WithholdPrivate may change
// it; false guarantees WithholdPrivate(text) == text. A memchr scan for '<'.
bool ContainsPrivate(std::string_view text);

}  // namespace contextd::scrub
