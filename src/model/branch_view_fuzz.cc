// Fuzz target for the isolated branch view (branch_view.h): any body is parsed as a request of
// one of the three APIs (the input's first byte picks it and whether the view keeps the
// conversation's opening, unless the input is a whole body starting with '{': Messages), every
// branch found is taken as open, and the request goes through the context manager twice
// (testing::CheckPipelineTwice: it parses again, stays valid when the input was, and is sent the
// same both times). The input is also read as a stored view record, which must parse back from
// its own serialisation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/anthropic_request.h"
#include "model/branch_view.h"
#include "model/fold.h"
#include "model/openai_chat_request.h"
#include "model/openai_responses_request.h"
#include "model/testing/fuzz_support.h"

namespace {

using namespace contextd::model;

constexpr char kTarget[] = "branch view fuzz";

// Every branch is open (active).
std::optional<BranchFacts> OpenBranch(const std::string& id) {
  BranchFacts facts;
  facts.branch_id = id;
  facts.status = "active";
  return facts;
}

template <typename Request>
void CheckApi(ModelApi api, const std::string& body, const ContextManagerOptions& options) {
  auto parsed = Request::Parse(body);
  if (!parsed.ok()) return;
  const bool valid_in = ValidateTranscript((*parsed)->transcript()).ok();
  testing::CheckPipelineTwice<Request>(kTarget, api, body, OpenBranch, valid_in, options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (auto record = ViewRecord::Parse(text); record.ok()) {
    auto again = ViewRecord::Parse(record->Serialize());
    testing::FuzzCheck(again.ok() && again->Serialize() == record->Serialize(), kTarget,
                       "a view record does not round-trip");
  }
  const bool whole = data[0] == '{';
  ContextManagerOptions options;
  options.branch_view.keep_opening = whole || (data[0] & 1) == 0;
  const std::string body = text.substr(whole ? 0 : 1);
  switch (whole ? 0 : (data[0] >> 1) % 3) {
    case 0:
      CheckApi<AnthropicRequest>(ModelApi::kAnthropicMessages, body, options);
      break;
    case 1:
      CheckApi<OpenAIChatRequest>(ModelApi::kOpenAIChat, body, options);
      break;
    default:
      CheckApi<OpenAIResponsesRequest>(ModelApi::kOpenAIResponses, body, options);
  }
  return 0;
}
