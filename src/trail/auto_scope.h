// AutoScopeDigest: what the summary of an auto-scope (consecutive calls to one upstream outside
// any branch, see Trail::RecordUpstreamCall) is built from, and the summary itself: structural
// and deterministic (no model is asked), from the already scrubbed texts of the calls.
// A value type; no thread-safety of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace contextd::trail {

// Counts the tokens of a text (the server passes its token counter).
using CountTokensFn = std::function<int64_t(std::string_view)>;

// Bounds of an auto-scope summary. The summary is one line of at most
// kAutoSummaryMaxTokens tokens (by the CountTokensFn given): when the full form is longer, the
// argument samples go first, then the error excerpts, then tools beyond the first three, then
// the text is cut (ending in "...").
inline constexpr int64_t kAutoSummaryMaxTokens = 200;
inline constexpr size_t kAutoSummaryMaxTools = 8;    // more: "+N more tool(s)"
inline constexpr size_t kAutoSummaryArgSamples = 3;  // distinct argument samples per tool
inline constexpr size_t kAutoSummaryArgChars = 64;   // bytes per argument sample shown
inline constexpr size_t kAutoSummaryArgKeep = 256;   // bytes per argument sample kept
// Path arguments ("key=/...") of a scope that share a directory of at least this many bytes are
// shown relative to it ("paths under /repo/src/: read x2 (path=a.cc; path=b.cc)").
inline constexpr size_t kAutoSummaryMinCommonDir = 8;
inline constexpr size_t kAutoSummaryErrorSamples = 2;  // error excerpts
inline constexpr size_t kAutoSummaryErrorChars = 120;  // bytes per error excerpt

// "key=value, key=value" for a JSON object's text (string values unquoted, other values as
// written), else the text itself; on one line, cut to `max_chars` bytes plus "...". "" for "{}".
std::string ShortArguments(std::string_view args_text, size_t max_chars);

class AutoScopeDigest {
 public:
  // The digest of an auto-scope of upstream `upstream` (a gateway upstream name).
  explicit AutoScopeDigest(std::string upstream) : upstream_(std::move(upstream)) {}

  // Adds one call. `label` is the recorded tool name: "<upstream>__<tool>" is listed as <tool>
  // with `args_text` (scrubbed) as its argument sample; any other label (an upstream resource
  // read, "contextd+upstream://<upstream>/<uri>") is listed as "resource" with the part after
  // "://<upstream>/" (or the whole label) as its argument sample. `result_text`
  // (scrubbed) is kept only as an excerpt when `is_error`. `tokens`: the call's argument and
  // result tokens.
  void Add(std::string_view label, std::string_view args_text, std::string_view result_text,
           bool is_error, int64_t tokens);

  // The summary, e.g.
  //   fs: 5 calls (4 ok, 1 error), 5210 tokens; paths under /repo/src/: read_text_file x4
  //   (path=a.cc; path=b.cc; path=c.cc; +1 more), list_directory x1 (path=.); errors:
  //   read_text_file: Error: ENOENT: no such file or directory, open '/repo/src/d.cc'
  // (one line), within the bounds above by `count`.
  std::string Summary(const CountTokensFn& count) const;

  const std::string& upstream() const { return upstream_; }
  int64_t calls() const { return calls_; }
  int64_t errors() const { return errors_; }
  int64_t tokens() const { return tokens_; }

 private:
  struct Tool {
    std::string name;
    int64_t calls = 0;
    // Distinct, first seen first, at most kAutoSummaryArgSamples of kAutoSummaryArgKeep bytes.
    std::vector<std::string> samples;
    int64_t other_calls = 0;  // calls whose arguments are not among the samples
  };
  // The summary at a level of detail: 0 full, 1 without argument samples, 2 also without error
  // excerpts, 3 also with at most three tools.
  std::string Render(int level) const;
  // The directory (ending in '/') that every path argument of the samples lies in, if there are
  // at least two and it has at least kAutoSummaryMinCommonDir bytes; "" otherwise.
  std::string CommonDirectory() const;

  std::string upstream_;
  std::vector<Tool> tools_;                 // in the order of their first call
  std::vector<std::string> error_samples_;  // "<tool>: <excerpt>", at most kAutoSummaryErrorSamples
  int64_t calls_ = 0;
  int64_t errors_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace contextd::trail
