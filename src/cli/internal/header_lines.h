// Editing one header in a block of `Name: value` lines, as Claude Code reads
// ANTHROPIC_CUSTOM_HEADERS (split on "\n" or "\r\n"; the name is what precedes the first ':',
// trimmed; the value what follows, trimmed; lines without ':' are ignored). Every line that is
// not the edited header is kept byte for byte. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace contextd::cli::internal {

// The value (trimmed) of the first line whose name equals `name` ignoring ASCII case; nullopt
// when no line names it.
std::optional<std::string> HeaderLineValue(std::string_view block, std::string_view name);

// `block` with the header `name` set to `value`: the first line naming it (any case) becomes
// "<name>: <value>" (keeping that line's "\r" ending), any later line naming it is removed; when
// none does, the line is appended (before a final line break, so a block ending in "\n" still
// does). An empty block becomes the one line.
std::string SetHeaderLine(std::string_view block, std::string_view name, std::string_view value);

// `block` without the lines naming `name` (any case). The inverse of SetHeaderLine on a block
// that did not name it.
std::string RemoveHeaderLine(std::string_view block, std::string_view name);

}  // namespace contextd::cli::internal
