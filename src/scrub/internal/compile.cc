// Rule compilation: rules and allowlists -> CompiledRule, the keyword automaton, the RE2::Set of
// keyword-less rules (see engine.h).

#include <re2/filtered_re2.h>

#include <algorithm>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scrub/internal/engine.h"
#include "scrub/internal/regex_split.h"

namespace contextd::scrub::internal {
namespace {

std::string MarkerId(std::string_view id) {
  std::string out;
  for (unsigned char c : id.substr(0, kMaxMarkerId)) out.push_back(IsIdChar(c) ? c : '-');
  if (out.empty()) out = "rule";
  return out;
}

// The prefilter atoms of `pattern` that every match contains (an atom is required when the
// prefilter fails as soon as only that atom is missing: the prefilter is a monotone AND/OR of
// atoms), keeping those made of ASCII non-letters only: the atoms are lower-cased and meant for
// case-insensitive search, and only for such bytes is the raw text as good as its lower case.
std::vector<std::string> RequiredLiterals(const std::string& pattern) {
  std::vector<std::string> out;
  re2::FilteredRE2 filter(1);
  int id = 0;
  if (filter.Add(pattern, RuleOptions(), &id) != RE2::NoError) return out;
  std::vector<std::string> atoms;
  filter.Compile(&atoms);
  // One AllPotentials over all atoms per atom: quadratic, and a shortcut only.
  if (atoms.size() > 64) return out;
  std::vector<int> all, potential;
  for (int i = 0; i < static_cast<int>(atoms.size()); ++i) all.push_back(i);
  filter.AllPotentials(all, &potential);
  if (potential.empty()) return out;
  for (int a = 0; a < static_cast<int>(atoms.size()); ++a) {
    const std::string& atom = atoms[a];
    const bool caseless = !atom.empty() && std::all_of(atom.begin(), atom.end(), [](char c) {
      const unsigned char u = static_cast<unsigned char>(c);
      return u < 0x80 && !((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
    });
    if (!caseless) continue;
    std::vector<int> rest;
    for (int i : all) {
      if (i != a) rest.push_back(i);
    }
    filter.AllPotentials(rest, &potential);
    if (potential.empty()) out.push_back(atom);
  }
  return out;
}

}  // namespace

RE2::Options RuleOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(64 << 20);
  return o;
}

absl::Status Engine::Compile(const RulesConfig& config) {
  auto compile_allowlist = [&](const AllowlistSpec& spec, const std::string& owner,
                               CompiledAllowlist* a) {
    a->condition = spec.condition;
    a->target = spec.regex_target;
    a->stopwords = spec.stopwords;
    a->has_commits = !spec.commits.empty();
    a->target_rules.insert(spec.target_rules.begin(), spec.target_rules.end());
    std::string combined, context_free;
    for (const auto& src : spec.regexes) {
      auto re = std::make_unique<RE2>(src, RuleOptions());
      if (!re->ok()) {
        problems.push_back(
            {owner, absl::StrCat("allowlist regex '", src, "' skipped: ", re->error())});
        continue;
      }
      absl::StrAppend(&combined, combined.empty() ? "" : "|", "(?:", src, ")");
      if (!MayHaveAssertions(src)) {
        absl::StrAppend(&context_free, context_free.empty() ? "" : "|", "(?:", src, ")");
      }
      a->regexes.push_back(std::move(re));
    }
    if (!context_free.empty()) {
      auto re = std::make_unique<RE2>(context_free, RuleOptions());
      if (re->ok()) a->context_free = std::move(re);
    }
    // One alternation instead of N calls: allowlists run once per finding, so this matters.
    if (a->regexes.size() > 1) {
      auto re = std::make_unique<RE2>(combined, RuleOptions());
      if (re->ok()) {
        a->regexes.clear();
        a->regexes.push_back(std::move(re));
      }
    }
    for (const auto& src : spec.paths) {
      auto re = std::make_unique<RE2>(src, RuleOptions());
      if (!re->ok()) {
        problems.push_back(
            {owner, absl::StrCat("allowlist path '", src, "' skipped: ", re->error())});
        continue;
      }
      a->paths.push_back(std::move(re));
    }
    // Same count of configured checks as AllowlistMatches.
    const int configured = (a->has_commits ? 1 : 0) + (a->paths.empty() ? 0 : 1) +
                           (a->regexes.empty() ? 0 : 1) + (a->stopwords.empty() ? 0 : 1);
    const bool alone_decides = a->condition == AllowlistCondition::kOr || configured == 1;
    a->regex_decides = alone_decides && !a->regexes.empty();
    a->stopword_decides = alone_decides && !a->stopwords.empty();
  };
  for (const auto& spec : config.allowlists) {
    CompiledAllowlist a;
    compile_allowlist(spec, "(global allowlist)", &a);
    global.push_back(std::move(a));
  }
  std::unordered_set<std::string> ids;
  std::unordered_map<std::string, uint32_t> keyword_index;
  std::vector<std::string> keywords;
  for (const RuleSpec& spec : config.rules) {
    if (!ids.insert(spec.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate rule id '", spec.id, "'"));
    }
    if (spec.regex.empty()) {
      problems.push_back(
          {spec.id, "path-only rule (matches file names, not text): not applicable"});
      continue;
    }
    CompiledRule r;
    r.id = spec.id;
    r.marker_id = MarkerId(spec.id);
    r.re = std::make_unique<RE2>(spec.regex, RuleOptions());
    if (!r.re->ok()) {
      problems.push_back(
          {spec.id, absl::StrCat("regex does not compile with RE2: ", r.re->error())});
      continue;
    }
    if (!spec.path.empty()) {
      r.path = std::make_unique<RE2>(spec.path, RuleOptions());
      if (!r.path->ok()) {
        problems.push_back(
            {spec.id, absl::StrCat("path regex does not compile with RE2: ", r.path->error())});
        continue;
      }
    }
    r.num_groups = r.re->NumberOfCapturingGroups();
    if (r.num_groups > 0 && IsAscii(spec.regex)) {
      RE2::Options latin1 = RuleOptions();
      latin1.set_encoding(RE2::Options::EncodingLatin1);
      auto re = std::make_unique<RE2>(spec.regex, latin1);
      if (re->ok() && re->NumberOfCapturingGroups() == r.num_groups) r.re_latin1 = std::move(re);
    }
    if (spec.secret_group > r.num_groups) {
      problems.push_back(
          {spec.id, absl::StrCat("secretGroup ", spec.secret_group, " but the regex has only ",
                                 r.num_groups, " groups")});
      continue;
    }
    r.secret_group = spec.secret_group;
    if (r.secret_group == 0 && r.num_groups > 0) {
      std::vector<bool> labels = LabelGroups(spec.regex);
      if (static_cast<int>(labels.size()) == r.num_groups + 1 &&
          std::find(labels.begin(), labels.end(), true) != labels.end()) {
        r.label_groups = std::move(labels);
      }
    }
    r.required_literals = RequiredLiterals(spec.regex);
    if (!MayHaveAssertions(spec.regex)) {
      // Every match is an anchored match of the pattern, so it lies between PossibleMatchRange's
      // min and max and starts with their common prefix.
      std::string min, max;
      if (r.re->PossibleMatchRange(&min, &max, 64)) {
        size_t n = 0;
        while (n < min.size() && n < max.size() && min[n] == max[n]) ++n;
        r.start_prefix = min.substr(0, n);
      }
    }
    // The group whose text is the secret: the configured one, or the only one. (With several
    // groups and no secretGroup it is the first non-empty one: no bounds for that.)
    const int secret_index = spec.secret_group > 0 ? spec.secret_group : r.num_groups == 1 ? 1 : 0;
    GroupSplit split;
    // Neither part may have assertions: then the match's parse in the text is also its parse on
    // its own, which is where gitleaks looks for the secret (ExtractGroups).
    if (secret_index > 0 && SplitAtGroup(spec.regex, secret_index, &split) &&
        !MayHaveAssertions(split.before) && !MayHaveAssertions(split.after)) {
      RE2::Options longest = RuleOptions();
      longest.set_longest_match(true);
      auto before = std::make_unique<RE2>(split.before, longest);
      auto after = std::make_unique<RE2>(absl::StrCat("(?:", split.after, ")\\z"), RuleOptions());
      // The group counts confirm that the split is where RE2 sees the group.
      if (before->ok() && after->ok() && before->NumberOfCapturingGroups() == secret_index - 1 &&
          after->NumberOfCapturingGroups() == r.num_groups - secret_index) {
        r.before_secret = std::move(before);
        r.after_secret = std::move(after);
      }
    }
    r.entropy = spec.entropy;
    r.require_digit = spec.require_digit;
    r.low_priority = absl::StartsWith(spec.id, "generic") ||
                     std::find(spec.tags.begin(), spec.tags.end(), "generic") != spec.tags.end();
    // How far past its keyword's line a match can reach. Newlines the pattern asks for (\n,
    // (?s)., [\s\S]): up to kMaxSpanLines of them widen the window by as many lines each way,
    // more make the rule wide. A newline that \s or a negated class may take inside the match
    // (many rules allow one between a key and its value) lets the match start on the line
    // before its keyword.
    PatternExtent extent;
    const bool measured = MeasurePattern(spec.regex, &extent);
    if (absl::StrContains(spec.regex, "(?s") || absl::StrContains(spec.regex, "\\s\\S") ||
        absl::StrContains(spec.regex, "\\S\\s") ||
        (measured && extent.max_line_breaks > kMaxSpanLines)) {
      r.forward_window = kWideForwardWindow;
      r.back_window = kWideForwardWindow;
      r.wide = true;
    } else if (measured) {
      r.span_lines = extent.max_line_breaks;
      r.back_lines = std::max<size_t>(r.span_lines, extent.max_inner_newlines > 0 ? 1 : 0);
      max_span_lines = std::max(max_span_lines, r.span_lines);
    }
    r.tags = spec.tags;
    for (const auto& a : spec.allowlists) {
      CompiledAllowlist ca;
      compile_allowlist(a, spec.id, &ca);
      r.allowlists.push_back(std::move(ca));
    }
    for (const auto& a : r.allowlists) r.has_early_allowlist |= !NeedsSecret(a);
    for (const auto& a : global) r.has_early_allowlist |= !NeedsSecret(a);
    const uint32_t ri = static_cast<uint32_t>(rules.size());
    // Adds rule ri to `lists` (keyword_rules or anchor_rules) of pattern k, adding the pattern.
    auto add_pattern = [&](const std::string& k, std::vector<std::vector<uint32_t>>& lists) {
      auto [it, inserted] = keyword_index.emplace(k, static_cast<uint32_t>(keywords.size()));
      if (inserted) {
        keywords.push_back(k);
        keyword_rules.emplace_back();
        anchor_rules.emplace_back();
      }
      auto& list = lists[it->second];
      if (list.empty() || list.back() != ri) list.push_back(ri);
    };
    bool any_keyword = false;
    for (const std::string& k : spec.keywords) {
      if (k.empty()) continue;
      any_keyword = true;
      add_pattern(k, keyword_rules);
    }
    if (!any_keyword) always_rules.push_back(ri);
    // Leading strings, for a rule the keyword pass runs (windows). Not for rules searched across
    // lines: their windows are few and long, and start_prefix already skips to a possible start.
    std::vector<std::string> leads;
    if (any_keyword && !r.wide &&
        LeadingLiterals(spec.regex, kMaxLeadingStrings, kMinLeadingLength, &leads)) {
      r.anchored = true;
      have_anchored = true;
      // A prefix of a leading string is one too; short ones keep the automaton small.
      for (const std::string& lead : leads) {
        add_pattern(lead.substr(0, kMaxLeadingLength), anchor_rules);
      }
      // A match that starts with a leading string holding a keyword (with no newline before
      // it) starts on that keyword hit's line, at most 64 bytes (the longest leading string)
      // before it, inside the hit's window. A match that starts with a leading string holding
      // no keyword is found only through a keyword further in; windows assume, as before, that
      // it is on the match's first line (for the built-in generic-secret, whose keywords miss
      // some spellings its regex takes, auth.key for one, the line before would cost 1% of the
      // scan of clean text).
      bool any_in_lead = false;
      const bool keyword_in_lead =
          std::all_of(leads.begin(), leads.end(), [&](const std::string& l) {
            for (const std::string& k : spec.keywords) {
              const size_t at = k.empty() ? std::string::npos : l.find(k);
              if (at == std::string::npos) continue;
              any_in_lead = true;
              return l.find('\n') >= at;  // npos when there is none
            }
            return true;
          });
      if (keyword_in_lead && any_in_lead) r.back_lines = 0;
    }
    rules.push_back(std::move(r));
  }
  for (const auto& rule_list : keyword_rules) {
    bool wide = false;
    for (uint32_t ri : rule_list) wide |= rules[ri].wide;
    keyword_wide.push_back(wide);
  }
  for (size_t i = 0; i < keywords.size(); ++i) {
    keyword_len.push_back(static_cast<uint32_t>(keywords[i].size()));
    max_pattern_len = std::max(max_pattern_len, keywords[i].size());
    if (!keyword_rules[i].empty()) {
      max_keyword_len = std::max(max_keyword_len, keywords[i].size());
    }
  }
  ac = std::make_unique<AhoCorasick>(keywords);
  if (always_rules.size() > 1) {
    auto set = std::make_unique<RE2::Set>(RuleOptions(), RE2::UNANCHORED);
    bool ok = true;
    for (uint32_t ri : always_rules) {
      std::string err;
      if (set->Add(rules[ri].re->pattern(), &err) < 0) ok = false;
    }
    if (ok && set->Compile()) always_set = std::move(set);
  }
  return absl::OkStatus();
}

}  // namespace contextd::scrub::internal
