// Fuzz target for the Responses adapter: any body is parsed as a Responses request; rendering an
// empty plan or every block unchanged must give the body back; every branch found is taken as
// returned (or force-returned, by the input's first byte), folded, and redacted by a toy rule; the
// result must parse again as a Responses request, render the same bytes twice, keep every call
// answered by an output item and every reasoning item outside a fold byte for byte, and, when the
// input transcript was valid, stay valid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/context_manager.h"
#include "model/fold.h"
#include "model/openai_responses_request.h"
#include "model/testing/fuzz_support.h"

namespace {

using namespace contextd::model;

constexpr char kTarget[] = "openai responses fuzz";

void Check(bool ok, const char* what) { testing::FuzzCheck(ok, kTarget, what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool forced = data[0] & 1;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto request = OpenAIResponsesRequest::Parse(body);
  if (!request.ok()) return 0;
  (*request)->ComputeKeys();
  const Transcript& t = (*request)->transcript();
  const bool valid_in = ValidateTranscript(t).ok();

  Check((*request)->Render(RenderPlan{}) == body, "rendering an empty plan changed the body");
  Check((*request)->Render(testing::UnchangedBlocksPlan(**request)) == body,
        "rendering unchanged blocks changed the body");

  BranchLookup lookup = testing::EndedBranchLookup(forced);
  FoldPlan plan = PlanFolds(t, {}, lookup);
  RenderPlan render;
  render.folds = plan.edits;
  if (!t.messages.empty() && t.messages.back().role == Role::kUser) {
    render.appends[t.messages.size() - 1] = R"({"type":"text","text":"[contextd] note"})";
  }
  std::string out = (*request)->Render(render);
  Check(out == (*request)->Render(render), "rendering is not deterministic");
  auto again = OpenAIResponsesRequest::Parse(out);
  Check(again.ok(), "the folded body does not parse");
  Check(testing::SamePairing(t, (*again)->transcript()), "a fold left a tool call unanswered");
  // Reasoning is bound to what precedes it: outside the folded spans it goes as it came.
  size_t fold = 0;
  for (size_t m = 0; m < t.messages.size(); ++m) {
    while (fold < plan.edits.size() && plan.edits[fold].end_message < m) ++fold;
    if (fold < plan.edits.size() && m > plan.edits[fold].create_message &&
        m <= plan.edits[fold].end_message) {
      continue;
    }
    for (size_t b = 0; b < t.messages[m].blocks.size(); ++b) {
      if (t.messages[m].blocks[b].kind != BlockKind::kThinking) continue;
      Check(out.find((*request)->RewriteBlock(m, b, {})) != std::string::npos,
            "a reasoning item outside a fold changed");
    }
  }
  if (valid_in) {
    Check(ValidateTranscript((*request)->RenderedTranscript(render)).ok(),
          "the fold broke a valid transcript");
    Check(ValidateTranscript((*again)->transcript()).ok(),
          "the folded body's transcript is not valid");
  }

  // The whole pipeline, twice (the second request sees the first one's decisions).
  testing::CheckPipelineTwice<OpenAIResponsesRequest>(kTarget, ModelApi::kOpenAIResponses, body,
                                                      lookup, valid_in);
  return 0;
}
