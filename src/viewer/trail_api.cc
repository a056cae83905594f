#include "viewer/trail_api.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/foreign_text.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"

namespace contextd::viewer {
namespace {

using Json = nlohmann::json;

constexpr int64_t kDefaultSessionLimit = 100;
constexpr int64_t kMaxSessionLimit = 500;
constexpr int64_t kDefaultEventLimit = 100;
constexpr int64_t kDefaultSearchLimit = 20;
constexpr int64_t kMaxSearchLimit = 50;
// Folded views kept (root id -> totals); the oldest entries go first beyond this.
constexpr size_t kTokensCacheSize = 1024;
constexpr int64_t kMsPerDay = 86'400'000;
constexpr std::string_view kMarker = "[REDACTED:";

ApiResponse Reply(int status, const Json& body) {
  return ApiResponse{status, base::DumpJson(body)};
}

ApiResponse Error(int status, std::string_view message) {
  return Reply(status, Json{{"error", std::string(message)}});
}

// An HTTP status for a store failure or a lookup miss.
ApiResponse FromStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return Error(404, std::string(status.message()));
    case absl::StatusCode::kInvalidArgument:
      return Error(400, std::string(status.message()));
    default:
      return Error(500, base::StrCat("store: ", status.message()));
  }
}

// Parses an integer parameter in [min, max]; `fallback` when absent.
absl::StatusOr<int64_t> IntParam(std::string_view query, std::string_view name, int64_t fallback,
                                 int64_t min, int64_t max) {
  std::optional<std::string> v = QueryParam(query, name);
  if (!v) return fallback;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || out < min || out > max) {
    return absl::InvalidArgumentError(
        base::StrCat("parameter '", name, "' must be an integer in ", min, "..", max));
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 &&
               HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence.
std::string_view Prefix(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

std::string Day(int64_t at_ms) {
  std::time_t t = static_cast<std::time_t>(at_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

Json ScopeJson(const trail::Scope& s) {
  Json out{{"id", s.id},
           {"kind", trail::ScopeKindName(s.kind)},
           {"parent_id", s.parent_id.empty() ? Json(nullptr) : Json(s.parent_id)},
           {"project", s.session.project},
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

Json EventJson(const trail::Event& e, bool whole) {
  std::string_view payload =
      whole ? std::string_view(e.payload) : Prefix(e.payload, kApiPreviewBytes);
  Json out{{"seq", e.seq},
           {"scope_id", e.scope_id},
           {"kind", trail::EventKindName(e.kind)},
           {"label", e.label},
           {"payload", std::string(payload)},
           {"payload_bytes", e.payload.size()},
           {"truncated", payload.size() < e.payload.size()},
           {"sha256", e.payload_hash},
           {"tokens", e.tokens},
           {"is_error", e.is_error},
           {"at_ms", e.at_ms}};
  std::vector<std::string> rules = RedactionRules(e.payload);
  out["redactions"] = rules.size();
  if (whole) out["redaction_rules"] = rules;
  return out;
}

Json BranchJson(const folding::Branch& b) {
  return Json{{"status", folding::BranchStatusName(b.status)},
              {"depth", b.depth},
              {"budget_allocated", b.budget_allocated},
              {"tokens_used", b.tokens_used},
              {"reserved_for_children", b.reserved_for_children},
              {"deadline_ms", b.deadline_wall_ms},
              {"finished_at_ms", b.finished_at_ms},
              {"finish_reason", b.finish_reason},
              {"forced", b.status == folding::BranchStatus::kTimeout ||
                             b.status == folding::BranchStatus::kBudgetExhausted ||
                             b.status == folding::BranchStatus::kFailed}};
}

std::string FingerprintOf(const std::vector<trail::Scope>& scopes) {
  int64_t events = 0;
  int64_t folded = 0;
  for (const trail::Scope& s : scopes) {
    events += s.event_count;
    if (s.status == trail::ScopeStatus::kFolded) ++folded;
  }
  return base::StrCat(scopes.size(), ".", events, ".", folded);
}

// Splits "/a/b/c" after `prefix` into its segments.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

std::optional<std::string> QueryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    if (Decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string() : Decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::vector<std::string> RedactionRules(std::string_view text) {
  std::vector<std::string> rules;
  size_t pos = 0;
  while ((pos = text.find(kMarker, pos)) != std::string_view::npos) {
    size_t start = pos + kMarker.size();
    size_t end = text.find_first_of(":]\n", start);
    if (end == std::string_view::npos) break;
    if (end > start) rules.emplace_back(text.substr(start, end - start));
    pos = end;
  }
  return rules;
}

TrailApi::TrailApi(trail::Trail& trail, trail::TrailStore& store, folding::BranchStore& branches)
    : trail_(trail), store_(store), branches_(branches) {}

ApiResponse TrailApi::Get(std::string_view tenant, std::string_view path, std::string_view query) {
  constexpr std::string_view kPrefix = "/api/v1/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return Error(404, "no such API path");
  std::vector<std::string_view> seg = Segments(path.substr(kPrefix.size()));
  if (!seg.empty() && seg.back().empty()) seg.pop_back();  // a trailing slash
  try {
    if (seg.size() == 1 && seg[0] == "sessions") return Sessions(tenant, query);
    if (seg.size() == 3 && seg[0] == "sessions" && seg[2] == "scopes")
      return Scopes(tenant, seg[1]);
    if (seg.size() == 3 && seg[0] == "scopes" && seg[2] == "events") {
      return Events(tenant, seg[1], query);
    }
    if (seg.size() == 4 && seg[0] == "scopes" && seg[2] == "events") {
      return Event(tenant, seg[1], seg[3]);
    }
    if (seg.size() == 1 && seg[0] == "search") return Search(tenant, query);
    if (seg.size() == 1 && seg[0] == "stats") return Stats(tenant, query);
    if (seg.size() == 1 && seg[0] == "conversations") return Conversations(tenant, query);
  } catch (const std::exception& e) {
    // nlohmann or std throwing on data we hold: a 500, never a crash of the listener.
    return Error(500, base::StrCat("internal error: ", e.what()));
  }
  return Error(404, base::StrCat("no such API path: ", path));
}

absl::StatusOr<TrailApi::Tokens> TrailApi::SessionTokens(const std::string& root,
                                                         const std::vector<trail::Scope>& scopes) {
  std::string fp = FingerprintOf(scopes);
  auto it = tokens_cache_.find(root);
  if (it != tokens_cache_.end() && it->second.fingerprint == fp) return it->second.tokens;
  auto view = trail_.ViewRoot(root, 0);
  if (!view.ok()) return view.status();
  Tokens t{view->tokens_unfolded, view->tokens_folded};
  if (tokens_cache_.size() >= kTokensCacheSize && it == tokens_cache_.end()) {
    tokens_cache_.erase(tokens_cache_.begin());  // any entry: a recompute is only slower
  }
  tokens_cache_[root] = CachedTokens{std::move(fp), t};
  return t;
}

absl::StatusOr<std::string> TrailApi::RootOf(const trail::Scope& scope) {
  trail::Scope s = scope;
  for (int hops = 0; hops < 64 && !s.parent_id.empty(); ++hops) {
    auto parent = store_.GetScope(s.parent_id);
    if (!parent.ok()) return parent.status();
    if (!parent->has_value()) return absl::NotFoundError("parent scope missing");
    s = **parent;
  }
  return s.id;
}

absl::StatusOr<std::string> TrailApi::Fingerprint(std::string_view tenant, std::string_view root) {
  auto scopes = store_.ListScopes(root);
  if (!scopes.ok()) return scopes.status();
  if (scopes->empty() || scopes->front().kind != trail::ScopeKind::kSession ||
      scopes->front().session.tenant != tenant) {
    return absl::NotFoundError(base::StrCat("session ", root, " not found"));
  }
  return FingerprintOf(*scopes);
}

ApiResponse TrailApi::Sessions(std::string_view tenant, std::string_view query) {
  auto limit = IntParam(query, "limit", kDefaultSessionLimit, 1, kMaxSessionLimit);
  if (!limit.ok()) return FromStatus(limit.status());
  auto sessions = store_.ListSessions(tenant, *limit);
  if (!sessions.ok()) return FromStatus(sessions.status());
  Json list = Json::array();
  for (const trail::SessionEntry& s : *sessions) {
    auto scopes = store_.ListScopes(s.root_scope_id);
    if (!scopes.ok()) return FromStatus(scopes.status());
    auto tokens = SessionTokens(s.root_scope_id, *scopes);
    if (!tokens.ok()) return FromStatus(tokens.status());
    int64_t branches = 0, open_branches = 0, autos = 0, events = 0;
    for (const trail::Scope& sc : *scopes) {
      events += sc.event_count;
      if (sc.kind == trail::ScopeKind::kBranch) {
        ++branches;
        if (sc.status == trail::ScopeStatus::kOpen) ++open_branches;
      } else if (sc.kind == trail::ScopeKind::kAuto) {
        ++autos;
      }
    }
    const bool model = s.session.session_id.rfind("model:", 0) == 0;
    list.push_back(Json{{"root_id", s.root_scope_id},
                        {"tenant", s.session.tenant},
                        {"project", s.session.project},
                        {"session_id", s.session.session_id},
                        {"kind", model ? "model" : "mcp"},
                        {"created_at_ms", s.created_at_ms},
                        {"scopes", s.scope_count},
                        {"branches", branches},
                        {"open_branches", open_branches},
                        {"auto_scopes", autos},
                        {"events", events},
                        {"tokens_unfolded", tokens->unfolded},
                        {"tokens_folded", tokens->folded},
                        {"tokens_saved", tokens->unfolded - tokens->folded},
                        {"status", open_branches > 0 ? "active" : "idle"}});
  }
  return Reply(200, Json{{"tenant", std::string(tenant)}, {"sessions", std::move(list)}});
}

ApiResponse TrailApi::Scopes(std::string_view tenant, std::string_view root) {
  auto scopes = store_.ListScopes(root);
  if (!scopes.ok()) return FromStatus(scopes.status());
  if (scopes->empty() || scopes->front().kind != trail::ScopeKind::kSession ||
      scopes->front().session.tenant != tenant) {
    return Error(404, base::StrCat("session ", root, " not found"));
  }
  const trail::Scope& head = scopes->front();
  auto tokens = SessionTokens(std::string(root), *scopes);
  if (!tokens.ok()) return FromStatus(tokens.status());
  // The branches' budgets, statuses and deadlines (the branch store has them by session).
  std::unordered_map<std::string, folding::Branch> branches;
  auto listed = branches_.ListSession(
      folding::SessionKey{head.session.tenant, head.session.project, head.session.session_id});
  if (!listed.ok()) return FromStatus(listed.status());
  for (folding::Branch& b : *listed) branches.emplace(b.id, std::move(b));
  Json list = Json::array();
  for (const trail::Scope& s : *scopes) {
    Json j = ScopeJson(s);
    if (auto it = branches.find(s.id); it != branches.end()) j["branch"] = BranchJson(it->second);
    list.push_back(std::move(j));
  }
  return Reply(200, Json{{"root_id", std::string(root)},
                         {"session_id", head.session.session_id},
                         {"project", head.session.project},
                         {"fingerprint", FingerprintOf(*scopes)},
                         {"tokens_unfolded", tokens->unfolded},
                         {"tokens_folded", tokens->folded},
                         {"tokens_saved", tokens->unfolded - tokens->folded},
                         {"scopes", std::move(list)}});
}

ApiResponse TrailApi::Events(std::string_view tenant, std::string_view scope_id,
                             std::string_view query) {
  auto offset = IntParam(query, "offset", 0, 0, INT64_MAX / 2);
  if (!offset.ok()) return FromStatus(offset.status());
  auto limit = IntParam(query, "limit", kDefaultEventLimit, 1, kApiMaxEventLimit);
  if (!limit.ok()) return FromStatus(limit.status());
  auto scope = store_.GetScope(scope_id);
  if (!scope.ok()) return FromStatus(scope.status());
  if (!scope->has_value() || (*scope)->session.tenant != tenant) {
    return Error(404, base::StrCat("scope ", scope_id, " not found"));
  }
  auto page = store_.ListEvents(scope_id, *offset, *limit);
  if (!page.ok()) return FromStatus(page.status());
  Json events = Json::array();
  for (const trail::Event& e : page->events) events.push_back(EventJson(e, false));
  Json body{{"scope", ScopeJson(**scope)},
            {"offset", *offset},
            {"limit", *limit},
            {"total", page->total},
            {"events", std::move(events)}};
  const int64_t next = *offset + static_cast<int64_t>(page->events.size());
  body["next_offset"] = next < page->total ? Json(next) : Json(nullptr);
  return Reply(200, body);
}

ApiResponse TrailApi::Event(std::string_view tenant, std::string_view scope_id,
                            std::string_view seq_text) {
  int64_t seq = 0;
  auto [end, ec] = std::from_chars(seq_text.data(), seq_text.data() + seq_text.size(), seq);
  if (ec != std::errc() || end != seq_text.data() + seq_text.size() || seq < 1) {
    return Error(400, "event sequence number must be a positive integer");
  }
  auto scope = store_.GetScope(scope_id);
  if (!scope.ok()) return FromStatus(scope.status());
  if (!scope->has_value() || (*scope)->session.tenant != tenant) {
    return Error(404, base::StrCat("scope ", scope_id, " not found"));
  }
  auto event = store_.GetEvent(seq);
  if (!event.ok()) return FromStatus(event.status());
  if (!event->has_value() || (*event)->scope_id != scope_id) {
    return Error(404, base::StrCat("event ", seq, " not found in scope ", scope_id));
  }
  return Reply(200, Json{{"scope", ScopeJson(**scope)}, {"event", EventJson(**event, true)}});
}

ApiResponse TrailApi::Search(std::string_view tenant, std::string_view query) {
  std::optional<std::string> q = QueryParam(query, "q");
  if (!q || q->empty()) return Error(400, "parameter 'q' is required");
  auto limit = IntParam(query, "limit", kDefaultSearchLimit, 1, kMaxSearchLimit);
  if (!limit.ok()) return FromStatus(limit.status());
  // The index is per tenant and project: search each project the tenant's recent sessions have.
  auto sessions = store_.ListSessions(tenant, kMaxSessionLimit);
  if (!sessions.ok()) return FromStatus(sessions.status());
  std::set<std::string> projects;
  for (const trail::SessionEntry& s : *sessions) projects.insert(s.session.project);
  Json hits = Json::array();
  for (const std::string& project : projects) {
    auto found = store_.Search(tenant, project, *q, *limit);
    if (!found.ok()) return FromStatus(found.status());
    for (const trail::SearchHit& h : *found) {
      if (static_cast<int64_t>(hits.size()) >= *limit) break;
      auto root = RootOf(h.scope);
      if (!root.ok()) continue;  // a scope whose parents are gone: not reachable from the UI
      Json j = ScopeJson(h.scope);
      j["root_id"] = *root;
      j["snippet"] = h.snippet;
      hits.push_back(std::move(j));
    }
  }
  return Reply(200, Json{{"query", *q}, {"hits", std::move(hits)}});
}

ApiResponse TrailApi::Stats(std::string_view tenant, std::string_view query) {
  auto limit = IntParam(query, "limit", kDefaultSessionLimit, 1, kMaxSessionLimit);
  if (!limit.ok()) return FromStatus(limit.status());
  auto sessions = store_.ListSessions(tenant, *limit);
  if (!sessions.ok()) return FromStatus(sessions.status());
  Json per_session = Json::array();
  std::map<std::string, Tokens> per_day;
  Tokens total;
  for (const trail::SessionEntry& s : *sessions) {
    auto scopes = store_.ListScopes(s.root_scope_id);
    if (!scopes.ok()) return FromStatus(scopes.status());
    auto tokens = SessionTokens(s.root_scope_id, *scopes);
    if (!tokens.ok()) return FromStatus(tokens.status());
    per_session.push_back(Json{{"root_id", s.root_scope_id},
                               {"session_id", s.session.session_id},
                               {"created_at_ms", s.created_at_ms},
                               {"tokens_unfolded", tokens->unfolded},
                               {"tokens_folded", tokens->folded},
                               {"tokens_saved", tokens->unfolded - tokens->folded}});
    Tokens& d = per_day[Day(s.created_at_ms - s.created_at_ms % kMsPerDay)];
    d.unfolded += tokens->unfolded;
    d.folded += tokens->folded;
    total.unfolded += tokens->unfolded;
    total.folded += tokens->folded;
  }
  Json days = Json::array();
  for (const auto& [day, t] : per_day) {
    days.push_back(Json{{"day", day},
                        {"tokens_unfolded", t.unfolded},
                        {"tokens_folded", t.folded},
                        {"tokens_saved", t.unfolded - t.folded}});
  }
  return Reply(200, Json{{"sessions", std::move(per_session)},
                         {"days", std::move(days)},
                         {"tokens_unfolded", total.unfolded},
                         {"tokens_folded", total.folded},
                         {"tokens_saved", total.unfolded - total.folded}});
}

ApiResponse TrailApi::Conversations(std::string_view tenant, std::string_view query) {
  auto limit = IntParam(query, "limit", kApiDefaultConversationLimit, 1, kApiMaxConversationLimit);
  if (!limit.ok()) return FromStatus(limit.status());
  Json list = Json::array();
  if (conversations_ != nullptr) {
    auto recent = conversations_->RecentConversations(tenant, static_cast<int>(*limit));
    if (!recent.ok()) return FromStatus(recent.status());
    for (const model::ConversationSummary& c : *recent) {
      Json skipped = Json::object();
      int64_t skips = 0;
      for (const auto& [reason, n] : c.folds_skipped) {
        skipped[reason] = n;
        skips += n;
      }
      list.push_back(Json{{"conversation", c.conversation},
                          {"project", c.project},
                          {"requests", c.requests},
                          {"folds_made", c.folds_new},
                          {"folds_skipped", skips},
                          {"folds_skipped_by_reason", std::move(skipped)},
                          {"tokens_before", c.tokens_before},
                          {"tokens_after", c.tokens_after},
                          {"tokens_saved", c.tokens_before - c.tokens_after},
                          {"isolated_requests", c.isolated_requests},
                          {"view_tokens_spared", c.view_tokens_spared},
                          {"first_at_ms", c.first_at_ms},
                          {"last_at_ms", c.last_at_ms}});
    }
  }
  return Reply(200, Json{{"tenant", std::string(tenant)},
                         {"model_gateway", conversations_ != nullptr},
                         {"conversations", std::move(list)}});
}

}  // namespace contextd::viewer
