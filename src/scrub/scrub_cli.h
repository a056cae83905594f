// The body of `contextd scrub [--rules FILE] [--report json]`: reads all of `in`, writes the
// redacted text (or, with report_json, the findings as JSON) to `out`, diagnostics to `err`.
// Thread-compatible (uses only its arguments).
#pragma once

#include <iosfwd>
#include <string>

namespace contextd::scrub {

// Runs the scrub command. `rules_file` empty: the embedded defaults; otherwise the file extends
// the defaults (like scrub.extend_default = true). Rules that fail to compile are listed on `err`
// as warnings. report_json writes {"findings":[{"rule_id","start","end","line","entropy",
// "tags"}...],"redacted_bytes":N} where start/end are byte offsets of the secret in the input.
// Returns 0 on success, 2 when the rules cannot be loaded (message on `err`).
int RunScrubCommand(const std::string& rules_file, bool report_json, std::istream& in,
                    std::ostream& out, std::ostream& err);

}  // namespace contextd::scrub
