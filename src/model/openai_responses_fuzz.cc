// Fuzz target for the Responses adapter: any body is parsed as a Responses request; rendering an
// empty plan or every block unchanged must give the body back; every branch found is taken as
// returned (or force-returned, by the input's first byte), folded, and redacted by a toy rule; the
// result must parse again as a Responses request, render the same bytes twice, keep every call
// answered by an output item and every reasoning item outside a fold byte for byte, and, when the
// input transcript was valid, stay valid.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/context_manager.h"
#include "model/fold.h"
#include "model/openai_responses_request.h"
#include "model/testing/in_memory_conversation_store.h"

namespace {

using namespace contextd::model;

class DigitScrubber : public contextd::scrub::Scrubber {
 public:
  std::string Scrub(std::string_view text) const override {
    std::string out(text);
    for (char& c : out) {
      if (c == '7') c = '#';
    }
    return out;
  }
};

class Bytes : public contextd::tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override { return text.size() / 4; }
  std::string_view name() const override { return "bytes"; }
};

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "openai responses fuzz: %s\n", what);
    std::abort();
  }
}

// Every call of an assistant message has its answer among the output items right after it, in
// `before` and `after` alike (a fold may not lose or add an answer).
bool SamePairing(const Transcript& before, const Transcript& after) {
  auto unanswered = [](const Transcript& t) {
    size_t n = 0;
    for (size_t m = 0; m < t.messages.size(); ++m) {
      for (const Block& call : t.messages[m].blocks) {
        if (call.kind != BlockKind::kToolCall) continue;
        bool found = false;
        if (m + 1 < t.messages.size()) {
          for (const Block& r : t.messages[m + 1].blocks) {
            found = found || (r.kind == BlockKind::kToolResult && r.call_id == call.call_id);
          }
        }
        n += !found;
      }
    }
    return n;
  };
  return unanswered(after) <= unanswered(before);
}

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
  RenderPlan same;
  for (size_t m = 0; m < t.messages.size(); ++m) {
    for (size_t b = 0; b < t.messages[m].blocks.size(); ++b) {
      same.blocks[{m, b}] = (*request)->RewriteBlock(m, b, {});
    }
  }
  Check((*request)->Render(same) == body, "rendering unchanged blocks changed the body");

  BranchLookup lookup = [forced](const std::string& id) {
    BranchFacts facts;
    facts.branch_id = id;
    facts.ended = true;
    facts.status = forced ? "timeout" : "completed";
    facts.summary = "summary \"of\" " + id;
    return std::optional<BranchFacts>(facts);
  };
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
  Check(SamePairing(t, (*again)->transcript()), "a fold left a tool call unanswered");
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
  testing::InMemoryConversationStore store;
  DigitScrubber scrubber;
  Bytes counter;
  ContextManager manager({}, store, scrubber, counter,
                         [&](const std::string&, const std::string& id) { return lookup(id); });
  for (int round = 0; round < 2; ++round) {
    auto fresh = manager.Parse(ModelApi::kOpenAIResponses, "local", "", body);
    Check(fresh.ok(), "a body that parsed once does not parse again");
    auto applied = manager.Apply("local", "", *fresh, 1);
    Check(applied.ok(), "Apply failed with an in-memory store");
    auto forwarded = OpenAIResponsesRequest::Parse(applied->body);
    Check(forwarded.ok(), "the forwarded body does not parse");
    if (valid_in) {
      Check(ValidateTranscript((*forwarded)->transcript()).ok(),
            "the forwarded transcript is not valid");
    }
  }
  return 0;
}
