// TrailRecorder: the gateway's InterceptionObserver that records every proxied upstream call
// (scrubbed arguments and result, their token counts, isError) in the trail, in the scope of the
// branch it was charged to, or outside any branch through Trail::RecordUpstreamCall (the session
// root, or the upstream's auto-scope with trail.auto_scope_upstreams), durably before the reply
// is sent. Runs on the engine executor (where the gateway calls it and the Trail lives).
#pragma once

#include "gateway/gateway.h"
#include "trail/trail.h"

namespace contextd::tools {

class TrailRecorder final : public gateway::InterceptionObserver {
 public:
  // `trail` must outlive the recorder.
  explicit TrailRecorder(trail::Trail& trail) : trail_(trail) {}

  // Records the call with Trail::RecordToolCall in branch `branch_id`, or with
  // Trail::RecordUpstreamCall when it is empty (the upstream: the part of `tool` before "__", or
  // the name in an exposed resource uri; the session root if neither parses). A failure is
  // logged (the reply still goes out).
  void OnProxiedCall(const protocol::SessionInfo& session, std::string_view branch_id,
                     std::string_view tool, std::string_view scrubbed_args,
                     std::string_view scrubbed_result, int64_t args_tokens, int64_t result_tokens,
                     bool is_error) override;

 private:
  trail::Trail& trail_;
};

}  // namespace contextd::tools
