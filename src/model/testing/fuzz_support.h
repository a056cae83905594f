// Helpers shared by the model room's fuzz targets: a toy scrubber (every '7' becomes '#'), a
// bytes/4 token counter, a Check that prints and aborts, a branch lookup that ends every branch,
// and the transcript and pipeline checks (with testing/render_plans.h) the rewriter fuzzers have in
// common. For fuzz targets only (never linked into the server). Stateless; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "model/context_manager.h"
#include "model/fold.h"
#include "model/model_request.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/in_memory_conversation_store.h"
#include "model/testing/render_plans.h"
#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::model::testing {

// A redaction rule the fuzzers can predict: every '7' becomes '#'.
class SevenScrubber : public scrub::Scrubber {
 public:
  std::string Scrub(std::string_view text) const override {
    std::string out(text);
    for (char& c : out) {
      if (c == '7') c = '#';
    }
    return out;
  }
};

// Counts a token per four bytes; named "bytes".
class QuarterByteCounter : public tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override { return text.size() / 4; }
  std::string_view name() const override { return "bytes"; }
};

// Aborts with "<target>: <what>" on stderr when `ok` is false (a fuzz target's finding).
inline void FuzzCheck(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
  }
}

// A lookup that finds every branch ended: "timeout" when `forced`, else "completed", with a
// summary that needs JSON escaping.
inline BranchLookup EndedBranchLookup(bool forced) {
  return [forced](const std::string& id) {
    BranchFacts facts;
    facts.branch_id = id;
    facts.ended = true;
    facts.status = forced ? "timeout" : "completed";
    facts.summary = "summary \"of\" " + id;
    return std::optional<BranchFacts>(facts);
  };
}

// How many tool calls of `t` have no answer among the blocks of the message right after theirs.
inline size_t UnansweredCalls(const Transcript& t) {
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
}

// Every call of an assistant message has its answer in the message right after it, in `before`
// and `after` alike (a fold may not lose or add an answer).
inline bool SamePairing(const Transcript& before, const Transcript& after) {
  return UnansweredCalls(after) <= UnansweredCalls(before);
}

// The whole pipeline, twice (the second request sees the first one's decisions): a context
// manager with `options` over an in-memory store parses `body` as `api` and applies it; the
// forwarded body must parse again as `Request`, when `valid_in` hold a valid transcript, and be
// the same bytes both times (every decision is repeated byte for byte).
template <typename Request>
void CheckPipelineTwice(const char* target, ModelApi api, const std::string& body,
                        const BranchLookup& lookup, bool valid_in,
                        const ContextManagerOptions& options = {}) {
  InMemoryConversationStore store;
  SevenScrubber scrubber;
  QuarterByteCounter counter;
  FakeBranchLedger ledger([&](const std::string&, const std::string& id) { return lookup(id); });
  ContextManager manager(options, store, scrubber, counter, &ledger);
  std::string first;
  for (int round = 0; round < 2; ++round) {
    auto fresh = manager.Parse(api, "local", "", body);
    FuzzCheck(fresh.ok(), target, "a body that parsed once does not parse again");
    auto applied = manager.Apply("local", "", *fresh, 1);
    FuzzCheck(applied.ok(), target, "Apply failed with an in-memory store");
    auto forwarded = Request::Parse(applied->body);
    FuzzCheck(forwarded.ok(), target, "the forwarded body does not parse");
    if (valid_in) {
      FuzzCheck(ValidateTranscript((*forwarded)->transcript()).ok(), target,
                "the forwarded transcript is not valid");
    }
    if (round == 0) first = applied->body;
    FuzzCheck(applied->body == first, target, "the same request was sent differently");
  }
}

}  // namespace contextd::model::testing
