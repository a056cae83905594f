// RuleScrubber: the gitleaks-compatible secret scanner and redactor. Rules are compiled with RE2;
// one case-insensitive Aho-Corasick pass over the keywords decides which rules run and where
// (a window of lines around each keyword hit); keyword-less rules are pre-screened with one
// RE2::Set pass. Immutable after Create(); every method is const and thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scrub/rules.h"
#include "scrub/scrubber.h"

namespace contextd::scrub {

// One secret found in a text. Offsets are bytes into the scanned text.
// A secret found in decoded text (an encoded segment, see ScrubConfig::decode_depth) is reported
// at the encoded span in the scanned text: [start, end) covers the whole encoded segment(s) the
// decoded secret overlaps (and the plain bytes of the secret around them), [match_start,
// match_end) likewise; `entropy` is the decoded secret's; `tags` gains, as in gitleaks,
// "decoded:<percent|hex|base64>" per encoding involved and "decode-depth:<n>".
struct Finding {
  std::string rule_id;
  size_t start = 0;  // the secret (secretGroup, or else the whole match): [start, end)
  size_t end = 0;
  size_t match_start = 0;  // the whole regex match: [match_start, match_end)
  size_t match_end = 0;
  size_t line = 0;     // 1-based line of `start`
  double entropy = 0;  // Shannon entropy of the secret, as gitleaks computes it
  std::vector<std::string> tags;
};

// A rule (or allowlist regex) that was skipped at compile time, and why.
struct CompileProblem {
  std::string rule_id;
  std::string reason;
};

// Returns the Shannon entropy (bits per character) of `data` the way gitleaks does: counts per
// UTF-8 rune divided by the byte length. 0 for empty input.
double ShannonEntropy(std::string_view data);

// Decoding levels of encoded secrets (ScrubConfig::decode_depth): the default, and the most
// allowed (each level can rescan the lines that hold encoded runs once more).
inline constexpr int kDefaultDecodeDepth = 2;
inline constexpr int kMaxDecodeDepth = 8;

class RuleScrubber : public Scrubber {
 public:
  // Compiles `config`. Rules whose regex (or path) RE2 rejects are skipped and reported in
  // problems(); so are allowlist regexes that fail (the rest of the allowlist stays). Returns
  // InvalidArgument when two rules share an id, or when `decode_depth` is outside
  // [0, kMaxDecodeDepth] (see ScrubConfig::decode_depth).
  static absl::StatusOr<std::unique_ptr<RuleScrubber>> Create(
      const RulesConfig& config, int decode_depth = kDefaultDecodeDepth);

  ~RuleScrubber() override;

  // Returns `text` with every finding replaced by `[REDACTED:<rule-id>:<preview>]` (preview: at
  // most the first 4 characters and at most a quarter of the secret). Overlapping findings merge
  // into one marker. Existing markers are never matched again, and the result is a fixpoint, so
  // Scrub(Scrub(x)) == Scrub(x).
  std::string Scrub(std::string_view text) const override;

  // The redacted text and the findings of the first pass (offsets into the input `text`), sorted
  // by start. `path` (optional): a rule with a `path` applies only where it matches the path, and
  // allowlist path checks see it. With an empty path (Scrub), a rule with path and regex applies
  // on its regex alone (gitleaks on stdin skips it; contextd cannot know a text's file, and a
  // secret in it is still one) and allowlist path checks never match.
  struct Result {
    std::string text;
    std::vector<Finding> findings;
  };
  Result ScrubWithFindings(std::string_view text, std::string_view path = {}) const;

  // The findings in `text` (possibly overlapping), sorted by start, without redacting.
  std::vector<Finding> Scan(std::string_view text, std::string_view path = {}) const;

  // Rules and allowlist regexes that were skipped at compile time.
  const std::vector<CompileProblem>& problems() const;
  // Number of rules that compiled and are active.
  size_t num_rules() const;
  // Ids of the active rules, in config order.
  std::vector<std::string> rule_ids() const;

  struct Impl;

 private:
  explicit RuleScrubber(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where the rules come from (config keys scrub.rules_file, scrub.extend_default,
// scrub.archive_originals, scrub.key_file, scrub.decode_depth).
struct ScrubConfig {
  std::string rules_file;  // empty: the built-in rules only
  // With rules_file: true keeps the built-in rules under the file's rules whatever its [extend]
  // says (the server's default); false lets the file decide, as gitleaks does (see ResolveRules).
  bool extend_default = true;
  bool archive_originals = false;  // keep encrypted originals (see originals_archive.h)
  std::string key_file;            // required with archive_originals; must be mode 0600
  // Encoded secrets: base64 (standard or URL-safe), hex and percent-encoded runs whose decoding
  // is text are decoded in place and scanned with their line, up to this many levels (2: also
  // base64 of percent-encoded text, and so on); a secret found there redacts the whole encoded
  // run. 0 turns decoding off. Like gitleaks' --max-decode-depth (which defaults to 5); 0..8.
  int decode_depth = kDefaultDecodeDepth;
};

// The rules `config` asks for. No rules_file: the built-in rules (DefaultRules). A rules file
// alone, as in gitleaks: its rules replace the built-in ones, unless it has [extend]
// useDefault = true (the built-in rules, minus its disabledRules, each amended by its rule of the
// same id, then its other rules; see ExtendRules) or [extend] path = "other.toml" (that file,
// read relative to this one's directory and resolved the same way, underneath instead; at most
// 2 files deep). With extend_default, the built-in rules also go under a file whose chain does
// not include them, as if the file had useDefault = true. NotFound / PermissionDenied /
// InvalidArgument as LoadRulesFile for any file of the chain; InvalidArgument when the chain is
// deeper than 2 files or a rule ends up without regex or path (it amended no rule).
absl::StatusOr<RulesConfig> ResolveRules(const ScrubConfig& config);

// ResolveRules + RuleScrubber::Create. With archive_originals it also validates the key file
// (LoadArchiveKey in originals_archive.h) so that a bad key fails at startup.
absl::StatusOr<std::shared_ptr<const RuleScrubber>> BuildScrubber(const ScrubConfig& config);

// True when `text` at `pos` starts a well-formed redaction marker; sets *len to its length.
bool ParseMarker(std::string_view text, size_t pos, size_t* len);

}  // namespace contextd::scrub
