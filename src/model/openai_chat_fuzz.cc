// Fuzz target for the Chat Completions adapter: any body is parsed as a Chat request; rendering
// every block unchanged must give the body back; every branch found is taken as returned (or
// force-returned, by the input's first byte), folded, and redacted by a toy rule; the result must
// parse again as a Chat request, render the same bytes twice, keep every tool call answered by a
// tool message, and, when the input transcript was valid, stay valid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/context_manager.h"
#include "model/fold.h"
#include "model/openai_chat_request.h"
#include "model/testing/fuzz_support.h"

namespace {

using namespace contextd::model;

constexpr char kTarget[] = "openai chat fuzz";

void Check(bool ok, const char* what) { testing::FuzzCheck(ok, kTarget, what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool forced = data[0] & 1;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto request = OpenAIChatRequest::Parse(body);
  if (!request.ok()) return 0;
  (*request)->ComputeKeys();
  const Transcript& t = (*request)->transcript();
  const bool valid_in = ValidateTranscript(t).ok();

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
  auto again = OpenAIChatRequest::Parse(out);
  Check(again.ok(), "the folded body does not parse");
  Check(testing::SamePairing(t, (*again)->transcript()), "a fold left a tool call unanswered");
  if (valid_in) {
    Check(ValidateTranscript((*request)->RenderedTranscript(render)).ok(),
          "the fold broke a valid transcript");
    Check(ValidateTranscript((*again)->transcript()).ok(),
          "the folded body's transcript is not valid");
  }

  // The whole pipeline, twice (the second request sees the first one's decisions).
  testing::CheckPipelineTwice<OpenAIChatRequest>(kTarget, ModelApi::kOpenAIChat, body, lookup,
                                                 valid_in);
  return 0;
}
