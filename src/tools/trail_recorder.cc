#include "tools/trail_recorder.h"

#include "base/logging.h"
#include "base/str_cat.h"
#include "tools/trail_tools.h"

namespace contextd::tools {
namespace {

// The upstream a proxied call went to: "<upstream>__<tool>" or an exposed resource uri
// ("contextd+upstream://<upstream>/<uri>"); "" if `tool` is neither.
std::string UpstreamOf(std::string_view tool) {
  if (tool.substr(0, gateway::kResourceScheme.size()) == gateway::kResourceScheme) {
    auto original = gateway::Gateway::OriginalUri(tool);
    return original.ok() ? original->first : "";
  }
  size_t sep = tool.find(gateway::kNameSeparator);
  return sep == std::string_view::npos || sep == 0 ? "" : std::string(tool.substr(0, sep));
}

}  // namespace

void TrailRecorder::OnProxiedCall(const protocol::SessionInfo& session, std::string_view branch_id,
                                  std::string_view tool, std::string_view scrubbed_args,
                                  std::string_view scrubbed_result, int64_t args_tokens,
                                  int64_t result_tokens, bool is_error) {
  trail::SessionRef ref = TrailSessionFor(session);
  std::string upstream = branch_id.empty() ? UpstreamOf(tool) : "";
  auto recorded =
      upstream.empty()
          ? trail_.RecordToolCall(ref, branch_id, tool, scrubbed_args, scrubbed_result, args_tokens,
                                  result_tokens, is_error)
          : trail_.RecordUpstreamCall(ref, upstream, tool, scrubbed_args, scrubbed_result,
                                      args_tokens, result_tokens, is_error);
  if (!recorded.ok()) {
    base::LogWarn(base::StrCat("trail: recording ", tool, " in ",
                               branch_id.empty() ? std::string_view("the session root") : branch_id,
                               ": ", recorded.status().message()));
  }
}

}  // namespace contextd::tools
