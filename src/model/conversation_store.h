// ConversationStore: the durable state of the model gateway, as an interface (store/ implements it
// with SQLite; model/testing/ has an in-memory fake). Seen from the provider a conversation may
// only grow, so every rewrite the gateway makes (a fold, a redaction, an inserted notice) is a
// decision taken once, where its content first arrives, and repeated byte for byte on every later
// request of the conversation, across restarts and rule updates. This store keeps those decisions,
// the hashes of the messages already sent (the frontier: content before it is never rewritten
// anew) and the provider's usage per request. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::model {

// One conversation thread as the provider sees it.
struct ConversationKey {
  std::string tenant = "local";
  // x-claude-code-session-id (or the client's equivalent), else "m:" + the first message's hash.
  std::string conversation;
  // Hex hash of the first message: requests of one session that start differently (a title or
  // summary side request, a compacted restart) are separate threads with separate state.
  std::string thread;
  // The project of the request (X-Contextd-Project, decision 0022), for where its trail events
  // go. Not part of the thread's identity: the stores key on tenant, conversation and thread, so
  // a header added or changed mid-conversation never changes a decision.
  std::string project = "default";

  bool operator==(const ConversationKey&) const = default;
};

// Which kind of decision a Rewrite is; the store keeps them apart (the key spaces differ).
enum class RewriteKind {
  kBlock = 1,   // key: hash of an original content block; value: the block sent in its place
  kAppend = 2,  // key: hash of an original message; value: blocks appended to it (JSON, no [])
  kFold = 3,    // key: the branch_create tool_use id; value: the fold record (JSON)
  // key: hash of an original tool result block; value: the block sent in its place, its text a
  // handle naming where the trail keeps the result (auto-fold). Wins over a kBlock decision.
  kAutoFold = 4,
  kView = 5,  // key: the branch_create tool_use id; value: the branch view record (JSON)
  // key: hash of an original thinking block (or reasoning item); value: empty. The block is not
  // sent: an auto-fold step removed it with the thinking after its fold point (decision 0036).
  kDropThinking = 6,
  // key: hash of an original user message (a new task); value: the lessons appended to it
  // (LessonRecord, JSON: the block as sent and the memory ids; lessons.h, decision 0038).
  kLessons = 7,
};

// One durable rewrite decision. The first decision stored for a (kind, key) wins.
struct Rewrite {
  RewriteKind kind = RewriteKind::kBlock;
  std::string key;
  std::string value;

  bool operator==(const Rewrite&) const = default;
};

// What the store holds for one thread.
struct ConversationState {
  // Hashes of the original messages of the last request forwarded, in order (opaque bytes).
  std::vector<std::string> frontier;
  std::vector<Rewrite> rewrites;  // in the order they were first saved
  int64_t requests = 0;           // requests forwarded so far
  int64_t created_ms = 0;
  int64_t last_ms = 0;
};

// What one forwarded request changes, written atomically before the request leaves contextd.
struct ConversationUpdate {
  std::vector<std::string> frontier;  // replaces the stored frontier
  std::vector<Rewrite> new_rewrites;  // added; an existing (kind, key) keeps its first value
  int64_t at_ms = 0;                  // wall clock of the request
};

// The provider's usage of one request, with what contextd did to it.
struct UsageRecord {
  ConversationKey key;
  // The request's project (X-Contextd-Project, else "default"): an accounting label, not part of
  // the conversation's identity (a header added mid-conversation changes no decision).
  std::string project = "default";
  std::string request_id;  // contextd's id of the request ("mreq_" + hex)
  int64_t at_ms = 0;
  std::string api;        // "anthropic", "openai_chat"; "openai": passed through to OpenAI
  std::string model;      // as requested
  std::string branch_id;  // the innermost branch open at the request ("" = root)
  int status = 0;         // HTTP status relayed to the client (0: no answer, e.g. unreachable)
  int64_t input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t tokens_before = 0;  // contextd's count of the messages as the client sent them
  int64_t tokens_after = 0;   // and as forwarded
  int64_t duration_ms = 0;    // from the request's arrival to the end of the answer
  int folds_new = 0;          // branches folded for the first time by this request
  // Branches this request left whole, per reason (SkipReasonName; an open set of names). A
  // branch that cannot fold is counted again by each later request that still carries it.
  std::map<std::string, int> folds_skipped;
  // The view the open branch got (AppliedRequest::view: isolated, inherited, summary; "" at the
  // root) and the tokens the isolated view left out.
  std::string branch_view;
  int64_t view_tokens_spared = 0;
};

// Totals for `contextd status` and per-branch reporting.
struct UsageTotals {
  int64_t requests = 0;
  int64_t input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
  int64_t last_at_ms = 0;  // 0 when there is none
};

// What the model gateway sent while a branch was open (branch_status shows it): requests per view
// (the model's, branch_view.h) and the tokens the isolated view left out.
struct BranchViewUsage {
  int64_t isolated_requests = 0;
  int64_t inherited_requests = 0;
  int64_t view_tokens_spared = 0;
};

// One conversation (all its threads) as `contextd status` and the viewer show it: what the
// usage rows kept in detail say (rows the retention sweep rolled up into daily totals are not
// in it).
struct ConversationSummary {
  std::string conversation;
  std::string project;  // of its most recent request
  int64_t requests = 0;
  int64_t folds_new = 0;  // folds made (each fold is decided once)
  // Skips summed over its requests, per reason (see UsageRecord::folds_skipped).
  std::map<std::string, int64_t> folds_skipped;
  int64_t tokens_before = 0;  // summed over its requests
  int64_t tokens_after = 0;
  int64_t isolated_requests = 0;   // sent in a branch's isolated view
  int64_t view_tokens_spared = 0;  // what those views left out, summed
  int64_t first_at_ms = 0;
  int64_t last_at_ms = 0;

  bool operator==(const ConversationSummary&) const = default;
};

class ConversationStore {
 public:
  virtual ~ConversationStore() = default;

  // The thread's state, or nullopt if it was never saved. Internal/Unavailable on a database
  // error.
  virtual absl::StatusOr<std::optional<ConversationState>> Load(const ConversationKey& key) = 0;

  // Applies `update` atomically (creating the thread on first use): frontier replaced, new
  // rewrites added (first value wins), requests incremented, last_ms set. Durable when it
  // returns OK. Internal/Unavailable on a database error (nothing applied).
  virtual absl::Status Save(const ConversationKey& key, const ConversationUpdate& update) = 0;

  // Appends one usage row. Internal/Unavailable on a database error.
  virtual absl::Status RecordUsage(const UsageRecord& record) = 0;

  // Usage summed over `tenant`'s requests, or over those charged to `branch_id` when it is not
  // empty.
  virtual absl::StatusOr<UsageTotals> Totals(std::string_view tenant,
                                             std::string_view branch_id) = 0;

  // The views of the requests recorded with `branch_id` as their innermost open branch (detail
  // rows: those the retention sweep rolled up are not counted).
  virtual absl::StatusOr<BranchViewUsage> ViewUsage(std::string_view tenant,
                                                    std::string_view branch_id) = 0;

  // `tenant`'s `limit` conversations with the most recent requests, most recent first (ties:
  // by conversation), from their usage rows. Internal/Unavailable on a database error.
  virtual absl::StatusOr<std::vector<ConversationSummary>> RecentConversations(
      std::string_view tenant, int limit) = 0;
};

}  // namespace contextd::model
