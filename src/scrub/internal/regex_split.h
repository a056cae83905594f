// Textual analysis of RE2 patterns used by the scanner's fast paths: splitting a pattern around
// one capture group of its top-level concatenation, and detecting empty-width assertions.
// Conservative: when unsure (an unknown construct), the functions say "no". Stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace contextd::scrub::internal {

// The pattern around capture group `group` (1-based, counted like RE2 counts them).
struct GroupSplit {
  // Text before the group's '(' (a regex on its own).
  std::string before;
  // The top-level flag directives (like "(?i)") that precede the group, then the text after the
  // group's ')': a regex with the same flags in effect as in the original pattern.
  std::string after;
};

// Splits `pattern` as before (group) after, where the group is an element of the pattern's
// top-level concatenation: at nesting depth 0, no top-level '|', and no quantifier applied to
// it. Then every match of the pattern is a match of `before`, then of the group, then of
// `after`, back to back. Returns false when the pattern does not have that shape or uses a
// construct this scanner does not know.
bool SplitAtGroup(std::string_view pattern, int group, GroupSplit* out);

// True when `pattern` may contain an empty-width assertion (^ $ \b \B \A \z) outside character
// classes, or a construct this scanner does not know. Without assertions, whether the pattern
// matches somewhere inside a string does not depend on the text around it.
bool MayHaveAssertions(std::string_view pattern);

// For each capture group of `pattern` (out->at(g) for group g; entry 0 unused), whether it is a
// label: it matches only fixed text (literals, alternatives and groups of them, no class,
// repetition or escape class like \w), or it sits under a repetition (x{3}, x+, x*: it keeps only
// its last iteration). Such a group does not delimit a secret. False when unsure; all false when
// the pattern uses a construct this scanner does not know.
std::vector<bool> LabelGroups(std::string_view pattern);

// Upper bounds on what one match of a pattern can span (SIZE_MAX: unbounded).
struct PatternExtent {
  size_t max_bytes = 0;     // bytes of the match (a rune counts as up to 4)
  size_t max_newlines = 0;  // '\n' bytes in the match
  // '\n' bytes matched by elements that name line breaks on purpose: \n (or \x0a, a range over
  // it, a class with \n) outside a negated class, '.' under (?s), a class holding a class and
  // its complement ([\s\S]), \C. Not \s or a negated class, which also match the spaces or
  // characters they are written for.
  size_t max_line_breaks = 0;
  // '\n' bytes that another byte of the match may follow (a newline that can only be the
  // match's last byte, like the one (?:[\s;]|$) takes after a token, is not one).
  size_t max_inner_newlines = 0;
};

// Computes PatternExtent for an RE2 pattern: repetition bounds multiply, alternatives take the
// larger. false when the pattern uses a construct this scanner does not read (octal escapes,
// lookarounds, which RE2 refuses anyway).
bool MeasurePattern(std::string_view pattern, PatternExtent* out);

// Strings one of which every match of `pattern` starts with, ignoring case (so that an ASCII
// case-insensitive search finds every place a match of the pattern can start, on ASCII text;
// (?i) lets 'k' and 's' match non-ASCII letters). Found for patterns whose matches all begin
// with a short finite part: literals, small classes, (?:a|b) groups, '?' and '{n}'.
// At most `max_strings` strings, none shorter than `min_length`; false when there is no such
// set (an element that can begin with many different bytes or with nothing, a construct this
// scanner does not know). The strings are lower-case ASCII.
bool LeadingLiterals(std::string_view pattern, size_t max_strings, size_t min_length,
                     std::vector<std::string>* out);

}  // namespace contextd::scrub::internal
