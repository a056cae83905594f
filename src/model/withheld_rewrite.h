// WithheldRewrite: how the model gateway stores a block redaction (RewriteKind::kBlock) whose
// block holds <private> text. The block sent in place of the original must be repeated byte for
// byte on every later request, across restarts and rule updates, yet its text cannot be stored
// (it holds the private span, which the model still receives). So the decision is stored as the
// redactions over the block's original texts - offsets, rule ids and preview lengths, never the
// text - plus a digest of the block that was sent; the client resends the original with every
// request, and the block is rebuilt from it (ContextManager).
// Pure functions and value types; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace contextd::model {

// One redaction in a text: text[begin, end) became
// "[REDACTED:" + rule + ":" + text.substr(begin, preview) + "]" (the rule scrubber's marker,
// whose preview is a prefix of what it replaced).
struct RedactionEdit {
  size_t begin = 0;
  size_t end = 0;
  size_t preview = 0;
  std::string rule;

  bool operator==(const RedactionEdit&) const = default;
};

// Redactions that turn `original` into `scrubbed` (what a Scrubber returned for it), found by
// aligning the two around the markers in `scrubbed`; checked by applying them. nullopt when
// `scrubbed` is not `original` with markers in place of some spans (another scrubber's output),
// or no alignment was found within a bounded amount of work.
std::optional<std::vector<RedactionEdit>> AlignRedactions(std::string_view original,
                                                          std::string_view scrubbed);

// `original` with `edits` (in order, disjoint) applied. InvalidArgument when an edit lies outside
// the text, overlaps the one before, or has a preview longer than what it replaces.
absl::StatusOr<std::string> ApplyRedactions(std::string_view original,
                                            const std::vector<RedactionEdit>& edits);

// A stored block decision without the block's text.
struct WithheldRewrite {
  // Hex Digest of the block value that was sent (BlockDigest): a rebuilt block is used only if
  // it matches.
  std::string digest;
  // Per text span of the block (AnthropicRequest::TextSpans order), the redactions of its
  // decoded text; nullopt when they could not be aligned (then the block is rebuilt by scrubbing
  // the original again, and used only if the digest matches).
  std::optional<std::vector<std::vector<RedactionEdit>>> spans;

  // The stored value: a prefix no block value has (a JSON value never starts with '#'), then
  // JSON.
  std::string Serialize() const;
  // InvalidArgument when `value` is not a well-formed serialized WithheldRewrite.
  static absl::StatusOr<WithheldRewrite> Parse(std::string_view value);
  // True when a stored kBlock value is a WithheldRewrite (rather than the block itself).
  static bool Is(std::string_view value);
};

// The digest WithheldRewrite::digest holds for a block value.
std::string BlockDigest(std::string_view block_value);

}  // namespace contextd::model
