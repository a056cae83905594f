// Fuzz target for the isolated branch view (branch_view.h): any body is parsed as a request of
// one of the three APIs (the input's first byte picks it and whether the view keeps the
// conversation's opening, unless the input is a whole body starting with '{': Messages), every
// branch found is taken as open, and the request goes through the context manager twice. The
// forwarded body must parse again with the same adapter, stay valid when the input was, and be
// the same bytes both times (a view is repeated byte for byte). The input is also read as a
// stored view record, which must parse back from its own serialisation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/branch_view.h"
#include "model/context_manager.h"
#include "model/fold.h"
#include "model/model_api.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/fuzz_support.h"
#include "model/testing/in_memory_conversation_store.h"

namespace {

using namespace contextd::model;

void Check(bool ok, const char* what) { testing::FuzzCheck(ok, "branch view fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (auto record = ViewRecord::Parse(text); record.ok()) {
    auto again = ViewRecord::Parse(record->Serialize());
    Check(again.ok() && again->Serialize() == record->Serialize(),
          "a view record does not round-trip");
  }
  const bool whole = data[0] == '{';
  static constexpr ModelApi kApis[] = {ModelApi::kAnthropicMessages, ModelApi::kOpenAIChat,
                                       ModelApi::kOpenAIResponses};
  const ModelApi api = whole ? ModelApi::kAnthropicMessages : kApis[(data[0] >> 1) % 3];
  ContextManagerOptions options;
  options.branch_view.keep_opening = whole || (data[0] & 1) == 0;
  std::string body = text.substr(whole ? 0 : 1);
  const ModelRequestParser& parse = ApiRow(api).parse;

  testing::InMemoryConversationStore store;
  testing::SevenScrubber scrubber;
  testing::QuarterByteCounter counter;
  testing::FakeBranchLedger ledger([](const std::string&, const std::string& id) {
    BranchFacts facts;
    facts.branch_id = id;
    facts.status = "active";
    return std::optional<BranchFacts>(facts);
  });
  ContextManager manager(options, store, scrubber, counter, &ledger);
  std::string first;
  for (int round = 0; round < 2; ++round) {
    auto parsed = parse(body, nullptr);
    if (!parsed.ok()) return 0;
    std::shared_ptr<ModelRequest> request = *std::move(parsed);
    request->ComputeKeys();
    const bool valid_in = ValidateTranscript(request->transcript()).ok();
    auto applied = manager.Apply("local", "fuzz", request, 1);
    Check(applied.ok(), "Apply failed with an in-memory store");
    auto forwarded = parse(applied->body, nullptr);
    Check(forwarded.ok(), "the forwarded body does not parse");
    if (valid_in) {
      (*forwarded)->ComputeKeys();
      Check(ValidateTranscript((*forwarded)->transcript()).ok(),
            "the forwarded transcript is not valid");
    }
    if (round == 0) first = applied->body;
    Check(round == 0 || applied->body == first, "the same request was sent differently");
  }
  return 0;
}
