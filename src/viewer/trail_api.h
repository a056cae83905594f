// TrailApi: the read-only JSON API of the trail viewer (/api/v1/...): sessions with their token
// totals, a session's scopes with their branches' budgets, a scope's events page by page, one
// event in full, full-text search, tokens-saved statistics and, with the model gateway, its
// conversations' folds made and skipped (/api/v1/conversations). Every read is scoped to the
// caller's tenant. Pure request -> response over the TrailStore and BranchStore (no HTTP: see
// ui_routes.h), so that tests drive it over a real SQLite file.
// Thread-safety: none; run it on one thread (the server runs it on the engine executor, where
// its cache of folded views lives).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "model/conversation_store.h"
#include "trail/trail.h"
#include "trail/trail_store.h"

namespace contextd::viewer {

// Largest page of events (GET /api/v1/scopes/{id}/events?limit=).
inline constexpr int64_t kApiMaxEventLimit = 200;
// Payload characters (bytes) shown per event in a page; the event's own URL has it whole.
inline constexpr size_t kApiPreviewBytes = 600;
// Conversations listed by GET /api/v1/conversations: by default, and at most (?limit=).
inline constexpr int64_t kApiDefaultConversationLimit = 20;
inline constexpr int64_t kApiMaxConversationLimit = 200;

// An answer of the API: an HTTP status and a JSON body ({"error": ...} for errors).
struct ApiResponse {
  int status = 200;
  std::string body;
};

class TrailApi {
 public:
  // `trail`, `store` and `branches` must outlive the API.
  TrailApi(trail::Trail& trail, trail::TrailStore& store, folding::BranchStore& branches);
  TrailApi(const TrailApi&) = delete;
  TrailApi& operator=(const TrailApi&) = delete;

  // The model gateway's store, for /api/v1/conversations (nullptr, the default: the gateway is
  // off and the list is empty). It must outlive the API.
  void SetConversations(model::ConversationStore* conversations) { conversations_ = conversations; }

  // Answers GET `path` (starting "/api/v1/") with query string `query` ("a=1&b=2", undecoded)
  // for `tenant`. 404 for unknown paths and for anything of another tenant, 400 for bad
  // parameters, 500 when the store fails; never throws.
  ApiResponse Get(std::string_view tenant, std::string_view path, std::string_view query);

  // What changes when the session rooted at `root` gets an event, a scope or a fold: a short
  // string compared by the live stream. NotFound when the root is not `tenant`'s session.
  absl::StatusOr<std::string> Fingerprint(std::string_view tenant, std::string_view root);

 private:
  struct Tokens {
    int64_t unfolded = 0;
    int64_t folded = 0;
  };
  ApiResponse Sessions(std::string_view tenant, std::string_view query);
  ApiResponse Scopes(std::string_view tenant, std::string_view root);
  ApiResponse Events(std::string_view tenant, std::string_view scope_id, std::string_view query);
  ApiResponse Event(std::string_view tenant, std::string_view scope_id, std::string_view seq);
  ApiResponse Search(std::string_view tenant, std::string_view query);
  ApiResponse Stats(std::string_view tenant, std::string_view query);
  ApiResponse Conversations(std::string_view tenant, std::string_view query);
  // The folded and unfolded totals of the session rooted at `root` (scopes as listed in
  // `scopes`), as context_view computes them; cached while the session's fingerprint holds.
  absl::StatusOr<Tokens> SessionTokens(const std::string& root,
                                       const std::vector<trail::Scope>& scopes);
  // The root scope id of `scope` (walking parents).
  absl::StatusOr<std::string> RootOf(const trail::Scope& scope);

  trail::Trail& trail_;
  trail::TrailStore& store_;
  folding::BranchStore& branches_;
  model::ConversationStore* conversations_ = nullptr;
  struct CachedTokens {
    std::string fingerprint;
    Tokens tokens;
  };
  std::map<std::string, CachedTokens> tokens_cache_;  // root id -> totals; bounded (see .cc)
};

// The query parameter `name` of `query` ("a=1&b=x%20y"), percent- and '+'-decoded; nullopt when
// absent. Exposed for tests.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name);

// The names of the redaction markers ("[REDACTED:<rule>:<prefix>]") in `text`, in order.
std::vector<std::string> RedactionRules(std::string_view text);

}  // namespace contextd::viewer
