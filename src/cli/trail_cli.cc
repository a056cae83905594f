#include "cli/trail_cli.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/clock.h"
#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/store_cli.h"
#include "cli/usage_cli.h"
#include "folding/branch.h"
#include "nlohmann/json.hpp"
#include "server/config.h"
#include "server/retention_runner.h"
#include "store/backend.h"
#include "trail/trail.h"

namespace contextd::cli {
namespace {

using Json = nlohmann::json;

struct Stores {
  std::unique_ptr<store::Backend> backend;
  std::unique_ptr<folding::BranchStore> branches;
  std::unique_ptr<trail::TrailStore> trail;
};

// Read-only use: a PostgreSQL schema older than this binary is refused, not migrated. A one-shot
// command: no indexing thread; a search brings the index up to date itself.
absl::StatusOr<Stores> OpenStores(const TrailCommand& command) {
  Stores s;
  ASSIGN_OR_RETURN(s.backend, OpenCommandBackend(command.store, command.data_dir));
  ASSIGN_OR_RETURN(s.branches, s.backend->OpenBranchStore());
  ASSIGN_OR_RETURN(s.trail, s.backend->OpenTrailStore());
  return s;
}

Json ScopeJson(const trail::Scope& s) {
  Json j{{"scope_id", s.id},
         {"kind", trail::ScopeKindName(s.kind)},
         {"parent_scope_id", s.parent_id.empty() ? Json(nullptr) : Json(s.parent_id)},
         {"description", s.description},
         {"status", trail::ScopeStatusName(s.status)},
         {"summary", s.summary},
         {"summary_tokens", s.summary_tokens},
         {"created_at_ms", s.created_at_ms},
         {"folded_at_ms", s.folded_at_ms},
         {"event_count", s.event_count},
         {"event_tokens", s.event_tokens}};
  return j;
}

absl::Status List(Stores& s, std::ostream& out) {
  ASSIGN_OR_RETURN(auto sessions, s.trail->ListSessions("", 1000));
  if (sessions.empty()) out << "no sessions in the trail\n";
  for (const auto& session : sessions) {
    ASSIGN_OR_RETURN(auto scopes, s.trail->ListScopes(session.root_scope_id));
    int64_t autos = 0;
    for (const auto& scope : scopes) autos += scope.kind == trail::ScopeKind::kAuto ? 1 : 0;
    out << "session " << session.root_scope_id << "  " << session.session.ToString() << "  "
        << session.scope_count - 1 - autos << " branch(es), ";
    if (autos > 0) out << autos << " auto-scope(s), ";
    out << session.event_tokens << " tokens recorded\n";
    for (const auto& scope : scopes) {
      if (scope.kind == trail::ScopeKind::kAuto) {
        // Top level, like a depth-0 branch; a folded one with its summary.
        out << "  " << scope.id << "  auto  " << scope.event_tokens << " tokens  scope "
            << trail::ScopeStatusName(scope.status) << "  " << scope.description;
        if (scope.status == trail::ScopeStatus::kFolded) out << " :: " << scope.summary;
        out << "\n";
        continue;
      }
      if (scope.kind != trail::ScopeKind::kBranch) continue;
      ASSIGN_OR_RETURN(std::optional<folding::Branch> branch, s.branches->Get(scope.id));
      std::string status = branch ? folding::BranchStatusName(branch->status) : "unknown";
      std::string tokens = branch ? base::StrCat(branch->tokens_used, "/", branch->budget_allocated)
                                  : base::StrCat(scope.event_tokens);
      int depth = branch ? branch->depth : 0;
      out << "  " << std::string(static_cast<size_t>(std::max(depth, 0)) * 2, ' ') << scope.id
          << "  depth " << depth << "  " << status << "  " << tokens << " tokens  scope "
          << trail::ScopeStatusName(scope.status) << "  " << scope.description << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status Export(Stores& s, const std::string& only, std::ostream& out) {
  ASSIGN_OR_RETURN(auto sessions, s.trail->ListSessions("", 1000000));
  Json list = Json::array();
  bool found = only.empty();
  for (const auto& session : sessions) {
    if (!only.empty() && session.root_scope_id != only) continue;
    found = true;
    Json scopes = Json::array();
    ASSIGN_OR_RETURN(auto all, s.trail->ListScopes(session.root_scope_id));
    for (const auto& scope : all) {
      Json j = ScopeJson(scope);
      ASSIGN_OR_RETURN(std::optional<folding::Branch> branch, s.branches->Get(scope.id));
      if (branch) {
        j["branch"] = Json{{"status", folding::BranchStatusName(branch->status)},
                           {"depth", branch->depth},
                           {"tokens_used", branch->tokens_used},
                           {"budget_allocated", branch->budget_allocated},
                           {"finish_reason", branch->finish_reason}};
      }
      ASSIGN_OR_RETURN(trail::EventPage page,
                       s.trail->ListEvents(scope.id, 0, std::max<int64_t>(scope.event_count, 1)));
      Json events = Json::array();
      for (const auto& e : page.events) {
        events.push_back(Json{{"seq", e.seq},
                              {"kind", trail::EventKindName(e.kind)},
                              {"label", e.label},
                              {"payload", e.payload},
                              {"sha256", e.payload_hash},
                              {"tokens", e.tokens},
                              {"is_error", e.is_error},
                              {"at_ms", e.at_ms}});
      }
      j["events"] = std::move(events);
      scopes.push_back(std::move(j));
    }
    list.push_back(Json{{"session_scope_id", session.root_scope_id},
                        {"tenant", session.session.tenant},
                        {"project", session.session.project},
                        {"session_id", session.session.session_id},
                        {"created_at_ms", session.created_at_ms},
                        {"scopes", std::move(scopes)}});
  }
  if (!found) return absl::NotFoundError(base::StrCat("session ", only, " not found"));
  out << base::DumpJson(Json{{"sessions", std::move(list)}}, 2) << "\n";
  return absl::OkStatus();
}

// One retention sweep, printed as one line (a dry run: what would go).
absl::Status Prune(const TrailCommand& c, std::ostream& out) {
  store::RetentionPolicy policy = server::RetentionPolicyFrom(c.retention);
  policy.dry_run = c.dry_run;
  policy.pause_us = 0;  // nothing else to make way for but a server, which waits its busy timeout
  if (!c.older_than.empty()) {
    const char unit = c.older_than.back();
    absl::StatusOr<int64_t> since = ParseSince(c.older_than, c.now_ms);
    if (!since.ok() || (unit != 'm' && unit != 'h' && unit != 'd')) {
      return absl::InvalidArgumentError(
          base::StrCat("--older-than '", c.older_than, "': expected a duration (30m, 24h, 7d)"));
    }
    policy.trail_ms = std::max<int64_t>(1, c.now_ms - *since);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::Backend> backend,
                   OpenCommandBackend(c.store, c.data_dir));
  {
    ASSIGN_OR_RETURN(std::unique_ptr<store::RetentionStore> retention,
                     backend->OpenRetentionStore());
    ASSIGN_OR_RETURN(store::RetentionReport report, retention->Sweep(policy, c.now_ms));
    out << (c.dry_run ? "would have " : "") << store::RetentionSummary(report) << "\n";
  }
  if (c.vacuum && !c.dry_run) {
    ASSIGN_OR_RETURN(store::VacuumReport vacuum, backend->Vacuum());
    if (!vacuum.vacuumed) {
      out << "--vacuum: PostgreSQL gives space back by its own autovacuum\n";
      return absl::OkStatus();
    }
    out << "vacuumed " << vacuum.path << " (" << vacuum.bytes_before
        << " bytes before); later sweeps give space back by themselves\n";
  }
  return absl::OkStatus();
}

absl::Status Run(const TrailCommand& c, std::ostream& out) {
  if (c.command == "prune") return Prune(c, out);
  ASSIGN_OR_RETURN(Stores s, OpenStores(c));
  if (c.command == "list") return List(s, out);
  if (c.command == "export") return Export(s, c.id, out);
  base::RealClock clock;
  trail::Trail trail(*s.trail, clock);
  if (c.command == "show") {
    // As context_view: --depth d shows branches at depth 0 to d open.
    ASSIGN_OR_RETURN(trail::FoldedView view, trail.ViewRoot(c.id, c.depth < 0 ? -1 : c.depth + 1));
    out << trail::FoldedViewText(view);
    return absl::OkStatus();
  }
  if (c.command == "unfold") {
    ASSIGN_OR_RETURN(std::optional<trail::Scope> scope, s.trail->GetScope(c.id));
    if (!scope) return absl::NotFoundError(base::StrCat("scope ", c.id, " not found"));
    ASSIGN_OR_RETURN(trail::EventPage page, s.trail->ListEvents(c.id, c.offset, c.limit));
    out << trail::ScopeKindName(scope->kind) << " " << scope->id << " ["
        << trail::ScopeStatusName(scope->status) << "] " << scope->description << "\n";
    if (scope->status == trail::ScopeStatus::kFolded) out << "summary: " << scope->summary << "\n";
    out << "events " << c.offset + 1 << "-" << c.offset + static_cast<int64_t>(page.events.size())
        << " of " << page.total << "\n";
    for (const auto& e : page.events) {
      out << "#" << e.seq << " " << trail::EventKindName(e.kind);
      if (!e.label.empty()) out << " " << e.label;
      if (e.is_error) out << " [error]";
      out << " (" << e.tokens << " tokens)\n" << e.payload << "\n";
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(base::StrCat("unknown trail command '", c.command, "'"));
}

}  // namespace

int RunTrailCommand(const TrailCommand& command, std::ostream& out, std::ostream& err) {
  absl::Status st = Run(command, out);
  if (!st.ok()) {
    err << "contextd trail " << command.command << ": " << st.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace contextd::cli
