// Engine: everything `contextd serve` runs on, in construction order (destroyed in reverse), and
// the parts of building it that live in their own files. Internal to server/: RunServer builds
// one Engine and tears it down; members are used on the threads their comments name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "endpoints/openai_distiller.h"
#include "endpoints/openai_embedder.h"
#include "events/event_message.h"
#include "events/outbox_relay.h"
#include "events/publisher.h"
#include "folding/branch_ledger.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "folding/outbox_store.h"
#include "gateway/gateway.h"
#include "memory/hnsw_index.h"
#include "memory/memory_bank.h"
#include "model/context_manager.h"
#include "model/model_gateway.h"
#include "protocol/mcp_server.h"
#include "scrub/rule_scrubber.h"
#include "server/config.h"
#include "server/group_commit.h"
#include "server/metrics.h"
#include "server/retention_runner.h"
#include "server/shared_sessions.h"
#include "store/backend.h"
#include "tokens/lazy_encoding.h"
#include "tools/folding_tools.h"
#include "tools/memory_tools.h"
#include "tools/trail_recorder.h"
#include "tools/trail_tools.h"
#include "trail/trail.h"
#include "transport/http_client.h"
#include "viewer/trail_api.h"

namespace contextd::server::internal {

// Everything the server runs on, in construction order (destroyed in reverse).
struct Engine {
  std::unique_ptr<base::ThreadExecutor> executor;
  std::unique_ptr<tokens::LazyEncoding> counter;
  // Loads the counter's vocabulary in the background at start (joined before `counter` goes).
  std::jthread vocabulary_loader;
  std::shared_ptr<const scrub::Scrubber> scrubber;
  // The database (store/backend.h): SQLite (one connection shared by the branch, trail and
  // outbox stores) or PostgreSQL (one pool shared by every store); the engine's writes are
  // grouped, one commit per executor batch. Shared with /healthz's check (I/O threads).
  std::shared_ptr<store::Backend> backend;
  std::unique_ptr<folding::BranchStore> store;
  folding::EventBus events;
  Metrics metrics;
  // events.nats: publishes branch and memory events to NATS from its own thread (docs/events.md).
  // Stopped by ShutdownEngine after the last session ended; destroyed after every publisher.
  std::unique_ptr<events::Publisher> events_publisher;
  // events.nats: the transactional outbox (decision 0027): branch events are written in their
  // change's transaction, memory events appended; the relay publishes them through
  // events_publisher. Stopped by ShutdownEngine before the publisher.
  std::unique_ptr<folding::OutboxStore> outbox;
  std::unique_ptr<events::OutboxRelay> outbox_relay;
  // The ReasoningBank (memory.enabled): its own connection to the database, used off the executor;
  // the optional model endpoints (memory.distiller, memory.embeddings) and the vector index.
  std::unique_ptr<memory::MemoryStore> memory_store;
  std::vector<std::unique_ptr<transport::HttpClient>> memory_clients;
  std::unique_ptr<endpoints::OpenAiDistiller> memory_distiller;
  std::unique_ptr<endpoints::OpenAiEmbedder> memory_embedder;
  std::unique_ptr<memory::HnswIndex> memory_vectors;
  std::unique_ptr<memory::MemoryBank> memory_bank;
  std::unique_ptr<folding::BranchManager> manager;  // executor only
  std::unique_ptr<tools::FoldingTools> tools;       // executor only
  std::unique_ptr<trail::TrailStore> trail_store;
  std::unique_ptr<trail::Trail> trail;  // executor only
  // Both gateways charge branches and record calls through it (over manager, store and trail).
  std::unique_ptr<folding::BranchLedger> ledger;
  std::unique_ptr<tools::TrailTools> trail_tools;        // executor only
  std::unique_ptr<viewer::TrailApi> trail_api;           // executor only: the viewer's /api/v1
  std::unique_ptr<tools::MemoryTools> memory_tools;      // executor only (and its own worker)
  std::unique_ptr<tools::TrailRecorder> trail_recorder;  // the gateway records through it
  std::unique_ptr<gateway::Gateway> gateway;             // executor only
  std::unique_ptr<GroupCommit> group_commit;  // the McpServer's outbound gate: outlives it
  // The model gateway (HTTP only): its own connection to the database, so that a conversation's
  // decisions are durable before its request leaves, independent of the engine's group commit.
  std::unique_ptr<model::ConversationStore> conversations;
  // The bank as the context manager's lesson source (memory_lessons.h); null without memory or
  // with memory.session_injection off. Outlives the context manager, which it serves.
  std::unique_ptr<model::LessonSource> lessons;
  std::unique_ptr<model::ContextManager> context_manager;
  // Declared after the clients: destroyed first. RunServer stops it, destroys the clients, then
  // the gateway (see ModelGateway::Stop).
  // One client per model provider (model_gateway.providers.<name>), by name.
  std::map<std::string, std::unique_ptr<transport::HttpClient>> model_clients;
  std::unique_ptr<model::ModelGateway> model_gateway;
  std::shared_ptr<protocol::McpServer> mcp;
  // MCP sessions shared with other instances (postgres over HTTP only; decision 0025).
  std::shared_ptr<SharedSessions> shared_sessions;
  // The stdio session as its project was fixed (executor only): the signal handler ends it.
  std::shared_ptr<protocol::SessionInfo> stdio_session = [] {
    auto info = std::make_shared<protocol::SessionInfo>();
    info->session_id = "stdio";
    info->transport = "stdio";
    return info;
  }();
  // The retention sweep's thread (decision 0031); last, so that it stops first.
  std::unique_ptr<RetentionRunner> retention;
};

// How long an outbox row is its writer's alone: a killed instance's events are taken over by
// another this long after they were written (or last renewed). Renewed while the writer lives.
inline constexpr int64_t kOutboxLeaseMs = 15'000;

// The wall clock in unix milliseconds.
int64_t WallMillis();

// An event message as an outbox row written at `at_ms`, leased for kOutboxLeaseMs.
folding::OutboxEvent ToOutboxEvent(events::EventMessage m, int64_t at_ms);

// The ReasoningBank (memory_bank_setup.cc) over its own store of the engine's backend (SQLite:
// a connection of its own; PostgreSQL: the pool), with the endpoints memory.* configures. Errors
// from opening the store or from an endpoint's options.
absl::Status BuildMemoryBank(const ServerConfig& config, Engine& engine);

// The model gateway (model_gateway_setup.cc): a ContextManager over the conversation store (the
// engine's database), the outbound clients to the providers, and the routes' handler.
// `bearer_tokens`: token -> tenant. FailedPrecondition for a team-mode key that cannot be used.
absl::Status BuildModelGateway(const ServerConfig& config,
                               const std::map<std::string, std::string>& bearer_tokens,
                               Engine& engine);

// The retention sweep (retention_runner.cc, decision 0031): unless retention.sweep_interval_s is
// 0, a RetentionRunner over the backend's retention store (SQLite: a connection of its own;
// PostgreSQL: the pool) in `engine.retention`, its first sweep a minute after start.
// Unavailable/Internal if the store cannot be opened.
absl::Status StartRetention(const ServerConfig& config, Engine& engine);

}  // namespace contextd::server::internal
