// Render plans the model room's tests and fuzz targets build over any ModelRequest: for now the
// plan that rewrites every block to itself (rendering it must give the body back). For tests
// only (never linked into the server). Stateless; safe from any thread.
#pragma once

#include <cstddef>

#include "model/model_request.h"
#include "model/transcript.h"

namespace contextd::model::testing {

// A plan that rewrites every block of `request` to itself.
inline RenderPlan UnchangedBlocksPlan(const ModelRequest& request) {
  const Transcript& t = request.transcript();
  RenderPlan same;
  for (size_t m = 0; m < t.messages.size(); ++m) {
    for (size_t b = 0; b < t.messages[m].blocks.size(); ++b) {
      same.blocks[{m, b}] = request.RewriteBlock(m, b, {});
    }
  }
  return same;
}

}  // namespace contextd::model::testing
