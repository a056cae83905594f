#include "tools/memory_tools.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "protocol/mcp_constants.h"
#include "protocol/tool_call.h"
#include "tools/internal/tool_args.h"
#include "tools/session_key.h"
#include "tools/trail_tools.h"

namespace contextd::tools {
namespace {

using internal::StringArg;

using protocol::Json;
using protocol::ToolCall;
using protocol::ToolResult;

// What a distiller reads of a branch's trail: at most this many events, each cut to this many
// bytes (the structural distiller reads commands, paths and error lines; a model reads a bounded
// prompt anyway).
constexpr int64_t kTraceEvents = 400;
constexpr size_t kTraceEventBytes = 8192;

memory::Caller CallerFor(const folding::SessionKey& key, std::string actor) {
  return memory::Caller{key.tenant, key.project, std::move(actor)};
}

Json ScopeEnum() { return Json{{"type", "string"}, {"enum", {"project", "team", "org"}}}; }

Json ItemJson(const memory::MemoryItem& m) {
  Json out = Json::object();
  out["id"] = m.id;
  out["title"] = m.title;
  out["description"] = m.description;
  out["content"] = m.content;
  out["outcome"] = memory::OutcomeName(m.outcome);
  out["scope"] = memory::ScopeName(m.scope);
  out["status"] = memory::StatusName(m.status);
  out["confidence"] = m.Confidence();
  out["tags"] = m.tags;
  out["use_count"] = m.use_count;
  out["helpful_count"] = m.helpful_count;
  out["unhelpful_count"] = m.unhelpful_count;
  out["success_count"] = m.success_count;
  out["failure_count"] = m.failure_count;
  if (!m.source.branch_id.empty()) out["source_branch_id"] = m.source.branch_id;
  return out;
}

std::string ItemLine(const memory::MemoryItem& m) {
  char confidence[16];
  std::snprintf(confidence, sizeof confidence, "%.2f", m.Confidence());
  return absl::StrCat("- ", m.id, " ",
                      m.outcome == memory::Outcome::kSuccess ? "[worked]" : "[avoid]", " (",
                      memory::StatusName(m.status), ", ", memory::ScopeName(m.scope),
                      ", confidence ", confidence, "): ", m.title, ": ", m.content);
}

void FinishError(ToolCall& call, const absl::Status& status) {
  call.Finish(protocol::ErrorResult(std::string(status.message())));
}

}  // namespace

MemoryTools::MemoryTools(memory::MemoryBank& bank, folding::BranchManager& manager,
                         trail::Trail& trail, folding::EventBus& events, base::Executor& executor,
                         ToolMetrics& metrics, const MemoryToolsOptions& options)
    : bank_(bank),
      manager_(manager),
      trail_(trail),
      events_(events),
      executor_(executor),
      metrics_(metrics),
      options_(options),
      worker_(std::make_unique<base::ThreadExecutor>("memory_worker")) {
  auto scope = memory::ParseScope(options_.extract_scope);
  if (scope.ok()) extract_scope_ = *scope;
  subscription_ = events_.Subscribe([this](const folding::BranchEvent& e) { OnBranchEvent(e); });
}

MemoryTools::~MemoryTools() {
  events_.Unsubscribe(subscription_);
  worker_->Stop();
}

MemoryRetrieval MemoryTools::Retrieve(const protocol::SessionInfo& session,
                                      std::string_view description, std::string_view prompt) const {
  return RetrieveAs(CallerFor(SessionKeyFor(session), session.session_id),
                    std::string(description) + "\n" + std::string(prompt));
}

MemoryRetrieval MemoryTools::RetrieveForTask(const std::string& tenant, const std::string& project,
                                             std::string_view task) const {
  return RetrieveAs(memory::Caller{tenant, project, "model gateway"}, std::string(task));
}

MemoryRetrieval MemoryTools::RetrieveAs(const memory::Caller& caller,
                                        const std::string& query) const {
  MemoryRetrieval out;
  const auto start = std::chrono::steady_clock::now();
  auto found = bank_.Retrieve(caller, query);
  metrics_.MemoryRetrieval(
      found.ok(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!found.ok()) {
    out.warning = absl::StrCat("memories were not injected: ", found.status().message());
    base::LogWarn(absl::StrCat("memory retrieval: ", found.status().message()));
    return out;
  }
  for (memory::InjectionCandidate& c : *found) {
    folding::InjectedContext ic;
    ic.kind = "memory";
    ic.ref = c.item.id;
    ic.text = std::move(c.text);
    ic.tokens = c.tokens;
    ic.title = std::move(c.item.title);
    ic.content = std::move(c.item.content);
    ic.outcome = memory::OutcomeName(c.item.outcome);
    out.candidates.push_back(std::move(ic));
  }
  return out;
}

void MemoryTools::NoteConversationInjected(const std::string& tenant, const std::string& project,
                                           const std::string& conversation,
                                           std::vector<std::string> ids, int64_t tokens) {
  if (ids.empty()) return;
  std::string actor = absl::StrCat("conversation:", conversation);
  AwaitCredit(ProjectTask(tenant, project), ids, actor);
  worker_->Post(
      [this, caller = memory::Caller{tenant, project, actor}, actor, ids = std::move(ids), tokens] {
        absl::Status noted = bank_.NoteInjected(caller, actor, ids, tokens);
        if (!noted.ok()) base::LogWarn(absl::StrCat("memory: counting uses: ", noted.message()));
      });
}

std::string MemoryTools::ProjectTask(const std::string& tenant, const std::string& project) {
  return absl::StrCat("project:", tenant, "\n", project);
}

void MemoryTools::AwaitCredit(const std::string& task, const std::vector<std::string>& ids,
                              const std::string& into) {
  std::lock_guard<std::mutex> lock(credit_mu_);
  if (uncredited_.size() >= kMaxUncreditedTasks && !uncredited_.count(task)) {
    uncredited_.erase(uncredited_.begin());
  }
  std::vector<std::pair<std::string, std::string>>& list = uncredited_[task];
  for (const std::string& id : ids) {
    auto same = [&](const auto& entry) { return entry.first == id; };
    if (std::find_if(list.begin(), list.end(), same) == list.end()) list.emplace_back(id, into);
  }
}

void MemoryTools::CreditTask(const std::shared_ptr<ToolCall>& call, const folding::SessionKey& key,
                             const memory::Caller& caller, bool succeeded) {
  std::string active = manager_.ActiveBranch(key);
  std::string task = active.empty() ? ProjectTask(key.tenant, key.project) : active;
  std::vector<std::pair<std::string, std::string>> ids;  // (item, what it was injected into)
  {
    std::lock_guard<std::mutex> lock(credit_mu_);
    if (auto it = uncredited_.find(task); it != uncredited_.end()) {
      ids = std::move(it->second);
      uncredited_.erase(it);
    }
  }
  if (ids.empty()) {
    return FinishError(*call, absl::FailedPreconditionError(
                                  "no memory was injected into this task since the last report "
                                  "(or contextd restarted since): name memory_id"));
  }
  OnWorker(call, [this, call, caller, ids = std::move(ids), succeeded] {
    std::string text = absl::StrCat("Noted for ", ids.size(), " injected memories:");
    Json list = Json::array();
    for (const auto& [id, into] : ids) {
      // The outcome's history entry names what the item was given to, as its injection did.
      memory::Caller as = caller;
      as.actor = into;
      auto item = bank_.RecordOutcome(as, id, succeeded);
      if (!item.ok()) {
        absl::StrAppend(&text, "\n", id, ": ", item.status().message());
        continue;
      }
      absl::StrAppend(&text, "\n", ItemLine(*item));
      list.push_back(ItemJson(*item));
    }
    ToolResult result = protocol::TextResult(std::move(text));
    result.structured_content = Json{{"memories", std::move(list)}};
    call->Finish(std::move(result));
  });
}

void MemoryTools::NoteInjected(const protocol::SessionInfo& session,
                               const folding::CreateResult& created) {
  if (created.injected_context.empty()) return;
  std::vector<std::string> ids;
  for (const auto& c : created.injected_context) ids.push_back(c.ref);
  AwaitCredit(created.branch_id, ids, created.branch_id);
  worker_->Post([this, caller = CallerFor(SessionKeyFor(session), created.branch_id),
                 branch = created.branch_id, ids = std::move(ids),
                 tokens = created.injected_tokens] {
    absl::Status noted = bank_.NoteInjected(caller, branch, ids, tokens);
    if (!noted.ok()) base::LogWarn(absl::StrCat("memory: counting uses: ", noted.message()));
  });
}

void MemoryTools::OnBranchEvent(const folding::BranchEvent& event) {
  if (event.branch == nullptr) return;
  bool folded = event.type == folding::BranchEventType::kFolded && event.branch->memory_queued;
  // A branch that ran out of its own budget or time is a lesson too, when every branch is
  // distilled; one ended by its parent, its session or a restart says nothing about its task.
  bool forced = event.type == folding::BranchEventType::kForceReturned && options_.extract_memory &&
                (event.status == folding::BranchStatus::kTimeout ||
                 event.status == folding::BranchStatus::kBudgetExhausted);
  if (!folded && !forced) return;
  // Publish runs inside the engine's transaction: read the trail after it, as a task of its own.
  executor_.Post([this, session = event.session, branch = *event.branch, folded]() mutable {
    QueueExtraction(std::move(session), std::move(branch), folded);
  });
}

void MemoryTools::QueueExtraction(folding::SessionKey session, folding::Branch branch,
                                  bool succeeded) {
  memory::BranchTrace trace;
  trace.tenant = session.tenant;
  trace.project = session.project;
  trace.session_id = session.session_id;
  trace.branch_id = branch.id;
  trace.description = branch.description;
  trace.prompt = branch.prompt;
  trace.summary = branch.summary;
  trace.succeeded = succeeded;
  trace.finish_reason = branch.finish_reason;
  int64_t offset = 0;
  while (offset < kTraceEvents) {
    auto page = trail_.Unfold(TrailSessionFor(session), branch.id, offset,
                              std::min<int64_t>(trail::kMaxUnfoldLimit, kTraceEvents - offset));
    if (!page.ok()) {
      // No trail (e.g. the branch's scope is unknown): distil from the texts alone.
      base::LogWarn(
          absl::StrCat("memory: reading the trail of ", branch.id, ": ", page.status().message()));
      break;
    }
    for (const trail::Event& e : page->events) {
      trace.events.push_back(memory::TraceEvent{
          trail::EventKindName(e.kind), e.label,
          e.payload.substr(0, std::min(e.payload.size(), kTraceEventBytes)), e.is_error});
    }
    offset += static_cast<int64_t>(page->events.size());
    if (page->events.empty() || offset >= page->total) break;
  }
  worker_->Post([this, trace = std::move(trace)] {
    auto result = bank_.Extract(trace, extract_scope_);
    if (!result.ok()) {
      base::LogWarn(
          absl::StrCat("memory: distilling ", trace.branch_id, ": ", result.status().message()));
    }
  });
}

void MemoryTools::LoadVectors() {
  worker_->Post([this] {
    auto loaded = bank_.LoadVectors();
    if (!loaded.ok()) {
      base::LogWarn(absl::StrCat("memory: loading vectors: ", loaded.status().message()));
    } else if (*loaded > 0) {
      base::LogInfo(absl::StrCat("memory: ", *loaded, " vectors indexed"));
    }
  });
}

absl::Status MemoryTools::Register(protocol::McpServer& server) {
  absl::Status s = server.AddTool(
      protocol::ToolDefinition{
          "memory_search", "Search memories",
          "Search what worked ([worked]) and what failed ([avoid]) in earlier branches of this "
          "project and team.",
          Json{{"type", "object"},
               {"properties",
                {{"query",
                  {{"type", "string"}, {"minLength", 1}, {"maxLength", memory::kMaxQueryChars}}},
                 {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 50}, {"default", 5}}},
                 {"scope", ScopeEnum()}}},
               {"required", {"query"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", true}}},
      [this](std::shared_ptr<ToolCall> call) { Search(call); });
  if (!s.ok()) return s;
  s = server.AddTool(
      protocol::ToolDefinition{
          "memory_record", "Record a memory",
          "Record a reusable lesson: a way that worked (outcome success) or one to avoid "
          "(failure). It is injected into later branches with a similar task.",
          Json{{"type", "object"},
               {"properties",
                {{"title",
                  {{"type", "string"}, {"minLength", 1}, {"maxLength", memory::kMaxTitleChars}}},
                 {"description",
                  {{"type", "string"},
                   {"minLength", 1},
                   {"maxLength", memory::kMaxDescriptionChars},
                   {"description", "One sentence: when it applies"}}},
                 {"content",
                  {{"type", "string"},
                   {"minLength", 1},
                   {"maxLength", memory::kMaxContentChars},
                   {"description", "1-3 sentences: what to do or avoid, and why"}}},
                 {"outcome",
                  {{"type", "string"}, {"enum", {"success", "failure"}}, {"default", "success"}}},
                 {"tags",
                  {{"type", "array"},
                   {"maxItems", memory::kMaxTags},
                   {"items",
                    {{"type", "string"}, {"minLength", 1}, {"maxLength", memory::kMaxTagChars}}}}},
                 {"scope", ScopeEnum()}}},
               {"required", {"title", "description", "content"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", false}}},
      [this](std::shared_ptr<ToolCall> call) { Record(call); });
  if (!s.ok()) return s;
  s = server.AddTool(
      protocol::ToolDefinition{
          "memory_feedback", "Rate a memory",
          "Say whether an injected or found memory helped; unhelpful ones stop being injected.",
          Json{{"type", "object"},
               {"properties",
                {{"memory_id", {{"type", "string"}, {"minLength", 1}}},
                 {"helpful", {{"type", "boolean"}}}}},
               {"required", {"memory_id", "helpful"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", false}}},
      [this](std::shared_ptr<ToolCall> call) { Rate(call, /*outcome=*/false); });
  if (!s.ok()) return s;
  return server.AddTool(
      protocol::ToolDefinition{
          "memory_outcome", "Report a memory's outcome",
          "Say whether the task that followed a memory succeeded. Without memory_id: every memory "
          "injected into the current task (the active branch's, or at the root the lessons given "
          "to this project's conversations) not yet reported.",
          Json{{"type", "object"},
               {"properties",
                {{"memory_id", {{"type", "string"}, {"minLength", 1}}},
                 {"succeeded", {{"type", "boolean"}}}}},
               {"required", {"succeeded"}},
               {"additionalProperties", false}},
          nullptr, Json{{"readOnlyHint", false}}},
      [this](std::shared_ptr<ToolCall> call) { Rate(call, /*outcome=*/true); });
}

void MemoryTools::Search(const std::shared_ptr<ToolCall>& call) {
  const Json& args = call->arguments();
  std::optional<memory::Scope> scope;
  if (std::string name = StringArg(args, "scope"); !name.empty()) {
    auto parsed = memory::ParseScope(name);
    if (!parsed.ok()) return FinishError(*call, parsed.status());
    scope = *parsed;
  }
  auto limit_it = args.find("limit");
  int limit = limit_it != args.end() && limit_it->is_number_integer() ? limit_it->get<int>() : 5;
  memory::Caller caller = CallerFor(SessionKeyFor(call->session()), call->session().session_id);
  OnWorker(call, [this, call, caller, query = StringArg(args, "query"), limit, scope] {
    auto hits = bank_.Search(caller, query, limit, scope);
    if (!hits.ok()) return FinishError(*call, hits.status());
    std::string text =
        hits->empty() ? "No memories match." : absl::StrCat(hits->size(), " memories, best first:");
    Json list = Json::array();
    for (const memory::SearchHit& h : *hits) {
      absl::StrAppend(&text, "\n", ItemLine(h.item));
      Json j = ItemJson(h.item);
      j["score"] = h.score;
      list.push_back(std::move(j));
    }
    ToolResult result = protocol::TextResult(std::move(text));
    result.structured_content = Json{{"memories", std::move(list)}};
    call->Finish(std::move(result));
  });
}

void MemoryTools::OnWorker(std::shared_ptr<ToolCall> call, std::function<void()> fn) {
  worker_->Post([call = std::move(call), fn = std::move(fn)] {
    // The call holds its session's request open: a throw still answers it (Finish is once-only).
    if (!base::RunCatching("memory_worker", fn)) {
      call->Finish(protocol::ErrorResult(
          "internal error in contextd's memory worker; the call did nothing you can rely on: "
          "try it again"));
    }
  });
}

void MemoryTools::Record(const std::shared_ptr<ToolCall>& call) {
  const Json& args = call->arguments();
  memory::RecordRequest req;
  req.title = StringArg(args, "title");
  req.description = StringArg(args, "description");
  req.content = StringArg(args, "content");
  auto outcome = memory::ParseOutcome(StringArg(args, "outcome", "success"));
  auto scope = memory::ParseScope(StringArg(args, "scope", "project"));
  if (!outcome.ok()) return FinishError(*call, outcome.status());
  if (!scope.ok()) return FinishError(*call, scope.status());
  req.outcome = *outcome;
  req.scope = *scope;
  if (auto tags = args.find("tags"); tags != args.end() && tags->is_array()) {
    for (const Json& t : *tags) {
      if (t.is_string()) req.tags.push_back(t.get<std::string>());
    }
  }
  // The lesson's source task: the branch the agent is in, if any.
  folding::SessionKey key = SessionKeyFor(call->session());
  std::string active = manager_.ActiveBranch(key);
  if (!active.empty()) {
    auto status = manager_.Status(key, active);
    if (status.ok() && !status->branches.empty()) {
      req.source.branch_id = active;
      req.source.description = status->branches[0].description;
    }
  }
  memory::Caller caller = CallerFor(key, call->session().session_id);
  OnWorker(call, [this, call, caller, req = std::move(req)] {
    auto item = bank_.Record(caller, req);
    if (!item.ok()) return FinishError(*call, item.status());
    ToolResult result = protocol::TextResult(
        absl::StrCat("Recorded memory ", item->id, " (", memory::ScopeName(item->scope),
                     " scope, confidence 0.75 until rated):\n", ItemLine(*item)));
    result.structured_content = Json{{"memory", ItemJson(*item)}};
    call->Finish(std::move(result));
  });
}

void MemoryTools::Rate(const std::shared_ptr<ToolCall>& call, bool outcome) {
  const Json& args = call->arguments();
  std::string id = StringArg(args, "memory_id");
  auto flag = args.find(outcome ? "succeeded" : "helpful");
  const bool positive = flag != args.end() && flag->is_boolean() && flag->get<bool>();
  folding::SessionKey key = SessionKeyFor(call->session());
  memory::Caller caller = CallerFor(key, call->session().session_id);
  if (outcome && id.empty()) return CreditTask(call, key, caller, positive);
  OnWorker(call, [this, call, caller, id = std::move(id), positive, outcome] {
    auto item =
        outcome ? bank_.RecordOutcome(caller, id, positive) : bank_.Feedback(caller, id, positive);
    if (!item.ok()) return FinishError(*call, item.status());
    ToolResult result = protocol::TextResult(absl::StrCat("Noted. ", ItemLine(*item)));
    result.structured_content = Json{{"memory", ItemJson(*item)}};
    call->Finish(std::move(result));
  });
}

}  // namespace contextd::tools
