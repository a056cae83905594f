#include "model/internal/openai_wire_array.h"

namespace contextd::model::internal {

std::string RewriteWireBlock(std::string_view body, const RawNode& node,
                             const std::vector<std::pair<TextSpan, std::string>>& replacements) {
  std::vector<SpanEdit> edits;
  for (const auto& [span, text] : replacements) edits.push_back({span.begin, span.end, text});
  return Splice(body, node.begin, node.end, std::move(edits));
}

std::string_view WireSeparator(std::string_view body, const RawNode& array, size_t wire) {
  const std::vector<RawNode>& wires = array.children;
  if (wire == 0) return body.substr(array.begin + 1, wires[0].begin - array.begin - 1);
  return body.substr(wires[wire - 1].end, wires[wire].begin - wires[wire - 1].end);
}

namespace {

// Whether wire item `wire` of message `m` is a block the plan does not send (a reasoning item).
bool Dropped(const WireMessageRef& ref, size_t m, size_t wire, const RenderPlan& plan) {
  if (plan.dropped.empty()) return false;
  for (size_t b = 0; b < ref.blocks.size(); ++b) {
    if (ref.blocks[b].wire == wire && plan.dropped.count({m, b})) return true;
  }
  return false;
}

}  // namespace

void RenderWireItem(std::string_view body, const RawNode& array, const WireMessageRef& ref,
                    size_t m, size_t wire, const RenderPlan& plan, std::string& out) {
  const RawNode& node = array.children[wire];
  std::vector<SpanEdit> edits;
  const std::vector<WireBlockRef>& blocks = ref.blocks;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].wire != wire) continue;
    auto it = plan.blocks.find({m, b});
    if (it != plan.blocks.end()) {
      edits.push_back({blocks[b].node->begin, blocks[b].node->end, it->second});
    }
  }
  if (edits.empty()) {
    out.append(node.Text(body));
    return;
  }
  out.append(Splice(body, node.begin, node.end, std::move(edits)));
}

void RenderKeptSpanItems(std::string_view body, const RawNode& array,
                         const std::vector<WireMessageRef>& refs, const FoldEdit& edit,
                         const RenderPlan& plan, std::string& out) {
  size_t last_wire = array.children.size();
  for (const auto& [m, b] : edit.kept_blocks) {
    if (m == edit.end_message) continue;
    const size_t wire = refs[m].blocks[b].wire;
    if (wire == last_wire) continue;
    last_wire = wire;
    out.push_back(',');
    RenderWireItem(body, array, refs[m], m, wire, plan, out);
  }
}

std::string RenderWireArray(std::string_view body, const RawNode& array, size_t preamble,
                            const std::vector<WireMessageRef>& refs, const RenderPlan& plan,
                            const WireRenderHooks& hooks) {
  const std::vector<RawNode>& wires = array.children;
  std::string out;
  out.reserve(body.size());
  out.append(body.substr(0, array.begin + 1));  // up to and including '['
  for (size_t wire = 0; wire < preamble; ++wire) {
    out.append(WireSeparator(body, array, wire));
    out.append(wires[wire].Text(body));
  }
  size_t fold = 0;
  for (size_t m = 0; m < refs.size(); ++m) {
    if (plan.view && m == plan.view->keep) {
      if (preamble > 0 || m > 0) {
        out.push_back(',');
      } else {
        out.append(WireSeparator(body, array, 0));
      }
      hooks.opening(*plan.view, out);
      fold = plan.FoldAfterView(fold);
      m = plan.view->resume - 1;
      continue;
    }
    for (size_t wire = refs[m].first_wire; wire < refs[m].end_wire; ++wire) {
      if (Dropped(refs[m], m, wire, plan)) continue;  // with its separator: never the first item
      out.append(WireSeparator(body, array, wire));
      RenderWireItem(body, array, refs[m], m, wire, plan, out);
    }
    hooks.append(m, out);
    if (fold < plan.folds.size() && plan.folds[fold].create_message == m) {
      hooks.fold(plan.folds[fold], out);
      m = plan.folds[fold].end_message;
      ++fold;
    }
  }
  // From the end of the last item: blanks, ']' and the rest of the body.
  out.append(body.substr(wires.back().end));
  return out;
}

}  // namespace contextd::model::internal
