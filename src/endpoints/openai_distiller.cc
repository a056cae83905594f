#include "endpoints/openai_distiller.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/status_macros.h"
#include "base/str_cat.h"
#include "endpoints/openai_answers.h"

namespace contextd::endpoints {
namespace {

bool Mentions(const memory::Candidate& c, std::string_view id) {
  if (id.empty()) return false;
  auto has = [id](const std::string& text) { return text.find(id) != std::string::npos; };
  return has(c.title) || has(c.description) || has(c.content) ||
         std::any_of(c.tags.begin(), c.tags.end(), has);
}

}  // namespace

OpenAiDistiller::OpenAiDistiller(OpenAiEndpointOptions options, transport::HttpClient& client)
    : endpoint_(std::move(options), client, "/chat/completions", kMaxAnswerBytes) {}

absl::StatusOr<std::vector<memory::Candidate>> OpenAiDistiller::Distill(
    const memory::BranchTrace& trace) {
  const std::string request =
      ChatRequestBody(endpoint_.options().model, MakeDistillerPrompt(trace));
  ASSIGN_OR_RETURN(std::string answer, endpoint_.PostJson(request));
  auto fail = [this](const absl::Status& s) {
    return absl::InvalidArgumentError(base::StrCat(endpoint_.url(), ": ", s.message()));
  };
  absl::StatusOr<std::string> text = ParseChatAnswer(answer);
  if (!text.ok()) return fail(text.status());
  absl::StatusOr<std::vector<memory::Candidate>> candidates = ParseMemoriesAnswer(
      *text, trace.succeeded ? memory::Outcome::kSuccess : memory::Outcome::kFailure);
  if (!candidates.ok()) return fail(candidates.status());
  std::erase_if(*candidates, [&](const memory::Candidate& c) {
    return Mentions(c, trace.branch_id) || Mentions(c, trace.session_id);
  });
  if (candidates->empty()) {
    return absl::InvalidArgumentError(base::StrCat(
        endpoint_.url(), ": every memory in the model's reply quotes the branch or session id"));
  }
  return candidates;
}

std::string OpenAiDistiller::name() const {
  return base::StrCat("model ", endpoint_.options().model);
}

}  // namespace contextd::endpoints
