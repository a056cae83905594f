// ServerConfig: everything `contextd serve` is configured with, read in three layers: built-in
// defaults, then a YAML file (--config), then CONTEXTD_* environment variables, then flags.
// An unknown key or a bad value is an error that names the key. Not thread-safe; built once at
// start and then read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "folding/config.h"
#include "gateway/upstream_config.h"
#include "model/auto_fold.h"
#include "scrub/rule_scrubber.h"
#include "store/backend_options.h"

namespace contextd::server {

// model_gateway.providers.<name>: a model provider the model gateway forwards to (the providers
// are the rows of model/model_api.h: anthropic, openai). model_gateway.<name>.<key> is an alias
// of model_gateway.providers.<name>.<key>, kept working for configurations written before.
struct ModelProviderConfig {
  // scheme://host[:port][/path]; for openai, the base URL as OpenAI clients take it (the path
  // ends where /chat/completions goes).
  std::string base_url;
  std::string ca_file;  // PEM CA file instead of the system trust store
  // Team mode: the environment variable holding the provider key contextd sends (never the key
  // itself); clients then authenticate with their tenant token. Empty: their own key passes.
  std::string api_key_env;
  int64_t connect_timeout_ms = 10'000;
  int64_t response_timeout_seconds = 600;  // request sent -> answer headers
  int64_t read_timeout_seconds = 600;      // between two reads of the answer
};

// "model_gateway.providers.<provider>.<key>".
std::string ModelProviderKey(std::string_view provider, std::string_view key);
// InvalidArgument naming the provider key and its alias: "config key
// 'model_gateway.providers.<provider>.<key>' (alias 'model_gateway.<provider>.<key>'): <why>".
absl::Status BadModelProviderKey(std::string_view provider, std::string_view key,
                                 std::string_view why);

// model_gateway: contextd as the agent's model endpoint (on the HTTP listener).
struct ModelGatewayConfig {
  ModelGatewayConfig();
  bool enabled = true;
  int64_t max_body_bytes = 32 << 20;  // larger model requests get 413
  // model_gateway.providers: one entry for every provider of model::ModelProviders(), its
  // base_url that provider's default until configured.
  std::map<std::string, ModelProviderConfig> providers;
  // model_gateway.auto_fold: stale tool results folded into trail handles (docs/auto-fold.md).
  model::AutoFoldOptions auto_fold;
};

// An OpenAI-compatible endpoint the ReasoningBank may use (memory.distiller, memory.embeddings).
struct MemoryEndpointConfig {
  std::string base_url;  // empty: not used
  std::string model;
  std::string api_key_env;  // the environment variable holding its key (never the key itself)
  int64_t timeout_ms = 30'000;
};

// memory: the ReasoningBank (docs/memory.md). The injection settings (injection_budget_ratio,
// memory_min_confidence, memory_max_items) are context_folding keys, as in the seed.
struct MemoryConfig {
  bool enabled = true;
  bool extract_memory = false;  // distil every returned branch, not only those that ask
  std::string extract_scope = "project";
  bool auto_confirm = false;
  bool org_across_tenants = false;  // org-scoped items reach every tenant (docs/memory.md)
  // Lessons at the start of a task through the model gateway (model/lessons.h, decision 0038):
  // on/off for the deployment (a request turns them off with x-contextd-memory: off), and the
  // most tokens one injection may take (0: none).
  bool session_injection = true;
  int64_t session_injection_tokens = 1500;
  MemoryEndpointConfig distiller;
  MemoryEndpointConfig embeddings{"", "", "", 5'000};
};

// events.nats: branch and memory events published to NATS (docs/events.md). Empty url: off.
struct NatsEventsConfig {
  std::string url;                          // nats://host:port[,nats://...]; tls:// for TLS
  std::string subject_prefix = "contextd";  // subjects <prefix>.<tenant>.<project>.<session>.<type>
  bool jetstream = false;                   // publish into a stream, acked, deduplicated
  std::string stream;                       // the JetStream stream (created if missing)
  std::string credentials_file;             // NATS .creds file; optional
  std::string tls_ca_file;                  // PEM CA to verify the server (turns TLS on)
  int64_t queue_size = 10'000;              // events waiting to be published; more are dropped
  int64_t reconnect_wait_ms = 1'000;        // between reconnect attempts
  // The outbox (decision 0027): events not published for this long, or beyond this many rows,
  // are given up (counted as dropped, reason outbox_trimmed).
  int64_t outbox_max_age_s = 86'400;
  int64_t outbox_max_rows = 1'000'000;
};

// store: where contextd keeps its state (docs/postgres.md). SQLite (one file in the data
// directory, the default) or PostgreSQL (several instances may share one database).
struct StoreConfig {
  std::string backend = "sqlite";  // "sqlite" or "postgres"
  // store.postgres.url: a libpq URL or conninfo. It may hold a password: never logged (only its
  // redacted form); prefer PGPASSWORD/PGPASSFILE or CONTEXTD_STORE_POSTGRES_URL in production.
  std::string postgres_url;
  int64_t postgres_pool_size = 8;  // connections per instance
  // How often at most an instance writes a shared MCP session's last-seen time and checks that
  // no other instance ended it (decision 0025), in ms; 0: on every request.
  int64_t postgres_session_sync_ms = 2000;
};

// retention: how long contextd keeps what it stores (decision 0031, docs/configuration.md), in
// days; 0 keeps it forever. The sweep runs on a thread of its own every sweep_interval_s (0: only
// `contextd trail prune`), in transactions of about batch_rows rows.
struct RetentionConfig {
  int64_t trail_days = 30;            // a session's trail after its last activity
  int64_t usage_detail_days = 30;     // per-request usage; daily totals are kept forever
  int64_t conversation_days = 90;     // a model conversation's decisions after it was last seen
  int64_t memory_history_days = 180;  // memory_history rows (each item keeps its newest)
  int64_t sweep_interval_s = 3600;
  int64_t batch_rows = 500;
};

struct ServerConfig {
  // server:
  std::string transport = "http";         // "stdio" or "http"
  std::string listen = "127.0.0.1:9090";  // ADDR:PORT; port 0 picks a free port
  std::string data_dir;  // empty: $XDG_DATA_HOME/contextd or ~/.local/share/contextd
  std::string log_level = "info";
  int64_t max_message_bytes = 4 << 20;
  std::string auth_token_file;               // one token per line, optional "tenant:" prefix
  std::vector<std::string> allowed_origins;  // empty: loopback origins only
  std::vector<std::string> allowed_hosts;    // empty: loopback hosts only
  int64_t http_threads = 2;
  bool conformance_fixtures = false;
  // context_folding:
  folding::FoldingConfig folding;
  // tokens:
  std::string token_encoding = "o200k_base";
  // scrub: rules_file, extend_default (true: the built-in rules stay under rules_file's; false: the
  // file decides as in gitleaks, see scrub::ResolveRules and docs/configuration.md),
  // archive_originals, key_file.
  scrub::ScrubConfig scrub;
  // trail:
  // Consecutive upstream calls outside any branch form an auto-scope that folds by itself when
  // the agent turns to another upstream, calls a contextd tool, or the session ends.
  bool trail_auto_scope_upstreams = false;
  // model_gateway: (nested: model_gateway.providers.anthropic.base_url, ...)
  ModelGatewayConfig model_gateway;
  // memory: (nested: memory.distiller.base_url, ...)
  MemoryConfig memory;
  // events: (nested: events.nats.url, ...)
  NatsEventsConfig nats_events;
  // store: (nested: store.backend, store.postgres.url, store.postgres.pool_size)
  StoreConfig store;
  // retention: (retention.trail_days, ...)
  RetentionConfig retention;
  // upstreams: the MCP servers contextd fronts (a YAML list; file only).
  std::vector<gateway::UpstreamConfig> upstreams;
};

// Reads a YAML file into `config` (only the keys present change). InvalidArgument names the file,
// the key and the problem for an unknown key, a wrong type or a bad value; NotFound if the file
// cannot be read.
absl::Status LoadConfigFile(const std::string& path, ServerConfig* config);

// Applies CONTEXTD_<SECTION>_<KEY> variables (e.g. CONTEXTD_CONTEXT_FOLDING_MAX_DEPTH=4) from
// `getenv`. A variable under a section's prefix (CONTEXTD_SERVER_, CONTEXTD_CONTEXT_FOLDING_,
// CONTEXTD_TOKENS_, CONTEXTD_SCRUB_, CONTEXTD_TRAIL_) that names no key is an error, as is a bad
// value; other CONTEXTD_ variables are not config and are ignored.
absl::Status ApplyEnvironment(const std::function<const char*(const char*)>& getenv_fn,
                              const std::vector<std::string>& env_names, ServerConfig* config);

// Sets one key given as "section.key" to `value` (the string form: numbers, true/false, or a
// comma-separated list for list keys). InvalidArgument names the key.
absl::Status SetConfigValue(std::string_view dotted_key, std::string_view value,
                            ServerConfig* config);

// Checks cross-field rules (ranges, transport names). InvalidArgument names the key.
absl::Status ValidateConfig(const ServerConfig& config);

// The data directory to use: config.data_dir, else $XDG_DATA_HOME/contextd, else
// $HOME/.local/share/contextd.
std::string ResolveDataDir(const ServerConfig& config);

// The server's store (store.*): PostgreSQL at store.postgres.url with a pool of
// store.postgres.pool_size, migrated at open; or the SQLite file contextd.db in the data
// directory (ResolveDataDir), created if missing.
store::BackendOptions ServerBackendOptions(const ServerConfig& config);

// Every known key as "section.key", for help text and tests.
std::vector<std::string> KnownConfigKeys();

}  // namespace contextd::server
