#include "store/conversation_rows.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

// A varint of a 64-bit value takes at most 10 bytes.
constexpr int kMaxVarintBytes = 10;

bool IsRewriteKind(int64_t kind) {
  using model::RewriteKind;
  return kind == static_cast<int64_t>(RewriteKind::kBlock) ||
         kind == static_cast<int64_t>(RewriteKind::kAppend) ||
         kind == static_cast<int64_t>(RewriteKind::kFold) ||
         kind == static_cast<int64_t>(RewriteKind::kAutoFold) ||
         kind == static_cast<int64_t>(RewriteKind::kView) ||
         kind == static_cast<int64_t>(RewriteKind::kDropThinking) ||
         kind == static_cast<int64_t>(RewriteKind::kLessons);
}

}  // namespace

std::string EncodeFrontier(const std::vector<std::string>& hashes) {
  std::string out;
  for (const std::string& h : hashes) {
    uint64_t n = h.size();
    while (n >= 0x80) {
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out.push_back(static_cast<char>(n));
    out.append(h);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeFrontier(std::string_view blob) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < blob.size()) {
    const size_t start = pos;
    uint64_t len = 0;
    int shift = 0;
    bool done = false;
    for (int i = 0; i < kMaxVarintBytes && pos < blob.size(); ++i) {
      const auto byte = static_cast<uint8_t>(blob[pos++]);
      const uint64_t bits = byte & 0x7f;
      // The tenth byte may carry only the top bit of a 64-bit value.
      if (shift == 63 && bits > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("frontier entry ", out.size(), " at byte ", start, ": length overflows"));
      }
      len |= bits << shift;
      shift += 7;
      if ((byte & 0x80) == 0) {
        done = true;
        break;
      }
    }
    if (!done) {
      return absl::InvalidArgumentError(absl::StrCat("frontier entry ", out.size(), " at byte ",
                                                     start, ": truncated or over-long length"));
    }
    if (len > blob.size() - pos) {
      return absl::InvalidArgumentError(absl::StrCat("frontier entry ", out.size(), " at byte ",
                                                     start, ": length ", len, " exceeds the ",
                                                     blob.size() - pos, " bytes left"));
    }
    out.emplace_back(blob.substr(pos, static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
  }
  return out;
}

std::string ThreadName(const model::ConversationKey& key) {
  return absl::StrCat("model thread ", key.tenant, "/", key.conversation, "/", key.thread);
}

absl::Status AboutThread(const model::ConversationKey& key, const absl::Status& st) {
  if (st.ok()) return st;
  return absl::Status(st.code(), absl::StrCat(ThreadName(key), ": ", st.message()));
}

absl::StatusOr<model::ConversationState> ThreadFromRow(const Row& row,
                                                       const model::ConversationKey& key) {
  model::ConversationState state;
  absl::StatusOr<std::vector<std::string>> frontier = DecodeFrontier(row.Bytes(0));
  if (!frontier.ok()) {
    return absl::InternalError(
        absl::StrCat(ThreadName(key), ": corrupt frontier: ", frontier.status().message()));
  }
  state.frontier = *std::move(frontier);
  state.requests = row.Int(1);
  state.created_ms = row.Int(2);
  state.last_ms = row.Int(3);
  return state;
}

absl::StatusOr<model::Rewrite> RewriteFromRow(const Row& row, const model::ConversationKey& key) {
  const int64_t kind = row.Int(0);
  if (!IsRewriteKind(kind)) {
    return absl::InternalError(absl::StrCat(ThreadName(key), ": rewrite of unknown kind ", kind));
  }
  return model::Rewrite{static_cast<model::RewriteKind>(kind), row.Bytes(1), row.Bytes(2)};
}

model::UsageTotals UsageTotalsFromRow(const Row& row, int first) {
  model::UsageTotals t;
  t.requests = row.Int(first);
  t.input_tokens = row.Int(first + 1);
  t.cache_read_input_tokens = row.Int(first + 2);
  t.cache_creation_input_tokens = row.Int(first + 3);
  t.output_tokens = row.Int(first + 4);
  t.tokens_before = row.Int(first + 5);
  t.tokens_after = row.Int(first + 6);
  t.last_at_ms = row.Int(first + 7);
  return t;
}

ProjectUsage ProjectUsageFromRow(const Row& row) {
  ProjectUsage u;
  u.tenant = row.Text(0);
  u.project = row.Text(1);
  u.totals = UsageTotalsFromRow(row, 2);
  u.folds_new = row.Int(10);
  u.folds_skipped = row.Int(11);
  return u;
}

model::BranchViewUsage ViewUsageFromRow(const Row& row) {
  model::BranchViewUsage u;
  u.isolated_requests = row.Int(0);
  u.inherited_requests = row.Int(1);
  u.view_tokens_spared = row.Int(2);
  return u;
}

model::ConversationSummary ConversationSummaryFromRow(const Row& row) {
  model::ConversationSummary c;
  c.conversation = row.Text(0);
  c.project = row.Text(1);
  c.last_at_ms = row.Int(2);
  c.first_at_ms = row.Int(3);
  c.requests = row.Int(4);
  c.folds_new = row.Int(5);
  c.tokens_before = row.Int(6);
  c.tokens_after = row.Int(7);
  if (!row.IsNull(8)) MergeFoldsSkipped(row.Text(8), c.folds_skipped);
  c.isolated_requests = row.Int(9);
  c.view_tokens_spared = row.Int(10);
  return c;
}

}  // namespace contextd::store
