#include "trail/trail.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "base/ids.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "trail/content_hash.h"
#include "trail/internal/text.h"

namespace contextd::trail {
namespace {

using internal::OneLine;

// Pages read when rebuilding an auto-scope's digest from its events.
constexpr int64_t kRecoveryPage = 200;
// Auto-scopes folded per recovery pass (the pass repeats until none is left open).
constexpr int64_t kRecoveryBatch = 100;
// "upstream <name>": the description of an auto-scope (recovery reads the name back).
constexpr std::string_view kAutoDescriptionPrefix = "upstream ";

// Everything View needs about one session, loaded once.
struct Tree {
  std::map<std::string, Scope> scopes;
  std::map<std::string, std::vector<std::string>> children;  // parent -> creation order
  std::map<std::string, std::vector<Event>> events;          // scope -> oldest first
};

void AppendIndented(std::string& out, int level, std::string_view text) {
  std::string indent(static_cast<size_t>(level) * 2, ' ');
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += base::StrCat(indent, line, "\n");
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

// An event that introduces a child scope where it happened: branch_created for a branch,
// auto_scope_opened for an auto-scope.
bool IsChildMarker(const Tree& tree, const Event& e) {
  return (e.kind == EventKind::kBranchCreated || e.kind == EventKind::kAutoScopeOpened) &&
         tree.scopes.count(e.label) > 0;
}

// Tokens of the view of open scope `id`: its events, each open child in full, each folded child
// (with the branch_created event that introduced it) as its summary.
int64_t Cost(const Tree& tree, const std::string& id) {
  int64_t total = 0;
  std::map<std::string, bool> placed;
  auto child_cost = [&](const std::string& child) {
    const Scope& c = tree.scopes.at(child);
    return c.status == ScopeStatus::kFolded ? c.summary_tokens : Cost(tree, child);
  };
  if (auto it = tree.events.find(id); it != tree.events.end()) {
    for (const Event& e : it->second) {
      if (IsChildMarker(tree, e) && tree.scopes.at(e.label).parent_id == id) {
        placed[e.label] = true;
        const Scope& c = tree.scopes.at(e.label);
        total +=
            c.status == ScopeStatus::kFolded ? c.summary_tokens : e.tokens + Cost(tree, e.label);
      } else {
        total += e.tokens;
      }
    }
  }
  if (auto it = tree.children.find(id); it != tree.children.end()) {
    for (const std::string& child : it->second) {
      if (!placed.count(child)) total += child_cost(child);
    }
  }
  return total;
}

int64_t SubtreeTokens(const Tree& tree, const std::string& id) {
  int64_t total = tree.scopes.at(id).event_tokens;
  if (auto it = tree.children.find(id); it != tree.children.end()) {
    for (const std::string& child : it->second) total += SubtreeTokens(tree, child);
  }
  return total;
}

void RenderScope(const Tree& tree, const std::string& id, int level, int depth, std::string& out);

void RenderChild(const Tree& tree, const Scope& c, const Event* created, int level, int depth,
                 std::string& out) {
  const char* kind = ScopeKindName(c.kind);
  if (c.status == ScopeStatus::kFolded) {
    AppendIndented(
        out, level,
        base::StrCat("= ", kind, " ", c.id, " [folded: ",
                     SubtreeTokens(tree, c.id) + (created != nullptr ? created->tokens : 0),
                     " tokens -> ", c.summary_tokens, "] ", OneLine(c.description, 120),
                     " :: ", OneLine(c.summary, 2000)));
    return;
  }
  if (depth >= 0 && level + 1 > depth) {
    AppendIndented(out, level,
                   base::StrCat("+ ", kind, " ", c.id, " [open, ", c.event_count, " events, ",
                                Cost(tree, c.id), " tokens; trail_unfold to see] ",
                                OneLine(c.description, 120)));
    return;
  }
  AppendIndented(out, level,
                 base::StrCat("+ ", kind, " ", c.id, " [open] ", OneLine(c.description, 120)));
  if (created != nullptr && created->kind == EventKind::kBranchCreated) {
    AppendIndented(out, level + 1, base::StrCat("- branch_created (", created->tokens, " tokens)"));
    AppendIndented(out, level + 2, created->payload);
  }
  RenderScope(tree, c.id, level + 1, depth, out);
}

void RenderScope(const Tree& tree, const std::string& id, int level, int depth, std::string& out) {
  std::map<std::string, bool> placed;
  if (auto it = tree.events.find(id); it != tree.events.end()) {
    for (const Event& e : it->second) {
      if (IsChildMarker(tree, e) && tree.scopes.at(e.label).parent_id == id) {
        placed[e.label] = true;
        RenderChild(tree, tree.scopes.at(e.label), &e, level, depth, out);
        continue;
      }
      std::string head = base::StrCat("- ", EventKindName(e.kind));
      if (!e.label.empty()) head += base::StrCat(" ", e.label);
      if (e.is_error) head += base::StrCat(" [error]");
      head += base::StrCat(" (", e.tokens, " tokens)");
      AppendIndented(out, level, head);
      AppendIndented(out, level + 1, e.payload);
    }
  }
  if (auto it = tree.children.find(id); it != tree.children.end()) {
    for (const std::string& child : it->second) {
      if (!placed.count(child))
        RenderChild(tree, tree.scopes.at(child), nullptr, level, depth, out);
    }
  }
}

}  // namespace

Trail::Trail(TrailStore& store, const base::Clock& clock, TrailOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {}

int64_t Trail::CountTokens(std::string_view text) const {
  return options_.count_tokens ? options_.count_tokens(text) : internal::CountWords(text);
}

std::string Trail::Kept(std::string_view text) const {
  return options_.withhold ? options_.withhold(text) : std::string(text);
}

absl::Status Trail::WriteScope(Scope scope) {
  scope.description = Kept(scope.description);
  scope.summary = Kept(scope.summary);
  return store_.OpenScope(scope);
}

void Trail::KeepEvents(std::vector<NewEvent>& events) const {
  for (NewEvent& e : events) {
    e.label = Kept(e.label);
    e.payload = Kept(e.payload);
  }
}

absl::StatusOr<std::vector<int64_t>> Trail::WriteEvents(std::vector<NewEvent> events) {
  KeepEvents(events);
  return store_.AppendEvents(events);
}

absl::Status Trail::WriteScopeWithEvents(Scope scope, std::vector<NewEvent> events) {
  scope.description = Kept(scope.description);
  scope.summary = Kept(scope.summary);
  KeepEvents(events);
  return store_.OpenScopeWithEvents(scope, events);
}

absl::Status Trail::WriteFold(std::string_view id, std::string_view summary, int64_t summary_tokens,
                              int64_t at_ms) {
  return store_.FoldScope(id, Kept(summary), summary_tokens, at_ms);
}

absl::Status Trail::WriteFoldAfterEvents(std::vector<NewEvent> events, std::string_view id,
                                         std::string_view summary, int64_t summary_tokens,
                                         int64_t at_ms) {
  KeepEvents(events);
  return store_.FoldScopeAfterEvents(events, id, Kept(summary), summary_tokens, at_ms);
}

bool Trail::IsProcessSession(const SessionRef& session) const {
  return std::find(options_.process_sessions.begin(), options_.process_sessions.end(),
                   session.session_id) != options_.process_sessions.end();
}

absl::StatusOr<std::string> Trail::RootScope(const SessionRef& session) {
  std::string key = session.ToString();
  // A session's root never changes once the store has it: cached for as long as this process
  // serves the session (EndSession, ReleaseSession and ForgetCachedScopes drop it).
  if (auto it = roots_.find(key); it != roots_.end()) return it->second;
  Scope root;
  root.id = base::TimeOrderedId("ses_");
  root.session = session;
  root.kind = ScopeKind::kSession;
  root.description = Kept(base::StrCat("session ", session.session_id));
  root.created_at_ms = clock_.WallMillis();
  std::string id;
  if (IsProcessSession(session)) {
    RETURN_IF_ERROR(WriteScope(root));
    id = root.id;
  } else {
    ASSIGN_OR_RETURN(id, store_.OpenSessionRoot(root));
  }
  roots_[key] = id;
  open_scopes_[id] = session;
  return id;
}

absl::Status Trail::OnBranchCreated(const SessionRef& session, std::string_view branch_id,
                                    std::string_view parent_branch_id, std::string_view description,
                                    std::string_view prompt, int64_t prompt_tokens) {
  std::string parent(parent_branch_id);
  if (parent.empty()) {
    ASSIGN_OR_RETURN(parent, RootScope(session));
  }
  Scope scope;
  scope.id = std::string(branch_id);
  scope.session = session;
  scope.kind = ScopeKind::kBranch;
  scope.parent_id = parent;
  scope.description = std::string(description);
  scope.created_at_ms = clock_.WallMillis();
  NewEvent created;
  created.scope_id = parent;
  created.kind = EventKind::kBranchCreated;
  created.label = std::string(branch_id);
  created.payload = base::StrCat(description, "\n", prompt);
  created.tokens = prompt_tokens;
  created.at_ms = scope.created_at_ms;
  RETURN_IF_ERROR(WriteScopeWithEvents(scope, {created}));
  open_scopes_[scope.id] = session;
  return absl::OkStatus();
}

absl::Status Trail::OnBranchWarning(std::string_view branch_id, std::string_view text) {
  NewEvent warning;
  warning.scope_id = std::string(branch_id);
  warning.kind = EventKind::kWarning;
  warning.payload = std::string(text);
  warning.at_ms = clock_.WallMillis();
  return WriteEvents({warning}).status();
}

absl::Status Trail::OnBranchFolded(std::string_view branch_id, std::string_view summary,
                                   int64_t summary_tokens, bool forced, std::string_view reason) {
  // A scope this process opened and has not folded is known to be open without a read.
  if (open_scopes_.count(std::string(branch_id)) == 0) {
    ASSIGN_OR_RETURN(std::optional<Scope> scope, store_.GetScope(branch_id));
    if (!scope) return absl::NotFoundError(base::StrCat("scope ", branch_id, " not found"));
    if (scope->status == ScopeStatus::kFolded) return absl::OkStatus();
  }
  NewEvent end;
  end.scope_id = std::string(branch_id);
  end.kind = forced ? EventKind::kForceReturn : EventKind::kBranchReturned;
  end.payload = forced ? base::StrCat(reason, "\n", summary) : std::string(summary);
  end.tokens = summary_tokens;
  end.at_ms = clock_.WallMillis();
  absl::Status folded = WriteFoldAfterEvents({end}, branch_id, summary, summary_tokens, end.at_ms);
  // Folded meanwhile by another process sharing the store: it recorded the end (nothing of
  // this write applied), and what matters, that the scope is folded, holds.
  if (!folded.ok() && folded.code() != absl::StatusCode::kFailedPrecondition) return folded;
  open_scopes_.erase(std::string(branch_id));
  return absl::OkStatus();
}

absl::StatusOr<RecordedCall> Trail::RecordToolCall(const SessionRef& session,
                                                   std::string_view scope_id, std::string_view tool,
                                                   std::string_view arguments_text,
                                                   std::string_view result_text,
                                                   int64_t tokens_args, int64_t tokens_result,
                                                   bool is_error) {
  RecordedCall recorded;
  if (scope_id.empty()) {
    ASSIGN_OR_RETURN(recorded.scope_id, RootScope(session));
  } else {
    auto cached = open_scopes_.find(std::string(scope_id));
    if (cached != open_scopes_.end()) {
      if (!(cached->second == session)) {
        return absl::NotFoundError(base::StrCat("scope ", scope_id, " not found"));
      }
    } else {
      ASSIGN_OR_RETURN(std::optional<Scope> scope, store_.GetScope(scope_id));
      if (!scope || !(scope->session == session)) {
        return absl::NotFoundError(base::StrCat("scope ", scope_id, " not found"));
      }
    }
    recorded.scope_id = std::string(scope_id);
  }
  int64_t now = clock_.WallMillis();
  NewEvent call{recorded.scope_id,
                EventKind::kToolCall,
                std::string(tool),
                std::string(arguments_text),
                tokens_args,
                false,
                now};
  NewEvent result{recorded.scope_id,
                  EventKind::kToolResult,
                  std::string(tool),
                  std::string(result_text),
                  tokens_result,
                  is_error,
                  now};
  ASSIGN_OR_RETURN(std::vector<int64_t> seqs, WriteEvents({call, result}));
  recorded.call_seq = seqs.at(0);
  recorded.result_seq = seqs.at(1);
  return recorded;
}

absl::StatusOr<RecordedCall> Trail::FindOrRecordToolCall(
    const SessionRef& session, std::string_view scope_id, std::string_view tool,
    std::string_view arguments_text, std::string_view result_text, int64_t tokens_args,
    int64_t tokens_result, bool is_error) {
  ASSIGN_OR_RETURN(std::string root, RootScope(session));
  ASSIGN_OR_RETURN(std::optional<Event> found,
                   store_.FindEvent(root, ContentHash(Kept(result_text)), EventKind::kToolResult));
  if (found) {
    RecordedCall recorded;
    recorded.scope_id = found->scope_id;
    recorded.result_seq = found->seq;
    ASSIGN_OR_RETURN(std::optional<Event> call, store_.PreviousEvent(found->scope_id, found->seq));
    if (call && call->kind == EventKind::kToolCall) {
      recorded.call_seq = call->seq;
    }
    return recorded;
  }
  return RecordToolCall(session, scope_id, tool, arguments_text, result_text, tokens_args,
                        tokens_result, is_error);
}

absl::StatusOr<RecordedCall> Trail::RecordUpstreamCall(
    const SessionRef& session, std::string_view upstream, std::string_view tool,
    std::string_view arguments_text, std::string_view result_text, int64_t tokens_args,
    int64_t tokens_result, bool is_error) {
  if (!options_.auto_scope_upstreams) {
    return RecordToolCall(session, "", tool, arguments_text, result_text, tokens_args,
                          tokens_result, is_error);
  }
  RETURN_IF_ERROR(SyncAutoScope(session));
  std::string key = session.ToString();
  auto open = autos_.find(key);
  if (open != autos_.end() && open->second.digest.upstream() != upstream) {
    RETURN_IF_ERROR(FoldCachedAuto(session));
    open = autos_.end();
  }
  if (open == autos_.end()) {
    ASSIGN_OR_RETURN(std::string root, RootScope(session));
    Scope scope;
    scope.id = base::TimeOrderedId("auto_");
    scope.session = session;
    scope.kind = ScopeKind::kAuto;
    scope.parent_id = root;
    scope.description = base::StrCat(kAutoDescriptionPrefix, upstream);
    scope.created_at_ms = clock_.WallMillis();
    RETURN_IF_ERROR(WriteScope(scope));
    // Tracked at once, so that it folds even if the marker below cannot be written.
    open_scopes_[scope.id] = session;
    open = autos_.emplace(key, OpenAuto{scope.id, AutoScopeDigest(std::string(upstream)), 0}).first;
    NewEvent opened;
    opened.scope_id = root;
    opened.kind = EventKind::kAutoScopeOpened;
    opened.label = scope.id;
    opened.payload = scope.description;
    opened.at_ms = scope.created_at_ms;
    RETURN_IF_ERROR(WriteEvents({opened}).status());
  }
  // The digest samples and cuts these texts for the summary: withheld first, so that a cut
  // cannot separate a private span from its tags.
  const std::string args = Kept(arguments_text);
  const std::string result = Kept(result_text);
  ASSIGN_OR_RETURN(RecordedCall recorded,
                   RecordToolCall(session, open->second.scope_id, tool, args, result, tokens_args,
                                  tokens_result, is_error));
  open->second.digest.Add(tool, args, result, is_error, tokens_args + tokens_result);
  open->second.events += 2;
  return recorded;
}

absl::Status Trail::FoldAuto(const std::string& scope_id, const AutoScopeDigest& digest) {
  // Its tokens are those of what is stored: nothing charged them (the calls were charged).
  std::string summary = Kept(digest.Summary(options_.count_tokens));
  absl::Status folded = WriteFold(scope_id, summary, CountTokens(summary), clock_.WallMillis());
  // Folded already (by another process's recovery): what matters, that it is folded, holds.
  if (!folded.ok() && folded.code() != absl::StatusCode::kFailedPrecondition) return folded;
  open_scopes_.erase(scope_id);
  return absl::OkStatus();
}

absl::Status Trail::FoldAutoScope(const SessionRef& session) {
  RETURN_IF_ERROR(SyncAutoScope(session));
  return FoldCachedAuto(session);
}

absl::Status Trail::FoldCachedAuto(const SessionRef& session) {
  auto open = autos_.find(session.ToString());
  if (open == autos_.end()) return absl::OkStatus();
  RETURN_IF_ERROR(FoldAuto(open->second.scope_id, open->second.digest));
  autos_.erase(open);
  return absl::OkStatus();
}

std::string Trail::OpenAutoScope(const SessionRef& session) const {
  auto open = autos_.find(session.ToString());
  return open == autos_.end() ? "" : open->second.scope_id;
}

absl::StatusOr<AutoScopeDigest> Trail::DigestOf(const Scope& scope) {
  std::string_view upstream = scope.description;
  if (upstream.substr(0, kAutoDescriptionPrefix.size()) == kAutoDescriptionPrefix) {
    upstream.remove_prefix(kAutoDescriptionPrefix.size());
  }
  AutoScopeDigest digest{std::string(upstream)};
  // Calls are recorded as tool_call + tool_result pairs in one transaction (a pair may
  // straddle two pages).
  std::optional<Event> call;
  for (int64_t offset = 0; offset < scope.event_count; offset += kRecoveryPage) {
    ASSIGN_OR_RETURN(EventPage page, store_.ListEvents(scope.id, offset, kRecoveryPage));
    if (page.events.empty()) break;
    for (Event& e : page.events) {
      if (e.kind == EventKind::kToolCall) {
        call = std::move(e);
      } else if (e.kind == EventKind::kToolResult) {
        bool paired = call.has_value() && call->label == e.label;
        digest.Add(e.label, paired ? std::string_view(call->payload) : std::string_view(),
                   e.payload, e.is_error, e.tokens + (paired ? call->tokens : 0));
        call.reset();
      }
    }
  }
  return digest;
}

absl::Status Trail::SyncAutoScope(const SessionRef& session) {
  if (!store_.shared() || !options_.auto_scope_upstreams) return absl::OkStatus();
  const std::string key = session.ToString();
  ASSIGN_OR_RETURN(std::string root, RootScope(session));
  ASSIGN_OR_RETURN(std::vector<Scope> open, store_.ListOpenScopesOf(root, ScopeKind::kAuto));
  auto cached = autos_.find(key);
  if (cached != autos_.end() && (open.empty() || cached->second.scope_id != open.back().id)) {
    // Folded by another process (or superseded below): this one no longer tracks it.
    open_scopes_.erase(cached->second.scope_id);
    autos_.erase(cached);
    cached = autos_.end();
  }
  if (open.empty()) return absl::OkStatus();
  // Two processes that opened one at the same moment: all but the newest fold now.
  for (size_t i = 0; i + 1 < open.size(); ++i) {
    ASSIGN_OR_RETURN(AutoScopeDigest older, DigestOf(open[i]));
    RETURN_IF_ERROR(FoldAuto(open[i].id, older));
  }
  const Scope& newest = open.back();
  // Unchanged since this process last wrote it: its digest is whole.
  if (cached != autos_.end() && cached->second.events == newest.event_count) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(AutoScopeDigest digest, DigestOf(newest));
  autos_.insert_or_assign(key, OpenAuto{newest.id, std::move(digest), newest.event_count});
  open_scopes_[newest.id] = session;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Trail::RecoverAutoScopes() {
  int64_t folded = 0;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<Scope> open,
                     store_.ListOpenScopes(ScopeKind::kAuto, kRecoveryBatch));
    if (open.empty()) return folded;
    for (const Scope& scope : open) {
      ASSIGN_OR_RETURN(AutoScopeDigest digest, DigestOf(scope));
      RETURN_IF_ERROR(FoldAuto(scope.id, digest));
      ++folded;
    }
  }
}

absl::StatusOr<FoldedView> Trail::View(const SessionRef& session, int depth) {
  ASSIGN_OR_RETURN(std::string root, RootScope(session));
  return ViewRoot(root, depth);
}

absl::StatusOr<FoldedView> Trail::ViewRoot(std::string_view root_scope_id, int depth) {
  FoldedView view;
  view.root_scope_id = std::string(root_scope_id);
  ASSIGN_OR_RETURN(std::vector<Scope> scopes, store_.ListScopes(view.root_scope_id));
  if (scopes.empty() || scopes.front().id != view.root_scope_id ||
      scopes.front().kind != ScopeKind::kSession) {
    return absl::NotFoundError(base::StrCat("session ", root_scope_id, " not found"));
  }
  Tree tree;
  // Only scopes in view need their events: open ones whose ancestors are all open. Scopes under
  // a folded one count through their stored totals. Parents come before children in `scopes`.
  std::map<std::string, bool> expanded;  // scope id -> open and every ancestor open
  for (Scope& s : scopes) {
    view.events += s.event_count;
    view.tokens_unfolded += s.event_tokens;
    bool parent_expanded = s.parent_id.empty() || expanded[s.parent_id];
    expanded[s.id] = parent_expanded && s.status == ScopeStatus::kOpen;
    if (expanded[s.id] && s.event_count > 0) {
      ASSIGN_OR_RETURN(EventPage page, store_.ListEvents(s.id, 0, s.event_count));
      tree.events[s.id] = std::move(page.events);
    }
    if (s.kind == ScopeKind::kBranch) {
      ++(s.status == ScopeStatus::kFolded ? view.scopes_folded : view.scopes_open);
    } else if (s.kind == ScopeKind::kAuto) {
      ++(s.status == ScopeStatus::kFolded ? view.auto_scopes_folded : view.auto_scopes_open);
    }
    if (!s.parent_id.empty()) tree.children[s.parent_id].push_back(s.id);
    std::string id = s.id;
    tree.scopes.emplace(std::move(id), std::move(s));
  }
  view.tokens_folded = Cost(tree, view.root_scope_id);
  RenderScope(tree, view.root_scope_id, 0, depth, view.text);
  return view;
}

absl::StatusOr<Scope> Trail::GetScope(const SessionRef& session, std::string_view scope_id) {
  ASSIGN_OR_RETURN(std::optional<Scope> scope, store_.GetScope(scope_id));
  if (!scope || scope->session.tenant != session.tenant ||
      scope->session.project != session.project) {
    return absl::NotFoundError(base::StrCat("scope ", scope_id, " not found"));
  }
  return *std::move(scope);
}

absl::StatusOr<EventPage> Trail::Unfold(const SessionRef& session, std::string_view scope_id,
                                        int64_t offset, int64_t limit) {
  if (offset < 0) return absl::InvalidArgumentError("offset must be >= 0");
  if (limit < 1 || limit > kMaxUnfoldLimit) {
    return absl::InvalidArgumentError(base::StrCat("limit must be 1..", kMaxUnfoldLimit));
  }
  RETURN_IF_ERROR(GetScope(session, scope_id).status());
  return store_.ListEvents(scope_id, offset, limit);
}

absl::StatusOr<std::vector<Event>> Trail::UnfoldEvent(const SessionRef& session,
                                                      std::string_view scope_id, int64_t seq) {
  RETURN_IF_ERROR(GetScope(session, scope_id).status());
  ASSIGN_OR_RETURN(std::optional<Event> event, store_.GetEvent(seq));
  if (!event || event->scope_id != scope_id) {
    return absl::NotFoundError(base::StrCat("event ", seq, " not found in scope ", scope_id));
  }
  std::vector<Event> events;
  if (event->kind == EventKind::kToolResult && seq > 1) {
    ASSIGN_OR_RETURN(std::optional<Event> call, store_.PreviousEvent(scope_id, seq));
    if (call && call->kind == EventKind::kToolCall) {
      events.push_back(*std::move(call));
    }
  }
  events.push_back(*std::move(event));
  return events;
}

absl::StatusOr<std::vector<SearchHit>> Trail::Search(const SessionRef& session,
                                                     std::string_view query, int64_t limit) {
  return store_.Search(session.tenant, session.project, query, limit);
}

absl::Status Trail::EndSession(const SessionRef& session) {
  absl::Status folded = FoldAutoScope(session);
  ReleaseSession(session);
  return folded;
}

void Trail::ReleaseSession(const SessionRef& session) { Forget(session.ToString()); }

void Trail::Forget(const std::string& key) {
  autos_.erase(key);
  roots_.erase(key);
  // Its branch scopes still open here (another process may fold them): no longer tracked.
  for (auto it = open_scopes_.begin(); it != open_scopes_.end();) {
    it = it->second.ToString() == key ? open_scopes_.erase(it) : std::next(it);
  }
}

absl::StatusOr<int> Trail::ForgetSweptSessions() {
  std::vector<std::string> gone;
  for (const auto& [key, root] : roots_) {
    ASSIGN_OR_RETURN(std::optional<Scope> scope, store_.GetScope(root));
    if (!scope.has_value()) gone.push_back(key);
  }
  for (const std::string& key : gone) Forget(key);
  return static_cast<int>(gone.size());
}

void Trail::ForgetCachedScopes() {
  roots_.clear();
  open_scopes_.clear();
  // An auto-scope whose opening was lost is not in the store; one that was committed stays open
  // there until RecoverAutoScopes folds it (the server calls it right after this).
  autos_.clear();
}

std::string FoldedViewText(const FoldedView& view) {
  int64_t saved = view.tokens_unfolded - view.tokens_folded;
  std::string auto_scopes = view.auto_scopes_open + view.auto_scopes_folded > 0
                                ? base::StrCat(view.auto_scopes_folded, " auto-scope(s) folded, ",
                                               view.auto_scopes_open, " open, ")
                                : "";
  std::string pct = view.tokens_unfolded > 0
                        ? base::StrCat(" (", saved * 100 / view.tokens_unfolded, "% less)")
                        : "";
  return base::StrCat("session ", view.root_scope_id, ": ", view.tokens_unfolded,
                      " tokens unfolded, ", view.tokens_folded, " tokens folded", pct, "; ",
                      view.scopes_open, " branch scope(s) open, ", view.scopes_folded, " folded, ",
                      auto_scopes, view.events, " event(s)\n", view.text);
}

}  // namespace contextd::trail
