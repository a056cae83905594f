// OpenAiDistiller: the ReasoningBank's model Distiller over an OpenAI-compatible
// /v1/chat/completions endpoint: it sends the branch trace (bounded to kMaxTraceTextBytes) with
// the success or the failure extraction prompt (openai_answers.h), temperature 0, and turns the
// model's JSON reply into at most memory::kMaxCandidates validated candidates whose outcome is the
// trace's. Thread-safe: Distill may run on many threads at once; each call blocks its thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "endpoints/openai_endpoint.h"
#include "memory/distiller.h"
#include "transport/http_client.h"

namespace contextd::endpoints {

class OpenAiDistiller final : public memory::Distiller {
 public:
  // Answers above this size are refused.
  static constexpr size_t kMaxAnswerBytes = 1u << 20;

  // `client` must outlive the distiller (MakeEndpointClient makes one for `options`).
  OpenAiDistiller(OpenAiEndpointOptions options, transport::HttpClient& client);

  // Candidates for `trace`, outcome kSuccess when trace.succeeded and kFailure otherwise.
  // Candidates that quote the branch or session id are dropped (the prompt asks for none).
  // Errors: InvalidArgument for a malformed answer or one without a valid candidate (see
  // ParseChatAnswer and ParseMemoriesAnswer); Unavailable, DeadlineExceeded, PermissionDenied and
  // FailedPrecondition as OpenAiEndpoint::PostJson. Never throws.
  absl::StatusOr<std::vector<memory::Candidate>> Distill(const memory::BranchTrace& trace) override;

  // "model <options.model>".
  std::string name() const override;

 private:
  OpenAiEndpoint endpoint_;
};

}  // namespace contextd::endpoints
