#include "tools/folding_tools.h"

#include <any>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "folding/text.h"
#include "protocol/contextd_tools.h"
#include "protocol/mcp_constants.h"
#include "protocol/tool_notices.h"
#include "tools/internal/tool_args.h"
#include "tools/memory_tools.h"

namespace contextd::tools {
namespace {

using internal::OptBool;
using internal::OptInt;
using internal::OptString;

using protocol::Json;
using protocol::ToolCall;
using protocol::ToolResult;

// What branch_create's ToolPrepare made of its texts, on the thread that received the call.
struct PreparedCreate {
  folding::PreparedText description;
  folding::PreparedText prompt;
  MemoryRetrieval memories;  // what the bank found for the task (no candidates without memory)
};

std::string SessionMapKey(const folding::SessionKey& key) { return key.ToString(); }

Json CreateSchema(const folding::FoldingConfig& config) {
  return Json{
      {"type", "object"},
      {"properties",
       {{"description",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", folding::kMaxDescriptionChars},
          {"description", "The subtask, in a line"}}},
        {"prompt",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", folding::kMaxPromptChars},
          {"description",
           "What the branch is to do, with what it needs to know: the branch sees the "
           "conversation's opening and this prompt, not the work done since (name the files, "
           "identifiers and findings it needs)"}}},
        {"budget",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", config.max_budget},
          {"description", "Token budget (default " + std::to_string(config.default_budget) + ")"}}},
        {"timeout_seconds",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", config.max_timeout_seconds},
          {"description", "Deadline in seconds (default " +
                              std::to_string(config.default_timeout_seconds) + ")"}}},
        {"inject_memories",
         {{"type", "boolean"}, {"default", true}, {"description", "Inject relevant memories"}}},
        {"parent_branch_id",
         {{"type", "string"}, {"description", "Default: the innermost active branch"}}}}},
      {"required", {"description", "prompt"}},
      {"additionalProperties", false}};
}

Json ReturnSchema() {
  return Json{{"type", "object"},
              {"properties",
               {{"branch_id",
                 {{"type", "string"}, {"description", "Default: the innermost active branch"}}},
                {"message",
                 {{"type", "string"},
                  {"maxLength", folding::kMaxReturnMessageChars},
                  {"description", "The summary: all your context keeps of the branch"}}},
                {"extract_memory",
                 {{"type", "boolean"},
                  {"default", false},
                  {"description", "Distil the branch into a memory"}}}}},
              {"required", {"message"}},
              {"additionalProperties", false}};
}

Json StatusSchema() {
  return Json{{"type", "object"},
              {"properties",
               {{"branch_id",
                 {{"type", "string"},
                  {"description", "One branch with its subtree (default: the whole tree)"}}}}},
              {"additionalProperties", false}};
}

Json ViewToJson(const folding::BranchView& v) {
  Json children = Json::array();
  for (const auto& c : v.children) children.push_back(ViewToJson(c));
  Json out{
      {"branch_id", v.branch_id},
      {"parent_branch_id", v.parent_branch_id.empty() ? Json(nullptr) : Json(v.parent_branch_id)},
      {"depth", v.depth},
      {"description", v.description},
      {"status", std::string(folding::BranchStatusName(v.status))},
      {"tokens_used", v.tokens_used},
      {"budget_allocated", v.budget_allocated},
      {"reserved_for_children", v.reserved_for_children},
      {"deadline", folding::FormatWallMillis(v.deadline_wall_ms)},
      {"children", std::move(children)}};
  if (v.time_left_ms) out["time_left_seconds"] = *v.time_left_ms / 1000.0;
  if (!v.finish_reason.empty()) out["finish_reason"] = v.finish_reason;
  if (!v.summary.empty()) out["summary"] = v.summary;
  return out;
}

// The folding tools are what contextd is for: a client that defers tools behind a search (Claude
// Code) would make the model spend a turn, a whole prefix read, to load them before its first
// branch. Their schemas cost a few hundred tokens of cached prefix instead (decision 0014).
Json AlwaysLoad() {
  Json meta = Json::object();
  meta[std::string(protocol::wire::kAnthropicAlwaysLoad)] = true;
  return meta;
}

// Measures the time spent inside contextd for one tool call.
class CallTimer {
 public:
  CallTimer(ToolMetrics& metrics, std::string tool)
      : metrics_(metrics), tool_(std::move(tool)), start_(std::chrono::steady_clock::now()) {}
  ~CallTimer() {
    metrics_.ToolCallLatency(
        tool_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  ToolMetrics& metrics_;
  std::string tool_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

FoldingTools::FoldingTools(folding::BranchManager& manager, folding::EventBus& events,
                           ToolMetrics& metrics, const scrub::Scrubber& scrubber)
    : manager_(manager), events_(events), metrics_(metrics), scrubber_(scrubber) {
  subscription_ = events_.Subscribe([this](const folding::BranchEvent& e) { OnEvent(e); });
}

FoldingTools::~FoldingTools() { events_.Unsubscribe(subscription_); }

void FoldingTools::OnEvent(const folding::BranchEvent& event) {
  switch (event.type) {
    case folding::BranchEventType::kCreated:
      metrics_.BranchCreated();
      break;
    case folding::BranchEventType::kWarning:
      pending_warnings_[SessionMapKey(event.session)].push_back(
          folding::WarningText(event.branch_id, event.tokens_used, event.budget_allocated));
      break;
    case folding::BranchEventType::kForceReturned:
      // A deadline fires between calls: nothing else tells the model that its branch is gone.
      if (event.status == folding::BranchStatus::kTimeout) {
        pending_warnings_[SessionMapKey(event.session)].push_back(folding::ForceReturnedText(
            event.branch_id, event.reason, event.branch ? event.branch->summary : ""));
      }
      [[fallthrough]];
    case folding::BranchEventType::kFolded:
      metrics_.BranchFinished(folding::BranchStatusName(event.status),
                              static_cast<double>(event.tokens_used),
                              static_cast<double>(event.budget_allocated));
      break;
    case folding::BranchEventType::kCharged:
      metrics_.TokensCharged(static_cast<double>(event.tokens));
      break;
  }
}

void FoldingTools::FinishWithError(ToolCall& call, const absl::Status& status) {
  ToolResult error = protocol::ErrorResult(scrubber_.Scrub(std::string(status.message())));
  DeliverWarnings(call, error, protocol::kNoticesMember);
  call.Finish(std::move(error));
}

void FoldingTools::ForgetSession(const protocol::SessionInfo& info) {
  pending_warnings_.erase(SessionMapKey(SessionKeyFor(info)));
}

void FoldingTools::DeliverWarnings(ToolCall& call, ToolResult& result,
                                   std::string_view structured_key) {
  auto it = pending_warnings_.find(SessionMapKey(SessionKeyFor(call.session())));
  if (it == pending_warnings_.end()) return;
  for (const std::string& warning : it->second) {
    protocol::AppendNotice(result, warning, structured_key);
    call.Log(protocol::LoggingLevel::kWarning, "contextd.budget", Json(warning));
  }
  pending_warnings_.erase(it);
}

absl::Status FoldingTools::Register(protocol::McpServer& server) {
  const folding::FoldingConfig& config = manager_.config();
  absl::Status s = server.AddTool(
      protocol::ToolDefinition{
          std::string(protocol::kBranchCreateTool), "Create a branch",
          std::string(protocol::kBranchCreateDescriptionOpening) +
              std::string(
                  " (exploring, searching, debugging), with its own token budget and "
                  "deadline. Call it in the same turn as the subtask's first tool call. Then "
                  "call branch_return with a short summary: the branch's work is folded away "
                  "and only the summary stays in your context."),
          CreateSchema(config), nullptr, Json{{"readOnlyHint", false}}, AlwaysLoad()},
      [this](std::shared_ptr<ToolCall> call) {
        if (before_call_) before_call_(call->session());
        Create(call);
      },
      [this](const Json& args, const protocol::SessionInfo& session) -> std::any {
        PreparedCreate prepared{manager_.PrepareText(OptString(args, "description").value_or("")),
                                manager_.PrepareText(OptString(args, "prompt").value_or("")),
                                {}};
        // Retrieval reads the memory database here, on the receiving thread, not the executor.
        if (memory_ != nullptr && OptBool(args, "inject_memories", true)) {
          prepared.memories =
              memory_->Retrieve(session, prepared.description.text(), prepared.prompt.text());
        }
        return prepared;
      });
  if (!s.ok()) return s;
  s = server.AddTool(
      protocol::ToolDefinition{
          "branch_return", "Return from a branch",
          "Finish the active branch (or branch_id) and fold it away. The message is all your "
          "context keeps of it: the answer, key facts, paths, next steps; write it as your next "
          "thought, not to repeat afterwards. Active child branches are returned first.",
          ReturnSchema(), nullptr, Json{{"readOnlyHint", false}}, AlwaysLoad()},
      [this](std::shared_ptr<ToolCall> call) {
        if (before_call_) before_call_(call->session());
        Return(call);
      },
      [this](const Json& args, const protocol::SessionInfo&) -> std::any {
        return manager_.PrepareText(OptString(args, "message").value_or(""));
      });
  if (!s.ok()) return s;
  return server.AddTool(
      protocol::ToolDefinition{
          "branch_status", "Branch status",
          "Show one branch, or this session's whole branch tree: status, depth, description, "
          "budget used/total and time left.",
          StatusSchema(), nullptr, Json{{"readOnlyHint", true}}, AlwaysLoad()},
      [this](std::shared_ptr<ToolCall> call) {
        if (before_call_) before_call_(call->session());
        Status(call);
      });
}

void FoldingTools::SetBeforeCall(std::function<void(const protocol::SessionInfo&)> hook) {
  before_call_ = std::move(hook);
}

void FoldingTools::Create(const std::shared_ptr<ToolCall>& call) {
  CallTimer timer(metrics_, call->tool_name());
  const Json& args = call->arguments();
  folding::CreateRequest req;
  req.description = OptString(args, "description").value_or("");
  req.prompt = OptString(args, "prompt").value_or("");
  req.budget = OptInt(args, "budget");
  req.timeout_seconds = OptInt(args, "timeout_seconds");
  req.inject_memories = OptBool(args, "inject_memories", true);
  req.parent_branch_id = OptString(args, "parent_branch_id");
  std::string memory_warning;
  if (const auto* prepared = std::any_cast<PreparedCreate>(&call->prepared())) {
    req.prepared_description = &prepared->description;
    req.prepared_prompt = &prepared->prompt;
    req.memory_candidates = prepared->memories.candidates;
    memory_warning = prepared->memories.warning;
  }
  auto created = manager_.Create(SessionKeyFor(call->session()), req);
  if (!created.ok()) {
    FinishWithError(*call, created.status());
    return;
  }
  const folding::CreateResult& r = *created;
  if (memory_ != nullptr) memory_->NoteInjected(call->session(), r);
  Json injected = Json::array();
  // Claude Code shows the model this structured result, not the text (decision 0014): each
  // memory once, without the text that repeats its title and content.
  for (const auto& item : r.injected_context) {
    Json j = Json::object();
    j["id"] = item.ref;
    j["outcome"] = item.outcome;
    j["title"] = item.title;
    j["content"] = item.content;
    j["tokens"] = item.tokens;
    injected.push_back(std::move(j));
  }
  ToolResult result = protocol::TextResult(folding::CreateText(r));
  // Member by member: nlohmann's initializer-list constructor builds a two-element array per
  // member first and copies each (about 3% of the executor's time per round trip).
  Json& out = result.structured_content = Json::object();
  out["branch_id"] = r.branch_id;
  out["parent_branch_id"] = r.parent_branch_id.empty() ? Json(nullptr) : Json(r.parent_branch_id);
  out["depth"] = r.depth;
  out["max_depth"] = r.max_depth;
  out["budget_allocated"] = r.budget_allocated;
  out["parent_budget_remaining"] =
      r.parent_budget_remaining ? Json(*r.parent_budget_remaining) : Json(nullptr);
  out["deadline"] = folding::FormatWallMillis(r.deadline_wall_ms);
  out["timeout_seconds"] = r.timeout_seconds;
  out["prompt_tokens"] = r.prompt_tokens;
  out["injected_context"] = std::move(injected);
  out["injected_tokens"] = r.injected_tokens;
  out["instructions"] = folding::kCreateInstructions;
  if (!memory_warning.empty())
    protocol::AppendNotice(result, memory_warning, protocol::kNoticesMember);
  DeliverWarnings(*call, result, protocol::kNoticesMember);
  call->Finish(std::move(result));
}

void FoldingTools::Return(const std::shared_ptr<ToolCall>& call) {
  CallTimer timer(metrics_, call->tool_name());
  const Json& args = call->arguments();
  folding::ReturnRequest req;
  req.branch_id = OptString(args, "branch_id");
  req.message = OptString(args, "message").value_or("");
  // Without a bank nothing is distilled, whatever the agent asks.
  req.extract_memory =
      memory_ != nullptr && OptBool(args, "extract_memory", memory_->extract_by_default());
  if (const auto* prepared = std::any_cast<folding::PreparedText>(&call->prepared())) {
    req.prepared_message = prepared;
  }
  auto returned = manager_.Return(SessionKeyFor(call->session()), req);
  if (!returned.ok()) {
    FinishWithError(*call, returned.status());
    return;
  }
  const folding::ReturnResult& r = *returned;
  ToolResult result = protocol::TextResult(folding::ReturnText(r));
  Json& out = result.structured_content = Json::object();  // member by member, as in Create
  out["branch_id"] = r.branch_id;
  out["summary"] = r.summary;
  out["summary_tokens"] = r.summary_tokens;
  out["tokens_used"] = r.tokens_used;
  out["tokens_folded"] = r.tokens_folded;
  out["budget_allocated"] = r.budget_allocated;
  out["active_branch_id"] =
      r.active_branch_after.empty() ? Json(nullptr) : Json(r.active_branch_after);
  out["force_returned_children"] = r.force_returned_children;
  out["memory_queued"] = r.memory_queued;
  // A warning for the parent (r.parent_warning) was published as an event and arrives below with
  // the session's other notices, once, in the text and in the structured result.
  DeliverWarnings(*call, result, protocol::kNoticesMember);
  call->Finish(std::move(result));
}

void FoldingTools::Status(const std::shared_ptr<ToolCall>& call) {
  CallTimer timer(metrics_, call->tool_name());
  std::string id = OptString(call->arguments(), "branch_id").value_or("");
  auto status = manager_.Status(SessionKeyFor(call->session()), id);
  if (!status.ok()) {
    FinishWithError(*call, status.status());
    return;
  }
  Json branches = Json::array();
  for (const auto& v : status->branches) branches.push_back(ViewToJson(v));
  std::string text = folding::StatusText(*status);
  if (branch_views_) {
    const std::string tenant = SessionKeyFor(call->session()).tenant;
    // Each branch (children included) with what the model gateway sent while it was open.
    std::function<void(Json&)> annotate = [&](Json& branch) {
      const std::string branch_id = branch.value("branch_id", "");
      if (std::optional<BranchViews> views = branch_views_(tenant, branch_id)) {
        branch["model_views"] = Json{{"isolated_requests", views->isolated_requests},
                                     {"inherited_requests", views->inherited_requests},
                                     {"tokens_spared", views->tokens_spared}};
        if (views->isolated_requests + views->inherited_requests > 0) {
          absl::StrAppend(&text, "\n", branch_id, " at the model: ", views->isolated_requests,
                          " request(s) in the isolated view (", views->tokens_spared,
                          " tokens spared), ", views->inherited_requests, " inherited");
        }
      }
      if (auto children = branch.find("children"); children != branch.end()) {
        for (Json& child : *children) annotate(child);
      }
    };
    for (Json& branch : branches) annotate(branch);
  }
  ToolResult result = protocol::TextResult(text);
  result.structured_content =
      Json{{"branches", std::move(branches)},
           {"active_branch_id",
            status->active_branch_id.empty() ? Json(nullptr) : Json(status->active_branch_id)},
           {"active_count", status->active_count}};
  DeliverWarnings(*call, result, protocol::kNoticesMember);
  call->Finish(std::move(result));
}

}  // namespace contextd::tools
