#include "folding/text.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "folding/internal/sv.h"

namespace contextd::folding {
namespace {

std::string ActiveName(std::string_view id) {
  return id.empty() ? std::string("the session root") : std::string(id);
}

void AppendView(const BranchView& v, int indent, std::string* out) {
  absl::StrAppend(out, std::string(static_cast<size_t>(indent) * 2, ' '), "- ", v.branch_id, " [",
                  BranchStatusName(v.status), "] depth ", v.depth, " \"", v.description, "\" ",
                  v.tokens_used, "/", v.budget_allocated, " tokens");
  if (v.reserved_for_children > 0) {
    absl::StrAppend(out, " (", v.reserved_for_children, " reserved for children)");
  }
  if (v.time_left_ms.has_value()) {
    absl::StrAppend(out, ", ", (*v.time_left_ms + 999) / 1000, " s left");
  } else if (!v.finish_reason.empty()) {
    absl::StrAppend(out, ", ", v.finish_reason);
  }
  absl::StrAppend(out, "\n");
  for (const BranchView& c : v.children) AppendView(c, indent + 1, out);
}

}  // namespace

std::string WarningText(std::string_view branch_id, int64_t used, int64_t allocated) {
  int64_t pct = allocated > 0 ? used * 100 / allocated : 100;
  return absl::StrCat("budget ", pct, "% used: ", used, "/", allocated, " tokens in ",
                      internal::Sv(branch_id), " (", std::max<int64_t>(allocated - used, 0),
                      " left); finish the task and call branch_return with a summary");
}

std::string ExhaustedText(const ChargeOutcome& o) {
  std::string out =
      absl::StrCat("budget exhausted: ", o.used, "/", o.allocated, " tokens; branch ", o.branch_id,
                   " was returned with partial results; active branch is now ",
                   ActiveName(o.active_branch_after));
  if (!o.partial_summary.empty()) absl::StrAppend(&out, "\n\n", o.partial_summary);
  return out;
}

std::string ForceReturnedText(std::string_view branch_id, std::string_view reason,
                              std::string_view summary) {
  std::string out = absl::StrCat("branch ", internal::Sv(branch_id), " was force-returned (",
                                 internal::Sv(reason), ") with partial results");
  if (!summary.empty()) absl::StrAppend(&out, "; its summary: ", internal::Sv(summary));
  return out;
}

std::string CreateText(const CreateResult& r) {
  std::string out =
      absl::StrCat("Created branch ", r.branch_id, " at depth ", r.depth, " under ",
                   ActiveName(r.parent_branch_id), " (deepest allowed: ", r.max_depth - 1,
                   ").\nbudget_allocated: ", r.budget_allocated,
                   " tokens (prompt charged: ", r.prompt_tokens, ")\nparent_budget_remaining: ",
                   r.parent_budget_remaining.has_value() ? absl::StrCat(*r.parent_budget_remaining)
                                                         : std::string("unlimited (session root)"),
                   "\ndeadline: ", FormatWallMillis(r.deadline_wall_ms), " (", r.timeout_seconds,
                   " s)\ninjected_context: ");
  if (r.injected_context.empty()) {
    absl::StrAppend(&out, "none");
  } else {
    absl::StrAppend(&out, r.injected_context.size(), " ",
                    r.injected_context.size() == 1 ? "memory" : "memories", " (", r.injected_tokens,
                    " tokens, charged); [worked] = a way that worked, [avoid] = a way that failed; "
                    "rate them with memory_feedback");
    for (const InjectedContext& c : r.injected_context) {
      absl::StrAppend(&out, "\n- ", c.kind, " ", c.ref, " (", c.tokens, " tokens): ", c.text);
    }
  }
  absl::StrAppend(&out, "\n", internal::Sv(kCreateInstructions));
  return out;
}

std::string ReturnText(const ReturnResult& r) {
  std::string out = absl::StrCat("Returned branch ", r.branch_id, ".\nsummary: ", r.summary,
                                 "\ntokens_used: ", r.tokens_used, "/", r.budget_allocated,
                                 "\ntokens_folded: ", r.tokens_folded,
                                 "\nactive branch now: ", ActiveName(r.parent_branch_id),
                                 "\nmemory_queued: ", r.memory_queued ? "true" : "false");
  if (!r.force_returned_children.empty()) {
    absl::StrAppend(&out, "\nforce-returned children first: ");
    for (size_t i = 0; i < r.force_returned_children.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", r.force_returned_children[i]);
    }
  }
  return out;
}

std::string StatusText(const StatusResult& r) {
  std::string out = absl::StrCat("active branch: ", ActiveName(r.active_branch_id), " (",
                                 r.active_count, " active)\n");
  if (r.branches.empty()) {
    absl::StrAppend(&out, "no branches in this session\n");
    return out;
  }
  for (const BranchView& v : r.branches) AppendView(v, 0, &out);
  return out;
}

std::string FormatWallMillis(int64_t wall_ms) {
  // Calendar arithmetic rather than gmtime_r and StrFormat, which took a lock and 2% of the engine
  // executor's instructions per branch round trip (two deadlines per branch_create).
  using namespace std::chrono;
  const sys_time<milliseconds> t{milliseconds(wall_ms)};
  const sys_days day = floor<days>(t);
  const year_month_day ymd(day);
  const hh_mm_ss<milliseconds> hms(t - day);
  const int y = static_cast<int>(ymd.year());
  if (y < 0 || y > 9999) {
    return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y,
                           static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                           hms.hours().count(), hms.minutes().count(), hms.seconds().count(),
                           static_cast<int>(hms.subseconds().count()));
  }
  char buf[] = "0000-00-00T00:00:00.000Z";
  auto put = [&buf](int pos, int width, int64_t v) {
    for (int i = pos + width - 1; i >= pos; --i, v /= 10) buf[i] = static_cast<char>('0' + v % 10);
  };
  put(0, 4, y);
  put(5, 2, static_cast<unsigned>(ymd.month()));
  put(8, 2, static_cast<unsigned>(ymd.day()));
  put(11, 2, hms.hours().count());
  put(14, 2, hms.minutes().count());
  put(17, 2, hms.seconds().count());
  put(20, 3, hms.subseconds().count());
  return std::string(buf, sizeof(buf) - 1);
}

}  // namespace contextd::folding
