#include "tools/trail_tools.h"

#include <optional>

#include "base/foreign_text.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "folding/text.h"
#include "tools/folding_tools.h"
#include "tools/internal/tool_args.h"
#include "tools/session_key.h"

namespace contextd::tools {
namespace {

using internal::IntArg;
using internal::StringArg;

using protocol::Json;
using protocol::ToolCall;
using protocol::ToolResult;

constexpr int64_t kDefaultSearchLimit = 10;
constexpr int64_t kMaxSearchLimit = 50;
constexpr int64_t kResourceEventLimit = 200;

Json ScopeToJson(const trail::Scope& s) {
  Json out{{"scope_id", s.id},
           {"kind", trail::ScopeKindName(s.kind)},
           {"parent_scope_id", s.parent_id.empty() ? Json(nullptr) : Json(s.parent_id)},
           {"session_id", s.session.session_id},
           {"description", s.description},
           {"status", trail::ScopeStatusName(s.status)},
           {"created_at_ms", s.created_at_ms},
           {"event_count", s.event_count},
           {"event_tokens", s.event_tokens}};
  if (s.status == trail::ScopeStatus::kFolded) {
    out["summary"] = s.summary;
    out["summary_tokens"] = s.summary_tokens;
    out["folded_at_ms"] = s.folded_at_ms;
  }
  return out;
}

Json EventToJson(const trail::Event& e) {
  return Json{
      {"seq", e.seq},       {"scope_id", e.scope_id}, {"kind", trail::EventKindName(e.kind)},
      {"label", e.label},   {"payload", e.payload},   {"sha256", e.payload_hash},
      {"tokens", e.tokens}, {"is_error", e.is_error}, {"at_ms", e.at_ms}};
}

std::string EventText(const trail::Event& e) {
  std::string head = base::StrCat("#", e.seq, " ", trail::EventKindName(e.kind));
  if (!e.label.empty()) head += base::StrCat(" ", e.label);
  if (e.is_error) head += " [error]";
  return base::StrCat(head, " (", e.tokens, " tokens)\n", e.payload, "\n");
}

void FinishError(const std::shared_ptr<ToolCall>& call, const absl::Status& status) {
  call->Finish(protocol::ErrorResult(std::string(status.message())));
}

}  // namespace

trail::SessionRef TrailSessionFor(const folding::SessionKey& key) {
  trail::SessionRef s;
  s.tenant = key.tenant;
  s.project = key.project;
  s.session_id = key.session_id;
  return s;
}

trail::SessionRef TrailSessionFor(const protocol::SessionInfo& info) {
  return TrailSessionFor(SessionKeyFor(info));
}

TrailTools::TrailTools(trail::Trail& trail, folding::EventBus& events,
                       folding::BranchStore& branches, const tokens::TokenCounter& counter)
    : trail_(trail), events_(events), branches_(branches), counter_(counter) {
  subscription_ = events_.Subscribe([this](const folding::BranchEvent& e) { OnEvent(e); });
}

TrailTools::~TrailTools() { events_.Unsubscribe(subscription_); }

absl::StatusOr<const folding::Branch*> TrailTools::EventBranch(
    const folding::BranchEvent& event, std::optional<folding::Branch>& storage) {
  // The BranchManager attaches the committed branch; the store has it too (events are published
  // after the commit), for a publisher that does not.
  if (event.branch != nullptr) return event.branch;
  auto branch = branches_.Get(event.branch_id);
  if (!branch.ok()) return branch.status();
  if (!branch->has_value()) return absl::NotFoundError("branch not in store");
  storage = std::move(**branch);
  return &*storage;
}

void TrailTools::OnEvent(const folding::BranchEvent& event) {
  absl::Status status;
  switch (event.type) {
    case folding::BranchEventType::kCreated: {
      std::optional<folding::Branch> stored;
      auto b = EventBranch(event, stored);
      if (!b.ok()) {
        status = b.status();
        break;
      }
      int64_t prompt_tokens =
          stored ? static_cast<int64_t>(counter_.Count((*b)->prompt)) : event.text_tokens;
      // What the branch received besides its prompt (memories) is part of the audit record.
      std::string received = (*b)->prompt;
      if (!(*b)->injected_context.empty()) {
        received += "\n\n[injected context]";
        for (const folding::InjectedContext& c : (*b)->injected_context) {
          received +=
              base::StrCat("\n- ", c.kind, " ", c.ref, " (", c.tokens, " tokens): ", c.text);
          prompt_tokens += c.tokens;
        }
      }
      status = trail_.OnBranchCreated(TrailSessionFor(event.session), (*b)->id, (*b)->parent_id,
                                      (*b)->description, received, prompt_tokens);
      break;
    }
    case folding::BranchEventType::kWarning:
      status = trail_.OnBranchWarning(
          event.branch_id,
          folding::WarningText(event.branch_id, event.tokens_used, event.budget_allocated));
      break;
    case folding::BranchEventType::kFolded:
    case folding::BranchEventType::kForceReturned: {
      std::optional<folding::Branch> stored;
      auto b = EventBranch(event, stored);
      if (!b.ok()) {
        status = b.status();
        break;
      }
      const int64_t summary_tokens =
          stored ? static_cast<int64_t>(counter_.Count((*b)->summary)) : event.text_tokens;
      status = trail_.OnBranchFolded(event.branch_id, (*b)->summary, summary_tokens,
                                     event.type == folding::BranchEventType::kForceReturned,
                                     event.reason.empty() ? (*b)->finish_reason : event.reason);
      break;
    }
    case folding::BranchEventType::kCharged:
      break;
  }
  if (!status.ok()) {
    base::LogWarn(base::StrCat("trail: ", folding::BranchEventName(event.type), " ",
                               event.branch_id, ": ", status.message()));
  }
}

void TrailTools::FoldAutoScope(const protocol::SessionInfo& session) {
  absl::Status folded = trail_.FoldAutoScope(TrailSessionFor(session));
  if (!folded.ok()) {
    base::LogWarn(base::StrCat("trail: folding the auto-scope of session ", session.session_id,
                               ": ", folded.message()));
  }
}

absl::Status TrailTools::Register(protocol::McpServer& server) {
  absl::Status s = server.AddTool(
      protocol::ToolDefinition{
          "context_view", "Folded context view",
          "Show this session's context as folded: open branches in full, each returned branch "
          "(and each auto-scope of upstream calls) as its one-line summary, with the token "
          "totals unfolded and folded.",
          Json{{"type", "object"},
               {"properties",
                {{"depth",
                  {{"type", "integer"},
                   {"minimum", 0},
                   {"maximum", 16},
                   {"description",
                    "Show branches at depth 0 to this depth open, deeper ones as one line each "
                    "(default: all)"}}}}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", true}}},
      [this](std::shared_ptr<ToolCall> call) { View(call); });
  if (!s.ok()) return s;
  s = server.AddTool(
      protocol::ToolDefinition{
          "trail_unfold", "Unfold a scope",
          "Show the recorded events (tool calls, results, branch events) of a scope: a branch "
          "id, an auto-scope id (auto_...) or a session scope id (ses_...), also from earlier "
          "sessions of this project.",
          Json{{"type", "object"},
               {"properties",
                {{"scope_id",
                  {{"type", "string"},
                   {"minLength", 1},
                   {"maxLength", 200},
                   {"description",
                    "Branch id (br_...), auto-scope id (auto_...) "
                    "or session scope id (ses_...)"}}},
                 {"event",
                  {{"type", "integer"},
                   {"minimum", 1},
                   {"description",
                    "Show only this event (its seq) and, for a tool "
                    "result, its call: what a folded-result handle "
                    "names"}}},
                 {"offset",
                  {{"type", "integer"},
                   {"minimum", 0},
                   {"description", "Skip this many events (default 0)"}}},
                 {"limit",
                  {{"type", "integer"},
                   {"minimum", 1},
                   {"maximum", trail::kMaxUnfoldLimit},
                   {"description", "Events per page (default 20)"}}}}},
               {"required", {"scope_id"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", true}}},
      [this](std::shared_ptr<ToolCall> call) { Unfold(call); });
  if (!s.ok()) return s;
  s = server.AddTool(
      protocol::ToolDefinition{
          "trail_search", "Search the trail",
          "Full-text search over the descriptions and summaries of this project's branches and "
          "auto-scopes, across sessions. Any word may match (best matches first); a trailing * "
          "matches a prefix.",
          Json{{"type", "object"},
               {"properties",
                {{"query", {{"type", "string"}, {"minLength", 1}, {"maxLength", 1000}}},
                 {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxSearchLimit}}}}},
               {"required", {"query"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", true}}},
      [this](std::shared_ptr<ToolCall> call) { Search(call); });
  if (!s.ok()) return s;

  s = server.AddResourceTemplate(
      protocol::ResourceTemplateDefinition{
          "trail://sessions/{id}", "trail-session", "Trail of a session",
          "A session's scopes and folded view (JSON)", "application/json"},
      [this](const protocol::ResourceRead& read, protocol::ResourceDone done) {
        std::string id = read.variables.count("id") ? read.variables.at("id") : "";
        auto root = trail_.GetScope(TrailSessionFor(read.session), id);
        if (!root.ok() || root->kind != trail::ScopeKind::kSession) {
          done(absl::NotFoundError(base::StrCat("trail session ", id, " not found")));
          return;
        }
        auto view = trail_.ViewRoot(id, -1);
        auto scopes = trail_.store().ListScopes(id);
        if (!view.ok() || !scopes.ok()) {
          done(view.ok() ? scopes.status() : view.status());
          return;
        }
        Json list = Json::array();
        for (const auto& sc : *scopes) list.push_back(ScopeToJson(sc));
        Json body{{"session", ScopeToJson(*root)},
                  {"scopes", std::move(list)},
                  {"tokens_unfolded", view->tokens_unfolded},
                  {"tokens_folded", view->tokens_folded},
                  {"view", view->text}};
        done(Json::array({Json{
            {"uri", read.uri}, {"mimeType", "application/json"}, {"text", base::DumpJson(body)}}}));
      });
  if (!s.ok()) return s;
  return server.AddResourceTemplate(
      protocol::ResourceTemplateDefinition{"trail://scopes/{id}", "trail-scope", "Trail scope",
                                           "A scope and its first 200 events (JSON)",
                                           "application/json"},
      [this](const protocol::ResourceRead& read, protocol::ResourceDone done) {
        std::string id = read.variables.count("id") ? read.variables.at("id") : "";
        trail::SessionRef session = TrailSessionFor(read.session);
        auto scope = trail_.GetScope(session, id);
        if (!scope.ok()) {
          done(absl::NotFoundError(base::StrCat("trail scope ", id, " not found")));
          return;
        }
        auto page = trail_.Unfold(session, id, 0, kResourceEventLimit);
        if (!page.ok()) {
          done(page.status());
          return;
        }
        Json events = Json::array();
        for (const auto& e : page->events) events.push_back(EventToJson(e));
        Json body{{"scope", ScopeToJson(*scope)},
                  {"total_events", page->total},
                  {"events", std::move(events)}};
        done(Json::array({Json{
            {"uri", read.uri}, {"mimeType", "application/json"}, {"text", base::DumpJson(body)}}}));
      });
}

void TrailTools::View(const std::shared_ptr<ToolCall>& call) {
  FoldAutoScope(call->session());
  int depth = static_cast<int>(IntArg(call->arguments(), "depth", -1));
  // Branch depths count from 0 under the session root; the trail counts levels below the root.
  auto view = trail_.View(TrailSessionFor(call->session()), depth < 0 ? -1 : depth + 1);
  if (!view.ok()) return FinishError(call, view.status());
  std::string text = trail::FoldedViewText(*view);
  ToolResult result = protocol::TextResult(text);
  // The view itself too: clients that show the model the structured result drop the text.
  result.structured_content = Json{{"view", std::move(text)},
                                   {"session_scope_id", view->root_scope_id},
                                   {"tokens_unfolded", view->tokens_unfolded},
                                   {"tokens_folded", view->tokens_folded},
                                   {"scopes_open", view->scopes_open},
                                   {"scopes_folded", view->scopes_folded},
                                   {"auto_scopes_open", view->auto_scopes_open},
                                   {"auto_scopes_folded", view->auto_scopes_folded},
                                   {"events", view->events}};
  call->Finish(std::move(result));
}

void TrailTools::Unfold(const std::shared_ptr<ToolCall>& call) {
  FoldAutoScope(call->session());
  const Json& args = call->arguments();
  std::string id = StringArg(args, "scope_id");
  int64_t offset = IntArg(args, "offset", 0);
  int64_t limit = IntArg(args, "limit", trail::kDefaultUnfoldLimit);
  trail::SessionRef session = TrailSessionFor(call->session());
  auto scope = trail_.GetScope(session, id);
  if (!scope.ok()) {
    return FinishError(
        call, absl::NotFoundError(base::StrCat("scope ", id,
                                               " not found in this project (use trail_search or "
                                               "context_view to find scope ids)")));
  }
  if (args.contains("event")) return UnfoldEvent(call, *scope, IntArg(args, "event", 0));
  auto page = trail_.Unfold(session, id, offset, limit);
  if (!page.ok()) return FinishError(call, page.status());
  std::string text = base::StrCat(
      trail::ScopeKindName(scope->kind), " ", id, " [", trail::ScopeStatusName(scope->status), "] ",
      scope->description, "\nevents ", offset + (page->events.empty() ? 0 : 1), "-",
      offset + static_cast<int64_t>(page->events.size()), " of ", page->total, "\n");
  if (scope->status == trail::ScopeStatus::kFolded) {
    text += base::StrCat("summary: ", scope->summary, "\n");
  }
  Json events = Json::array();
  for (const auto& e : page->events) {
    text += EventText(e);
    events.push_back(EventToJson(e));
  }
  const int64_t next_offset = offset + static_cast<int64_t>(page->events.size());
  const bool more = next_offset < page->total;
  if (more) text += base::StrCat("(more: call trail_unfold with offset ", next_offset, ")\n");
  ToolResult result = protocol::TextResult(std::move(text));
  result.structured_content = Json{{"scope", ScopeToJson(*scope)},
                                   {"offset", offset},
                                   {"total", page->total},
                                   {"events", std::move(events)}};
  // The same hint as the text, for clients that show the model the structured result.
  if (more) result.structured_content["next_offset"] = next_offset;
  call->Finish(std::move(result));
}

void TrailTools::UnfoldEvent(const std::shared_ptr<ToolCall>& call, const trail::Scope& scope,
                             int64_t seq) {
  auto events = trail_.UnfoldEvent(TrailSessionFor(call->session()), scope.id, seq);
  if (!events.ok()) return FinishError(call, events.status());
  std::string text = base::StrCat(trail::ScopeKindName(scope.kind), " ", scope.id, " [",
                                  trail::ScopeStatusName(scope.status), "] ", scope.description,
                                  "\nevent ", seq, "\n");
  Json list = Json::array();
  for (const auto& e : *events) {
    text += EventText(e);
    list.push_back(EventToJson(e));
  }
  ToolResult result = protocol::TextResult(std::move(text));
  result.structured_content =
      Json{{"scope", ScopeToJson(scope)}, {"event", seq}, {"events", std::move(list)}};
  call->Finish(std::move(result));
}

void TrailTools::Search(const std::shared_ptr<ToolCall>& call) {
  FoldAutoScope(call->session());
  const Json& args = call->arguments();
  auto hits = trail_.Search(TrailSessionFor(call->session()), StringArg(args, "query"),
                            IntArg(args, "limit", kDefaultSearchLimit));
  if (!hits.ok()) return FinishError(call, hits.status());
  std::string text = base::StrCat(hits->size(), " match(es)\n");
  Json list = Json::array();
  for (const auto& h : *hits) {
    text += base::StrCat(h.scope.id, " [", trail::ScopeStatusName(h.scope.status), "] ",
                         h.scope.description, " :: ", h.snippet, "\n");
    Json j = ScopeToJson(h.scope);
    j["snippet"] = h.snippet;
    list.push_back(std::move(j));
  }
  ToolResult result = protocol::TextResult(std::move(text));
  result.structured_content = Json{{"hits", std::move(list)}};
  call->Finish(std::move(result));
}

}  // namespace contextd::tools
