// The body of `contextd scrub [--rules FILE [--with-defaults]] [--report json]`: reads all of
// `in`, writes the redacted text (or, with report_json, the findings as JSON) to `out`,
// diagnostics to `err`. Thread-compatible (uses only its arguments).
#pragma once

#include <iosfwd>
#include <string>

namespace contextd::cli {

// Help text of --rules and --with-defaults (the CLI and the tests share it).
inline constexpr char kRulesFlagHelp[] =
    "gitleaks TOML rules; they replace the built-in rules unless the file has [extend] "
    "useDefault = true (or --with-defaults)";
inline constexpr char kWithDefaultsFlagHelp[] =
    "with --rules: keep the built-in rules under the file's rules (as scrub.extend_default = "
    "true does in the server)";

// Runs the scrub command. `rules_file` empty: the built-in rules; otherwise the file's rules as
// gitleaks reads them (ResolveRules with extend_default = with_defaults): they replace the
// built-in rules unless the file has [extend] useDefault = true or with_defaults is set. Rules
// that fail to compile are listed on `err` as warnings. report_json writes {"findings":[{"rule_id",
// "start","end","line","entropy","tags"}...],"redacted_bytes":N} where start/end are byte
// offsets of the secret in the input. Returns 0 on success, 2 when the rules cannot be loaded
// (message on `err`).
int RunScrubCommand(const std::string& rules_file, bool with_defaults, bool report_json,
                    std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace contextd::cli
