// Private to the model room: what the Chat Completions and Responses adapters share. Both keep a
// request's conversation as a JSON array of "wire" items (`messages` / `input`), index each
// transcript message as a run of items, and render a plan by copying the items with their block
// edits, appends and folds spliced in. Stateless functions; thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/model_request.h"
#include "model/raw_json.h"
#include "model/transcript.h"

namespace contextd::model::internal {

// Where a transcript block is in the body.
struct WireBlockRef {
  const RawNode* node = nullptr;  // what the block is in the body (see RewriteBlock)
  size_t wire = 0;                // index of the array item holding it
  std::vector<TextSpan> texts;
};

// The array items a transcript message stands for, and its blocks.
struct WireMessageRef {
  size_t first_wire = 0;  // the items [first_wire, end_wire) it stands for
  size_t end_wire = 0;
  std::vector<WireBlockRef> blocks;
};

// The bytes of `node` (a block's node in `body`) with `replacements` applied.
std::string RewriteWireBlock(std::string_view body, const RawNode& node,
                             const std::vector<std::pair<TextSpan, std::string>>& replacements);

// The bytes between items wire-1 and wire of `array` as sent (for 0: after the array's '[').
std::string_view WireSeparator(std::string_view body, const RawNode& array, size_t wire);

// Appends item `wire` of `array` (one of message `m`, whose blocks are `ref`) with the plan's
// block replacements applied.
void RenderWireItem(std::string_view body, const RawNode& array, const WireMessageRef& ref,
                    size_t m, size_t wire, const RenderPlan& plan, std::string& out);

// Appends, each after a ',', the items of the span of `edit` that hold its kept blocks
// (FoldEdit::kept_blocks) before its end message, each item once, in order: what a person typed
// inside a folded branch, what the client attached to the create's answer.
void RenderKeptSpanItems(std::string_view body, const RawNode& array,
                         const std::vector<WireMessageRef>& refs, const FoldEdit& edit,
                         const RenderPlan& plan, std::string& out);

// What an adapter renders in its own shape: after message m, its appends; in place of a fold's
// span, the fold (from its create message on).
struct WireRenderHooks {
  std::function<void(size_t m, std::string& out)> append;
  std::function<void(const FoldEdit& edit, std::string& out)> fold;
  // The user item that opens a branch view (RenderPlan::view), without a separator.
  std::function<void(const ViewEdit& view, std::string& out)> opening;
};

// `body` with `plan` applied to the non-empty array `array`: its first `preamble` items as sent,
// then each message's items (see RenderWireItem), its appends and, at a fold's create message,
// the fold in place of the messages it spans; at a view's first hidden message, the view's opening
// item in place of the hidden ones; the rest of the body as sent.
std::string RenderWireArray(std::string_view body, const RawNode& array, size_t preamble,
                            const std::vector<WireMessageRef>& refs, const RenderPlan& plan,
                            const WireRenderHooks& hooks);

}  // namespace contextd::model::internal
