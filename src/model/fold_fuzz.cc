// Fuzz target for the model gateway's request rewriter: any body is parsed as a Messages request;
// every branch found is taken as returned (or force-returned, by the input's first byte unless
// the input is a whole body starting with '{'), folded,
// and redacted by a toy rule; the result must be JSON that parses again as a Messages request,
// render the same bytes twice, and, when the input transcript was valid, stay valid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/anthropic_request.h"
#include "model/context_manager.h"
#include "model/fold.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/fuzz_support.h"
#include "model/testing/in_memory_conversation_store.h"

namespace {

using namespace contextd::model;

void Check(bool ok, const char* what) { testing::FuzzCheck(ok, "fold fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // A body recorded from a real agent (tests/agents/corpus) starts with '{' and is taken whole;
  // otherwise the first byte says whether branches end by force.
  const bool whole = data[0] == '{';
  const bool forced = !whole && (data[0] & 1);
  std::string body(reinterpret_cast<const char*>(data) + (whole ? 0 : 1), size - (whole ? 0 : 1));
  auto request = AnthropicRequest::Parse(body);
  if (!request.ok()) return 0;
  (*request)->ComputeKeys();
  const bool valid_in = ValidateTranscript((*request)->transcript()).ok();

  BranchLookup lookup = testing::EndedBranchLookup(forced);
  FoldPlan plan = PlanFolds((*request)->transcript(), {}, lookup);
  RenderPlan render;
  render.folds = plan.edits;
  std::string out = (*request)->Render(render);
  Check(out == (*request)->Render(render), "rendering is not deterministic");
  auto again = AnthropicRequest::Parse(out);
  Check(again.ok(), "the folded body does not parse");
  if (valid_in) {
    Check(ValidateTranscript((*request)->RenderedTranscript(render)).ok(),
          "the fold broke a valid transcript");
    Check(ValidateTranscript((*again)->transcript()).ok(),
          "the folded body's transcript is not valid");
  }

  // The whole pipeline, twice (the second request sees the first one's decisions).
  testing::InMemoryConversationStore store;
  testing::SevenScrubber scrubber;
  testing::QuarterByteCounter counter;
  contextd::model::testing::FakeBranchLedger ledger(
      [&](const std::string&, const std::string& id) { return lookup(id); });
  ContextManager manager({}, store, scrubber, counter, &ledger);
  for (int round = 0; round < 2; ++round) {
    // Each round a fresh parse, as each request of a conversation is.
    auto fresh = AnthropicRequest::Parse(body);
    Check(fresh.ok(), "a body that parsed once does not parse again");
    std::shared_ptr<AnthropicRequest> next = *std::move(fresh);
    auto applied = manager.Apply("local", "fuzz", next, 1);
    Check(applied.ok(), "Apply failed with an in-memory store");
    auto forwarded = AnthropicRequest::Parse(applied->body);
    Check(forwarded.ok(), "the forwarded body does not parse");
    if (valid_in) {
      Check(ValidateTranscript((*forwarded)->transcript()).ok(),
            "the forwarded transcript is not valid");
    }
  }
  return 0;
}
