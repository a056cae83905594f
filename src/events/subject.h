// NATS subjects of contextd's events: `<prefix>.<tenant>.<project>.<session>.<type>`, where type is
// "branch.created", "memory.recorded", ... (docs/events.md). Tenant, project and session are
// user-controlled, so each becomes one valid NATS token by SubjectToken's reversible escaping.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace contextd::events {

// The token standing for "no value" (an empty string; e.g. the session of a memory event, which
// belongs to a project and not to one session). Escaping never produces it.
inline constexpr std::string_view kNoValueToken = "%";
// Escaped tokens longer than this are replaced by their hash (see SubjectToken).
inline constexpr size_t kMaxTokenBytes = 128;

// One NATS subject token for `value`:
// - bytes in [A-Za-z0-9_-] are kept; every other byte ('.', '*', '>', whitespace, '%', non-ASCII
//   UTF-8 bytes, ...) becomes %XX (two uppercase hex digits), so the mapping is injective and
//   reversible (UnescapeSubjectToken);
// - an empty value becomes "%" (kNoValueToken);
// - if the escaped form is longer than kMaxTokenBytes, the token is "~" followed by the first 32
//   lowercase hex digits of SHA-256(value) (not reversible; the payload carries the value).
std::string SubjectToken(std::string_view value);

// Inverse of SubjectToken for tokens it did not hash. InvalidArgument for a malformed escape, a
// character outside the escaped alphabet or a hashed ("~...") token.
absl::Status UnescapeSubjectToken(std::string_view token, std::string* value);

// `prefix.tenant.project.session.type` with the three values escaped; `type` is used as is
// (contextd's own dotted event names).
std::string EventSubject(std::string_view prefix, std::string_view tenant, std::string_view project,
                         std::string_view session, std::string_view type);

// OK if `prefix` is one or more dot-separated non-empty tokens without '*', '>' or whitespace;
// otherwise InvalidArgument saying why.
absl::Status ValidateSubjectPrefix(std::string_view prefix);

}  // namespace contextd::events
