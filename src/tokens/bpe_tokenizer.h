// BpeTokenizer: exact tiktoken-compatible byte-level BPE for the o200k_base (default) and
// cl100k_base encodings, with the OpenAI vocabularies embedded in the binary and their SHA-256
// checked on load. Encode/Count/Decode are const and thread-safe; GetEncoding returns one
// process-wide instance per encoding, built lazily on first use (thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tokens/internal/pretokenizer.h"
#include "tokens/internal/rank_table.h"
#include "tokens/token_counter.h"

namespace contextd::tokens {

// The encoding used when the configuration names none.
inline constexpr std::string_view kDefaultEncoding = "o200k_base";

// A special token: its text (e.g. "<|endoftext|>") and id.
struct SpecialToken {
  std::string_view text;
  uint32_t id;
};

// Everything that defines an encoding.
struct EncodingSpec {
  std::string_view name;
  internal::SplitPattern pattern;
  std::string_view rank_file;         // contents of the .tiktoken rank file
  std::string_view rank_file_sha256;  // lowercase hex; checked before parsing
  std::vector<SpecialToken> specials;
};

class BpeTokenizer final : public TokenCounter {
 public:
  // Builds a tokenizer from `spec`. DataLoss when the rank file's SHA-256 differs from the spec's,
  // InvalidArgument when the rank file is malformed or a special token id collides with a rank.
  static absl::StatusOr<std::unique_ptr<BpeTokenizer>> Create(EncodingSpec spec);

  // Number of tokens of `text`; special-token text counts as plain text. Bytes that are not valid
  // UTF-8 count as U+FFFD. Equals Encode(text, false).size().
  size_t Count(std::string_view text) const override;
  // As above; with allow_special, special-token text counts as one token each.
  size_t Count(std::string_view text, bool allow_special) const;

  // Token ids of `text`, as tiktoken's encode(text, allowed_special="all" if allow_special else
  // none, disallowed_special=()) returns them for text.decode("utf-8", "replace").
  std::vector<uint32_t> Encode(std::string_view text, bool allow_special = false) const;

  // The bytes `ids` stand for (special tokens as their text). InvalidArgument on an unknown id.
  absl::StatusOr<std::string> Decode(std::span<const uint32_t> ids) const;

  // The encoding's name, e.g. "o200k_base".
  std::string_view name() const override { return spec_.name; }

  // Ordinary tokens plus special tokens.
  size_t vocab_size() const { return ranks_.size() + spec_.specials.size(); }

  // The special tokens of this encoding.
  std::span<const SpecialToken> specials() const { return spec_.specials; }

  // Heap bytes held by the vocabulary tables (not counting the embedded rank file).
  size_t MemoryUsage() const { return ranks_.MemoryUsage(); }

 private:
  BpeTokenizer(EncodingSpec spec, internal::RankTable ranks, uint32_t id)
      : spec_(std::move(spec)), ranks_(std::move(ranks)), id_(id) {}

  // Byte-pair merges one piece that is not itself a token.
  template <typename Sink>
  void EncodePiece(const uint8_t* p, size_t n, Sink& sink) const;

  // Calls emit(id) for each token of well-formed UTF-8 `text` (no special-token handling).
  template <typename Sink>
  void EncodeOrdinary(std::string_view text, Sink& sink) const;
  // Splits well-formed UTF-8 `text` at special tokens when allowed.
  template <typename Sink>
  void EncodeValid(std::string_view text, bool allow_special, Sink& sink) const;
  template <typename Sink>
  void EncodeAny(std::string_view text, bool allow_special, Sink& sink) const;

  EncodingSpec spec_;
  internal::RankTable ranks_;
  uint32_t id_;  // tags this tokenizer's entries in the per-thread piece cache
};

// The spec of a built-in encoding ("o200k_base" or "cl100k_base", vocabulary embedded in the
// binary). InvalidArgument for any other name.
absl::StatusOr<EncodingSpec> BuiltinEncodingSpec(std::string_view name);

// A new tokenizer for a built-in encoding (parses and verifies the vocabulary; ~50 ms). Prefer
// GetEncoding, which shares one instance. InvalidArgument for an unknown name; DataLoss if the
// embedded vocabulary fails its SHA-256 check.
absl::StatusOr<std::unique_ptr<BpeTokenizer>> LoadEncoding(std::string_view name);

// The process-wide tokenizer for a built-in encoding, loaded on first use and never destroyed;
// concurrent callers share one load. Errors as LoadEncoding (a failed load is remembered).
absl::StatusOr<const BpeTokenizer*> GetEncoding(std::string_view name);

}  // namespace contextd::tokens
