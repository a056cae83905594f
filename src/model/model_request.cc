#include "model/model_request.h"

namespace contextd::model {

Transcript ModelRequest::RenderedTranscript(const RenderPlan& plan) const {
  const Transcript& in = transcript();
  Transcript out;
  size_t fold = 0;
  for (size_t m = 0; m < in.messages.size(); ++m) {
    if (plan.view && m == plan.view->keep && plan.view->resume > m) {
      Message opening;
      opening.role = Role::kUser;
      Block text;
      text.kind = BlockKind::kText;
      text.text = plan.view->opening;
      opening.blocks.push_back(std::move(text));
      out.messages.push_back(std::move(opening));
      fold = plan.FoldAfterView(fold);
      m = plan.view->resume - 1;
      continue;
    }
    out.messages.push_back(in.messages[m]);
    for (size_t b = in.messages[m].blocks.size(); b-- > 0;) {
      if (plan.dropped.count({m, b})) {
        out.messages.back().blocks.erase(out.messages.back().blocks.begin() +
                                         static_cast<std::ptrdiff_t>(b));
      }
    }
    if (plan.appends.count(m)) {
      Block appended;
      appended.kind = BlockKind::kText;
      out.messages.back().blocks.push_back(appended);
    }
    if (fold < plan.folds.size() && plan.folds[fold].create_message == m) {
      const FoldEdit& edit = plan.folds[fold];
      Message folded;
      folded.role = Role::kUser;
      Block result;
      result.kind = BlockKind::kToolResult;
      result.call_id = edit.create_call_id;
      result.text = edit.result_text;
      folded.blocks.push_back(result);
      for (const std::string& id : edit.stub_call_ids) {
        result.call_id = id;
        result.text = StubResultText(edit.branch_id);
        folded.blocks.push_back(result);
      }
      for (const auto& [km, kb] : edit.kept_blocks) {
        folded.blocks.push_back(in.messages[km].blocks[kb]);
      }
      out.messages.push_back(std::move(folded));
      m = edit.end_message;
      ++fold;
    }
  }
  return out;
}

}  // namespace contextd::model
