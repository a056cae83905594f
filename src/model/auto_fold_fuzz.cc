// Fuzz target for auto-fold, the rewriter that replaces stale tool results by trail handles: any
// body is parsed as a request of the API the first byte names (Messages, Chat Completions,
// Responses) and applied three times by a context manager with auto-fold on at tiny thresholds
// (every result can fold). Each forwarded body must parse again as the same API, keep a valid
// transcript valid, and keep every tool call answered; every request after the first repeats the
// first one's bytes (the decisions are stored and replayed, nothing new to fold); no thinking
// block that binds is sent after a folded result (a step removes those after its fold point).
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/auto_fold.h"
#include "model/context_manager.h"
#include "model/fold.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/fuzz_support.h"
#include "model/testing/in_memory_conversation_store.h"

namespace {

using namespace contextd::model;

void Check(bool ok, const char* what) { testing::FuzzCheck(ok, "auto-fold fuzz", what); }

size_t ToolResults(const Transcript& t) {
  size_t n = 0;
  for (const Message& m : t.messages) {
    for (const Block& b : m.blocks) n += b.kind == BlockKind::kToolResult;
  }
  return n;
}

// Whether a thinking block of `out` follows a tool result it changed from `in` (same indexes:
// no branch fold or view moved messages).
bool ThinkingAfterAChange(const Transcript& a, const Transcript& b) {
  if (a.messages.size() != b.messages.size()) return false;
  bool changed = false;
  for (size_t m = 0; m < b.messages.size(); ++m) {
    for (size_t k = 0; k < b.messages[m].blocks.size(); ++k) {
      const Block& block = b.messages[m].blocks[k];
      if (changed && block.kind == BlockKind::kThinking) return true;
      if (block.kind == BlockKind::kToolResult && k < a.messages[m].blocks.size() &&
          block.key != a.messages[m].blocks[k].key) {
        changed = true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // Every API of the gateway's table, chosen by the first byte.
  const ModelApi api = ModelApis()[data[0] % ModelApis().size()].api;
  ContextManagerOptions options;
  options.auto_fold.enabled = true;
  options.auto_fold.trigger_tokens = 1;
  options.auto_fold.keep = data[1] % 4;
  options.auto_fold.min_result_tokens = 0;
  options.auto_fold.clear_at_least = 1;
  options.auto_fold.reasoning_items_bound = data[1] & 4;
  std::string body(reinterpret_cast<const char*>(data) + 2, size - 2);

  testing::InMemoryConversationStore store;
  testing::SevenScrubber scrubber;
  testing::QuarterByteCounter counter;
  testing::FakeBranchLedger ledger(
      nullptr, nullptr, nullptr,
      [](const contextd::folding::SessionKey&, const std::vector<ModelToolCall>& calls) {
        std::vector<std::optional<TrailRef>> refs;
        for (size_t i = 0; i < calls.size(); ++i) {
          // The trail cannot keep results holding a scrubbed 7 (the same ones every time).
          if (calls[i].result.find('#') != std::string::npos) {
            refs.push_back(std::nullopt);
          } else {
            refs.push_back(TrailRef{"ses_\"fuzz\"", static_cast<int64_t>(i)});
          }
        }
        return refs;
      });
  ContextManager manager(options, store, scrubber, counter, &ledger);
  std::string first;
  for (int round = 0; round < 3; ++round) {
    auto parsed = manager.Parse(api, "local", "", body);
    if (!parsed.ok()) return 0;
    (*parsed)->ComputeKeys();
    const Transcript in = (*parsed)->transcript();
    const bool valid_in = ValidateTranscript(in).ok();
    auto applied = manager.Apply("local", "", *parsed, 1);
    Check(applied.ok(), "Apply failed with an in-memory store");
    auto forwarded = manager.Parse(api, "local", "", applied->body);
    Check(forwarded.ok(), "the forwarded body does not parse");
    (*forwarded)->ComputeKeys();
    const Transcript& out = (*forwarded)->transcript();
    Check(ToolResults(out) == ToolResults(in), "a tool result was lost or added");
    if (valid_in) Check(ValidateTranscript(out).ok(), "auto-fold broke a valid transcript");
    const bool binds = api != ModelApi::kOpenAIResponses || options.auto_fold.reasoning_items_bound;
    if (binds && applied->folds_applied == 0 && applied->view.empty() &&
        applied->redactions_new == 0 && applied->auto_folds_applied > 0) {
      Check(!ThinkingAfterAChange(in, out), "a thinking block is sent after a folded result");
    }
    if (round == 0) {
      first = applied->body;
    } else {
      Check(applied->body == first, "a later request did not repeat the stored decisions");
      Check(applied->auto_folds_new == 0, "a resent request folded again");
    }
  }
  return 0;
}
