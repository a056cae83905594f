#include "trail/trail.h"

#include <algorithm>
#include <limits>
#include <map>

#include "base/str_cat.h"
#include "base/ids.h"
#include "base/status_macros.h"

namespace contextd::trail {
namespace {

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

std::string OneLine(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max_chars) {
      // Do not cut a UTF-8 sequence: drop trailing continuation bytes of a partial character.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80) != 0) out.pop_back();
      return out + "...";
    }
    out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  }
  return out;
}

bool IsChildMarker(const Tree& tree, const Event& e) {
  return e.kind == EventKind::kBranchCreated && tree.scopes.count(e.label) > 0;
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
        total += c.status == ScopeStatus::kFolded ? c.summary_tokens : e.tokens + Cost(tree, e.label);
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
  if (c.status == ScopeStatus::kFolded) {
    AppendIndented(out, level,
                   base::StrCat("= branch ", c.id, " [folded: ",
                                SubtreeTokens(tree, c.id) + (created != nullptr ? created->tokens : 0),
                                " tokens -> ", c.summary_tokens, "] ", OneLine(c.description, 120),
                                " :: ", OneLine(c.summary, 2000)));
    return;
  }
  if (depth >= 0 && level + 1 > depth) {
    AppendIndented(out, level,
                   base::StrCat("+ branch ", c.id, " [open, ", c.event_count, " events, ",
                                Cost(tree, c.id), " tokens; trail_unfold to see] ",
                                OneLine(c.description, 120)));
    return;
  }
  AppendIndented(out, level, base::StrCat("+ branch ", c.id, " [open] ", OneLine(c.description, 120)));
  if (created != nullptr) {
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
      if (!placed.count(child)) RenderChild(tree, tree.scopes.at(child), nullptr, level, depth, out);
    }
  }
}

}  // namespace

Trail::Trail(TrailStore& store, const base::Clock& clock) : store_(store), clock_(clock) {}

absl::StatusOr<std::string> Trail::RootScope(const SessionRef& session) {
  std::string key = session.ToString();
  if (auto it = roots_.find(key); it != roots_.end()) return it->second;
  Scope root;
  root.id = base::TimeOrderedId("ses_");
  root.session = session;
  root.kind = ScopeKind::kSession;
  root.description = base::StrCat("session ", session.session_id);
  root.created_at_ms = clock_.WallMillis();
  RETURN_IF_ERROR(store_.OpenScope(root));
  roots_[key] = root.id;
  open_scopes_[root.id] = session;
  return root.id;
}

absl::Status Trail::OnBranchCreated(const SessionRef& session, std::string_view branch_id,
                                    std::string_view parent_branch_id,
                                    std::string_view description, std::string_view prompt,
                                    int64_t prompt_tokens) {
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
  RETURN_IF_ERROR(store_.OpenScope(scope));
  open_scopes_[scope.id] = session;
  NewEvent created;
  created.scope_id = parent;
  created.kind = EventKind::kBranchCreated;
  created.label = std::string(branch_id);
  created.payload = base::StrCat(description, "\n", prompt);
  created.tokens = prompt_tokens;
  created.at_ms = scope.created_at_ms;
  return store_.AppendEvents({created}).status();
}

absl::Status Trail::OnBranchWarning(std::string_view branch_id, std::string_view text) {
  NewEvent warning;
  warning.scope_id = std::string(branch_id);
  warning.kind = EventKind::kWarning;
  warning.payload = std::string(text);
  warning.at_ms = clock_.WallMillis();
  return store_.AppendEvents({warning}).status();
}

absl::Status Trail::OnBranchFolded(std::string_view branch_id, std::string_view summary,
                                   int64_t summary_tokens, bool forced, std::string_view reason) {
  ASSIGN_OR_RETURN(std::optional<Scope> scope, store_.GetScope(branch_id));
  if (!scope) return absl::NotFoundError(base::StrCat("scope ", branch_id, " not found"));
  if (scope->status == ScopeStatus::kFolded) return absl::OkStatus();
  NewEvent end;
  end.scope_id = std::string(branch_id);
  end.kind = forced ? EventKind::kForceReturn : EventKind::kBranchReturned;
  end.payload = forced ? base::StrCat(reason, "\n", summary) : std::string(summary);
  end.tokens = summary_tokens;
  end.at_ms = clock_.WallMillis();
  RETURN_IF_ERROR(store_.AppendEvents({end}).status());
  open_scopes_.erase(std::string(branch_id));
  return store_.FoldScope(branch_id, summary, summary_tokens, end.at_ms);
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
  NewEvent call{recorded.scope_id, EventKind::kToolCall, std::string(tool),
                std::string(arguments_text), tokens_args, false, now};
  NewEvent result{recorded.scope_id, EventKind::kToolResult, std::string(tool),
                  std::string(result_text), tokens_result, is_error, now};
  ASSIGN_OR_RETURN(std::vector<int64_t> seqs, store_.AppendEvents({call, result}));
  recorded.call_seq = seqs.at(0);
  recorded.result_seq = seqs.at(1);
  return recorded;
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

absl::StatusOr<std::vector<SearchHit>> Trail::Search(const SessionRef& session,
                                                     std::string_view query, int64_t limit) {
  return store_.Search(session.tenant, session.project, query, limit);
}

void Trail::EndSession(const SessionRef& session) {
  auto it = roots_.find(session.ToString());
  if (it == roots_.end()) return;
  open_scopes_.erase(it->second);
  roots_.erase(it);
}

void Trail::ForgetCachedScopes() {
  roots_.clear();
  open_scopes_.clear();
}

std::string FoldedViewText(const FoldedView& view) {
  int64_t saved = view.tokens_unfolded - view.tokens_folded;
  std::string pct = view.tokens_unfolded > 0
                        ? base::StrCat(" (", saved * 100 / view.tokens_unfolded, "% less)")
                        : "";
  return base::StrCat("session ", view.root_scope_id, ": ", view.tokens_unfolded,
                      " tokens unfolded, ", view.tokens_folded, " tokens folded", pct, "; ",
                      view.scopes_open, " branch scope(s) open, ", view.scopes_folded,
                      " folded, ", view.events, " event(s)\n", view.text);
}

}  // namespace contextd::trail
