#include "server/trail_recorder.h"

#include "base/logging.h"
#include "base/str_cat.h"
#include "server/trail_tools.h"

namespace contextd::server {

void TrailRecorder::OnProxiedCall(const protocol::SessionInfo& session, std::string_view branch_id,
                                  std::string_view tool, std::string_view scrubbed_args,
                                  std::string_view scrubbed_result, int64_t args_tokens,
                                  int64_t result_tokens, bool is_error) {
  auto recorded = trail_.RecordToolCall(TrailSessionFor(session), branch_id, tool, scrubbed_args,
                                        scrubbed_result, args_tokens, result_tokens, is_error);
  if (!recorded.ok()) {
    base::LogWarn(base::StrCat("trail: recording ", tool, " in ",
                               branch_id.empty() ? std::string_view("the session root") : branch_id,
                               ": ", recorded.status().message()));
  }
}

}  // namespace contextd::server
