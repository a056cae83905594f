#include "server/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "base/executor.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "events/event_message.h"
#include "events/publisher.h"
#include "folding/branch_manager.h"
#include "folding/engine_branch_ledger.h"
#include "folding/events.h"
#include "folding/text.h"
#include "gateway/gateway.h"
#include "memory/memory_bank.h"
#include "model/context_manager.h"
#include "model/model_gateway.h"
#include "protocol/mcp_server.h"
#include "protocol/tool_notices.h"
#include "scrub/originals_archive.h"
#include "scrub/private_spans.h"
#include "scrub/rule_scrubber.h"
#include "server/group_commit.h"
#include "server/health.h"
#include "server/internal/engine.h"
#include "server/metrics.h"
#include "server/shared_sessions.h"
#include "store/backend.h"
#include "tokens/lazy_encoding.h"
#include "tools/folding_tools.h"
#include "tools/memory_tools.h"
#include "tools/session_key.h"
#include "tools/trail_recorder.h"
#include "tools/trail_tools.h"
#include "trail/trail.h"
#include "transport/http_client.h"
#include "transport/http_server.h"
#include "transport/stdio_transport.h"
#include "viewer/trail_api.h"
#include "viewer/ui_routes.h"

namespace contextd::server {
namespace {

using internal::BuildMemoryBank;
using internal::BuildModelGateway;
using internal::Engine;
using internal::kOutboxLeaseMs;
using internal::StartRetention;
using internal::ToOutboxEvent;
using internal::WallMillis;

constexpr char kVersion[] = "0.1.0";
constexpr char kInstructions[] =
    "contextd folds context. For a subtask that will read or try many things (exploring files, "
    "searching, debugging), call branch_create first, work inside the branch, then call "
    "branch_return with a short summary of what matters: only the summary stays in your context.";

absl::Status SplitListen(const std::string& listen, std::string* host, uint16_t* port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        base::StrCat("config key 'server.listen': expected ADDR:PORT, got '", listen, "'"));
  }
  *host = listen.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  uint32_t p = 0;
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &p) || p > 65535) {
    return absl::InvalidArgumentError(
        base::StrCat("config key 'server.listen': bad port in '", listen, "'"));
  }
  *port = static_cast<uint16_t>(p);
  return absl::OkStatus();
}

// Reads bearer tokens: one per line, "token" (tenant "default") or "tenant:token"; '#' comments.
absl::StatusOr<std::map<std::string, std::string>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(base::StrCat("auth token file '", path, "' cannot be read"));
  }
  std::map<std::string, std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    std::string_view l = line;
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.front()))) l.remove_prefix(1);
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.remove_suffix(1);
    if (l.empty() || l.front() == '#') continue;
    std::string tenant = "default";
    std::string token(l);
    auto colon = l.find(':');
    if (colon != std::string_view::npos) {
      tenant = std::string(l.substr(0, colon));
      token = std::string(l.substr(colon + 1));
    }
    if (token.size() < 16) {
      return absl::InvalidArgumentError(
          base::StrCat("auth token file '", path, "': tokens must have at least 16 characters"));
    }
    tokens[token] = tenant;
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(base::StrCat("auth token file '", path, "' holds no token"));
  }
  return tokens;
}

// Longest startup wait for the upstreams' first catalogs; later ones arrive via list_changed.
constexpr auto kUpstreamStartupWait = std::chrono::seconds(10);

absl::StatusOr<std::shared_ptr<const scrub::Scrubber>> MakeScrubber(const ServerConfig& config,
                                                                    const std::string& data_dir) {
  ASSIGN_OR_RETURN(auto rules, scrub::BuildScrubber(config.scrub));
  if (!config.scrub.archive_originals) return std::shared_ptr<const scrub::Scrubber>(rules);
  ASSIGN_OR_RETURN(scrub::ArchiveKey key, scrub::LoadArchiveKey(config.scrub.key_file));
  ASSIGN_OR_RETURN(auto archive, scrub::FileOriginalsArchive::Open(data_dir + "/originals"));
  return std::shared_ptr<const scrub::Scrubber>(std::make_shared<scrub::ArchivingScrubber>(
      rules, std::move(key), std::shared_ptr<scrub::OriginalsArchive>(std::move(archive))));
}

// events.nats: the publisher, fed by the engine's event bus (branch events; memory events come
// through the bank's sink). Building a message is a JSON dump on the executor; the network is
// the publisher's own thread.
absl::Status StartEvents(const ServerConfig& config, Engine& engine) {
  const NatsEventsConfig& nats = config.nats_events;
  events::PublisherOptions options;
  options.url = nats.url;
  options.jetstream = nats.jetstream;
  options.stream = nats.stream;
  options.subject_prefix = nats.subject_prefix;
  options.credentials_file = nats.credentials_file;
  options.tls_ca_file = nats.tls_ca_file;
  options.queue_capacity = static_cast<size_t>(nats.queue_size);
  options.reconnect_wait_ms = nats.reconnect_wait_ms;
  Metrics* metrics = &engine.metrics;
  metrics->EventsEnabled();
  events::PublisherHooks hooks;
  hooks.published = [metrics] { metrics->EventPublished(); };
  hooks.dropped = [metrics](std::string_view reason) { metrics->EventDropped(reason); };
  hooks.duplicate = [metrics] { metrics->EventDuplicate(); };
  ASSIGN_OR_RETURN(engine.events_publisher, events::StartNatsPublisher(options, std::move(hooks)));

  // The transactional outbox (decision 0027): the BranchManager writes each branch event in its
  // change's transaction (its encoder is set in BuildEngine); the relay publishes committed rows.
  ASSIGN_OR_RETURN(engine.outbox, engine.backend->OpenOutboxStore());
  events::OutboxRelayOptions relay_options;
  relay_options.lease_ms = kOutboxLeaseMs;
  relay_options.max_age_ms = nats.outbox_max_age_s * 1000;
  relay_options.max_rows = nats.outbox_max_rows;
  events::OutboxRelayHooks relay_hooks;
  relay_hooks.dropped = [metrics](std::string_view reason, int64_t n) {
    metrics->EventDropped(reason, n);
  };
  relay_hooks.taken_over = [metrics](int64_t n) { metrics->EventsTakenOver(n); };
  relay_hooks.depth = [metrics](int64_t rows, double age) { metrics->EventOutboxDepth(rows, age); };
  engine.outbox_relay =
      std::make_unique<events::OutboxRelay>(*engine.outbox, *engine.events_publisher, relay_options,
                                            std::move(relay_hooks), [] { return WallMillis(); });
  // Rows written on the executor become readable when their group commits (both backends,
  // decisions 0008 and 0026): the group commit's after-delivery hook wakes the relay.
  return absl::OkStatus();
}

// The encoder of the BranchManager's outbox rows: the event's NATS message, leased to this
// instance (branch.charged stays in-process: nullopt).
folding::BranchManager::OutboxEncoder OutboxEncoder(const std::string& prefix) {
  return [prefix](const folding::BranchEvent& e) -> std::optional<folding::OutboxEvent> {
    auto message = events::BranchEventMessage(e, prefix, events::NewEventId());
    if (!message) return std::nullopt;
    return ToOutboxEvent(std::move(*message), e.at_ms);
  };
}

// With a shared PostgreSQL database: how often, and how long past a deadline, this instance looks
// for branches no instance timed out (their instance went away). Their sessions are loaded here;
// the deadline timers that arms fire at once and claim each branch (exactly one instance
// force-returns it: BranchStore::ClaimDeadline).
constexpr auto kDueSweepInterval = std::chrono::seconds(10);
constexpr int64_t kDueSweepGraceMs = 10'000;

void ScheduleDueSweep(Engine& engine) {
  engine.executor->PostAfter(kDueSweepInterval, [&engine] {
    if (!engine.manager) return;  // shutting down
    const int64_t now = engine.executor->clock().WallMillis();
    auto due = engine.backend->ListDueSessions(now - kDueSweepGraceMs, now, 100);
    if (!due.ok()) {
      base::LogWarn(base::StrCat("deadline sweep: ", due.status().message()));
    } else {
      for (const folding::SessionKey& session : *due) {
        absl::Status loaded = engine.manager->LoadSession(session);
        if (!loaded.ok()) {
          base::LogWarn(
              base::StrCat("deadline sweep: session ", session.ToString(), ": ", loaded.message()));
        }
      }
      engine.metrics.SetActiveBranches(engine.manager->active_branches());
    }
    ScheduleDueSweep(engine);
  });
}

// Shared MCP sessions (decision 0025): every `period`, ends the sessions no instance saw for the
// idle timeout, which no instance may hold any more (stopped, killed, or all released them), with
// `end` (force-returns their branches, folds their trail). Several instances sweeping at once end
// each session once (SharedSessions::EndIdle).
void ScheduleIdleSessionSweep(
    Engine& engine, std::chrono::milliseconds period,
    std::function<void(const protocol::SessionInfo&, std::string_view)> end) {
  engine.executor->PostAfter(period, [&engine, period, end = std::move(end)] {
    if (!engine.manager || !engine.shared_sessions) return;  // shutting down
    for (const protocol::SessionInfo& info : engine.shared_sessions->EndIdle(100)) {
      end(info, transport::kCloseIdle);
    }
    ScheduleIdleSessionSweep(engine, period, end);
  });
}

absl::Status BuildEngine(const ServerConfig& config, const RegisterFixtures& fixtures,
                         Engine& engine) {
  std::string data_dir = ResolveDataDir(config);
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        base::StrCat("cannot create data dir '", data_dir, "': ", ec.message()));
  }
  ::chmod(data_dir.c_str(), 0700);

  ASSIGN_OR_RETURN(engine.counter, tokens::LazyEncoding::Create(config.token_encoding));
  const tokens::TokenCounter* counter = engine.counter.get();
  // The vocabulary (~15 MB of rank tables) loads on the first count. A server counts on its first
  // branch_create, so it is loaded now, off the executor: loading it there held every session's
  // first requests for ~70 ms.
  engine.vocabulary_loader = std::jthread([loading = engine.counter.get()] {
    base::RunCatching("tokens", [loading] { loading->Get(); });
  });
  ASSIGN_OR_RETURN(engine.scrubber, MakeScrubber(config, data_dir));
  std::shared_ptr<const scrub::Scrubber> scrubber = engine.scrubber;
  // Logs may go to a file: private spans are withheld there too (before the scrub, so that a
  // secret inside one is not even archived).
  base::SetLogRedactor(
      [scrubber](std::string_view m) { return scrubber->Scrub(scrub::WithholdPrivate(m)); });

  // The schema migrated at open (PostgreSQL: under an advisory lock, so that instances starting
  // together migrate once). The branch and trail stores share the backend's connection (SQLite)
  // or pool (PostgreSQL, shared by every store of this instance).
  ASSIGN_OR_RETURN(engine.backend, store::OpenBackend(ServerBackendOptions(config)));
  ASSIGN_OR_RETURN(engine.store, engine.backend->OpenBranchStore());
  ASSIGN_OR_RETURN(engine.trail_store, engine.backend->OpenTrailStore());
  base::LogInfo(base::StrCat("data in ", engine.backend->Describe(), "; tokens counted with ",
                             counter->name()));
  // A database other instances may share: their live branches and open auto-scopes are not
  // this instance's to recover, deadlines are swept, MCP sessions shared (decisions 0023, 0025).
  const bool shared_db = engine.backend->shared();
  RETURN_IF_ERROR(StartRetention(config, engine));

  // Before the memory bank (its event sink) and recovery (branches it force-returns publish).
  if (!config.nats_events.url.empty()) RETURN_IF_ERROR(StartEvents(config, engine));
  if (config.memory.enabled) RETURN_IF_ERROR(BuildMemoryBank(config, engine));

  engine.executor = std::make_unique<base::ThreadExecutor>();
  engine.mcp = std::make_shared<protocol::McpServer>(
      *engine.executor, protocol::ServerInfo{"contextd", kVersion, kInstructions});

  absl::Status status;
  engine.executor->RunSync([&] {
    engine.manager =
        std::make_unique<folding::BranchManager>(config.folding, *engine.executor, *engine.store,
                                                 *counter, *engine.scrubber, &engine.events);
    if (engine.outbox)
      engine.manager->SetOutboxEncoder(OutboxEncoder(config.nats_events.subject_prefix));
    // Before Recover(): branches force-returned at startup fold their trail scopes.
    trail::TrailOptions trail_options;
    trail_options.auto_scope_upstreams = config.trail_auto_scope_upstreams;
    trail_options.count_tokens = [counter](std::string_view text) {
      return static_cast<int64_t>(counter->Count(text));
    };
    // <private> spans never reach the trail (its blobs, scopes and search index).
    trail_options.withhold = [](std::string_view text) { return scrub::WithholdPrivate(text); };
    // One root per session in the store (decision 0028), but the stdio session's id names the
    // process: each stdio run keeps a trail of its own.
    trail_options.process_sessions = {"stdio"};
    engine.trail = std::make_unique<trail::Trail>(*engine.trail_store, engine.executor->clock(),
                                                  std::move(trail_options));
    engine.ledger = std::make_unique<folding::EngineBranchLedger>(
        *engine.executor, *engine.manager, *engine.store, engine.trail.get(), *counter);
    engine.trail_tools =
        std::make_unique<tools::TrailTools>(*engine.trail, engine.events, *engine.store, *counter);
    engine.trail_api =
        std::make_unique<viewer::TrailApi>(*engine.trail, *engine.trail_store, *engine.store);
    if (shared_db) {
      // Other instances may share the database: the live branches and open auto-scopes in it
      // may be theirs, so start-up recovery (which force-returns and folds everything live)
      // does not run. Sessions load from the database on their next use (decision 0023).
      base::LogInfo(base::StrCat(engine.backend->name(),
                                 ": start-up recovery skipped (the database may be shared)"));
      ScheduleDueSweep(engine);
    }
    // Auto-scopes a crashed run left open fold now (whether or not auto-scopes are on now).
    auto autos = shared_db ? absl::StatusOr<int64_t>(0) : engine.trail->RecoverAutoScopes();
    if (!autos.ok()) {
      status = autos.status();
      return;
    }
    if (*autos > 0) {
      base::LogWarn(base::StrCat("folded ", *autos,
                                 " auto-scope(s) left open by a previous run (server restarted)"));
    }
    auto recovered = shared_db ? absl::StatusOr<folding::RecoverResult>(folding::RecoverResult{})
                               : engine.manager->Recover();
    if (!recovered.ok()) {
      status = recovered.status();
      return;
    }
    if (!recovered->force_returned.empty()) {
      base::LogWarn(base::StrCat("recovered ", recovered->force_returned.size(),
                                 " branch(es) left active by a previous run: force-returned "
                                 "(server restarted)"));
    }
    engine.metrics.SetActiveBranches(engine.manager->active_branches());
    engine.tools = std::make_unique<tools::FoldingTools>(*engine.manager, engine.events,
                                                         engine.metrics, *engine.scrubber);
    // Calling a contextd tool ends the agent's run of calls to one upstream.
    engine.tools->SetBeforeCall(
        [trail_tools = engine.trail_tools.get()](const protocol::SessionInfo& info) {
          trail_tools->FoldAutoScope(info);
        });
    status = engine.tools->Register(*engine.mcp);
    if (status.ok()) status = engine.trail_tools->Register(*engine.mcp);
    if (status.ok() && engine.memory_bank) {
      engine.memory_tools = std::make_unique<tools::MemoryTools>(
          *engine.memory_bank, *engine.manager, *engine.trail, engine.events, *engine.executor,
          engine.metrics,
          tools::MemoryToolsOptions{config.memory.extract_memory, config.memory.extract_scope});
      engine.tools->SetMemory(engine.memory_tools.get());
      status = engine.memory_tools->Register(*engine.mcp);
      engine.memory_tools->LoadVectors();
    }
  });
  RETURN_IF_ERROR(status);

  // Group commit from here on (recovery above committed write by write): the writes of every
  // request in one executor batch share one commit, and no reply leaves before it (decision
  // 0008). If a commit fails, the engine drops what it cached and follows the store again.
  // A session's project: its client's first root, else X-Contextd-Project, else "default"
  // (decision 0022). The stdio session's is kept for the signal handler's EndSession.
  if (shared_db && config.transport != "stdio") {
    // Any instance serves any MCP session (decision 0025).
    ASSIGN_OR_RETURN(std::unique_ptr<store::McpSessionStore> sessions,
                     engine.backend->OpenMcpSessionStore());
    engine.shared_sessions = std::make_shared<SharedSessions>(
        std::move(sessions), std::chrono::seconds(config.folding.session_idle_timeout_seconds));
  }
  SharedSessions* shared = engine.shared_sessions.get();
  engine.mcp->SetProjectResolver([stdio = engine.stdio_session, shared](
                                     const protocol::Json& roots, protocol::SessionInfo& info) {
    tools::ResolveSessionProject(roots, info);
    if (shared != nullptr) shared->ProjectFixed(info);
    base::LogInfo(base::StrCat("session ", info.session_id, " (tenant ", info.tenant, "): project ",
                               info.project, info.project_label.empty() ? "" : " ",
                               info.project_label));
    if (info.transport == "stdio") *stdio = info;
  });
  // Both backends: the writes the executor makes share one transaction per batch (SQLite:
  // decision 0008; PostgreSQL: decision 0026, writes made on other threads commit on their own).
  // After a group's replies: its outbox rows are committed, so readable by the relay; then the
  // backend's upkeep (SQLite restarts an oversized WAL, decision 0010).
  std::shared_ptr<store::Backend> backend = engine.backend;
  engine.group_commit = std::make_unique<GroupCommit>(
      *engine.executor, [backend] { return backend->CommitGroup(); },
      [manager = engine.manager.get(), trail = engine.trail.get(), shared_db](const absl::Status&) {
        absl::Status reloaded = manager->ReloadFromStore();
        if (!reloaded.ok()) {
          base::LogError(
              base::StrCat("reloading branches after a failed commit: ", reloaded.message()));
        }
        trail->ForgetCachedScopes();
        // Auto-scopes the trail no longer tracks would stay open until the next start: fold them
        // now from their recorded events, as start-up recovery does. Not on a shared database,
        // where open auto-scopes may be other instances' (as start-up recovery, decision 0023).
        if (shared_db) return;
        auto folded = trail->RecoverAutoScopes();
        if (!folded.ok()) {
          base::LogError(base::StrCat("folding auto-scopes after a failed commit: ",
                                      folded.status().message()));
        }
      },
      &engine.metrics,
      [backend, relay = engine.outbox_relay.get()] {
        if (relay != nullptr) relay->Wake();
        backend->AfterGroupDelivered();
      });
  engine.mcp->SetOutboundGate(engine.group_commit.get());
  std::thread::id executor_thread;
  engine.executor->RunSync([&] { executor_thread = std::this_thread::get_id(); });
  engine.backend->EnableGroupCommit(executor_thread,
                                    [gc = engine.group_commit.get()] { gc->OnGroupOpen(); });
  if (config.conformance_fixtures) {
    RETURN_IF_ERROR(fixtures(*engine.mcp));
    base::LogInfo("conformance fixtures registered");
  }

  if (!config.upstreams.empty()) {
    // The gateway fronts the configured upstream MCP servers (issue 6). Upstreams start
    // asynchronously; startup waits (bounded) for their first catalogs so that the first
    // tools/list already holds their tools; later ones arrive with tools/list_changed.
    gateway::GatewayDeps deps;
    deps.server = engine.mcp.get();
    deps.ledger = engine.ledger.get();
    deps.counter = counter;
    deps.scrubber = engine.scrubber.get();
    deps.session_key = tools::SessionKeyFor;
    tools::FoldingTools* folding_tools = engine.tools.get();
    engine.trail_recorder = std::make_unique<tools::TrailRecorder>(*engine.trail);
    deps.observer = engine.trail_recorder.get();
    deps.deliver_warnings = [folding_tools](protocol::ToolCall& call,
                                            protocol::ToolResult& result) {
      folding_tools->DeliverWarnings(call, result, protocol::kProxiedNoticesMember);
    };
    ASSIGN_OR_RETURN(engine.gateway, gateway::Gateway::Create(std::move(deps), config.upstreams));
    engine.executor->RunSync([&] { engine.gateway->Start(); });
    auto deadline = std::chrono::steady_clock::now() + kUpstreamStartupWait;
    bool settled = false;
    while (!settled && std::chrono::steady_clock::now() < deadline) {
      engine.executor->RunSync([&] { settled = engine.gateway->Settled(); });
      if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!settled) {
      base::LogWarn("upstreams still starting; their tools will follow with tools/list_changed");
    }
  }

  folding::BranchManager* manager = engine.manager.get();
  // Ends a session for good: force-returns its live branches, folds its trail.
  auto end_session = [manager, trail = engine.trail.get(), tools = engine.tools.get()](
                         const protocol::SessionInfo& info, std::string_view reason) {
    auto ended = manager->EndSession(tools::SessionKeyFor(info), reason);
    // After: force-returns fold into its scopes. Also folds the session's auto-scope.
    absl::Status trail_ended = trail->EndSession(tools::TrailSessionFor(info));
    if (!trail_ended.ok()) {
      base::LogWarn(base::StrCat("trail: ending session: ", trail_ended.message()));
    }
    tools->ForgetSession(info);  // no reply will carry its warnings: do not keep them
    if (!ended.ok()) {
      base::LogError(base::StrCat("ending session: ", ended.status().message()));
    } else if (!ended->force_returned.empty()) {
      base::LogInfo(base::StrCat("session ended (", reason, "): force-returned ",
                                 ended->force_returned.size(), " branch(es)"));
    }
  };
  protocol::SessionHooks hooks;
  hooks.on_close = [manager, tools = engine.tools.get(), trail = engine.trail.get(), shared,
                    end_session](const protocol::SessionInfo& info, std::string_view reason) {
    if (shared != nullptr && !shared->EndsEverywhere(info, reason)) {
      // Another instance may continue it: nothing ends, this one only stops caching it.
      manager->ReleaseSession(tools::SessionKeyFor(info));
      trail->ReleaseSession(tools::TrailSessionFor(info));
      tools->ForgetSession(info);
      return;
    }
    end_session(info, reason);
  };
  if (shared != nullptr) {
    ScheduleIdleSessionSweep(
        engine,
        std::clamp<std::chrono::milliseconds>(
            std::chrono::seconds(config.folding.session_idle_timeout_seconds) / 4,
            std::chrono::milliseconds(500), std::chrono::milliseconds(10'000)),
        end_session);
    hooks.on_initialized = [shared](const protocol::SessionInfo& info,
                                    const protocol::SessionResume& resume) {
      return shared->Record(info, resume);
    };
  }
  engine.mcp->SetSessionHooks(std::move(hooks));
  // After recovery: what it force-returned, and what the last run left, is published first.
  if (engine.outbox_relay) engine.outbox_relay->Start();
  return absl::OkStatus();
}

// Stops the outbox relay (it publishes what is committed for up to 2 s; the rest stays for the
// next start or another instance), commits its last deletions (SQLite: a group nobody else will
// flush once the executor stopped), then the publisher.
void StopEvents(Engine& engine) {
  if (engine.outbox_relay) engine.outbox_relay->Stop();
  if (engine.outbox_relay) {
    absl::Status committed = engine.backend->CommitGroup();
    if (!committed.ok()) {
      base::LogWarn(base::StrCat("events outbox: last deletions: ", committed.message()));
    }
  }
  if (engine.events_publisher) engine.events_publisher->Stop();
}

// Tears the engine down on its executor, then stops the executor.
void ShutdownEngine(Engine& engine) {
  if (!engine.executor) {
    StopEvents(engine);
    return;
  }
  engine.executor->RunSync([&] {
    if (engine.gateway) engine.gateway->Stop();  // kills the upstream children
    engine.gateway.reset();
    // What the last batch wrote (sessions ended at shutdown) is committed before the stop, while
    // the engine its failure handler reloads still exists.
    if (engine.group_commit) engine.group_commit->Flush();
    engine.trail_recorder.reset();
    engine.memory_tools.reset();  // stops its worker: queued distillations are dropped
    engine.trail_tools.reset();
    engine.trail_api.reset();
    engine.ledger.reset();  // the gateways that used it are stopped
    engine.trail.reset();
    engine.tools.reset();
    engine.manager.reset();
  });
  engine.executor->Stop();
  // After the last session ended (its force-returns are committed): drained within its bound.
  StopEvents(engine);
}

// Blocks SIGINT/SIGTERM in every thread created from now on; a dedicated thread waits for them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

absl::Status RunServer(const ServerConfig& config, const RegisterFixtures& fixtures) {
  if (config.conformance_fixtures && !fixtures) {
    return absl::FailedPreconditionError(
        "the conformance fixtures are only in the test binary contextd-conformance (built with "
        "the tests), not in contextd");
  }
  base::LogLevel level;
  RETURN_IF_ERROR(base::ParseLogLevel(config.log_level, &level));
  base::InitLogging(level);
  sigset_t stop_signals = BlockStopSignals();

  Engine engine;
  absl::Status built = BuildEngine(config, fixtures, engine);
  if (!built.ok()) {
    ShutdownEngine(engine);
    return built;
  }

  if (config.transport == "stdio") {
    // A signal ends the session as EOF would: branches are force-returned, then the process exits.
    std::thread signals([&engine, stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      base::LogInfo(base::StrCat("signal ", sig, ": shutting down"));
      engine.executor->RunSync([&] {
        const protocol::SessionInfo stdio = *engine.stdio_session;
        if (engine.manager) {
          (void)engine.manager->EndSession(tools::SessionKeyFor(stdio), "shutdown");
        }
        if (engine.trail) (void)engine.trail->EndSession(tools::TrailSessionFor(stdio));
        if (engine.group_commit) engine.group_commit->Flush();
      });
      StopEvents(engine);
      std::_Exit(0);
    });
    signals.detach();
    transport::StdioOptions options;
    options.max_message_bytes = static_cast<size_t>(config.max_message_bytes);
    absl::Status served = transport::ServeStdio(*engine.mcp, STDIN_FILENO, STDOUT_FILENO, options);
    ShutdownEngine(engine);
    return served;
  }

  transport::HttpServerOptions options;
  RETURN_IF_ERROR(SplitListen(config.listen, &options.listen_address, &options.port));
  options.io_threads = static_cast<int>(config.http_threads);
  options.allowed_origins = config.allowed_origins;
  options.allowed_hosts = config.allowed_hosts;
  options.max_message_bytes = static_cast<size_t>(config.max_message_bytes);
  options.session_idle_timeout = std::chrono::seconds(config.folding.session_idle_timeout_seconds);
  options.session_directory = engine.shared_sessions;
  options.session_sync_interval = std::chrono::milliseconds(config.store.postgres_session_sync_ms);
  if (!config.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(options.bearer_tokens, ReadTokens(config.auth_token_file));
  }
  Metrics* metrics = &engine.metrics;
  options.metrics = [metrics] { return metrics->Render(); };
  options.health = [backend = engine.backend, publisher = engine.events_publisher.get(),
                    jetstream = config.nats_events.jetstream] {
    HealthMember database = DatabaseHealth(*backend);
    return RenderHealth({database, NatsHealth(publisher, jetstream)}, kVersion);
  };
  if (config.model_gateway.enabled) {
    absl::Status built_gateway = BuildModelGateway(config, options.bearer_tokens, engine);
    if (!built_gateway.ok()) {
      ShutdownEngine(engine);
      return built_gateway;
    }
    for (transport::HttpRoute& route : engine.model_gateway->Routes()) {
      options.routes.push_back(std::move(route));
    }
    // /api/v1/conversations: the gateway's folds per conversation (the API lives on the
    // executor; the store outlives it, reset in ShutdownEngine before the engine goes).
    engine.executor->RunSync([&] {
      engine.trail_api->SetConversations(engine.conversations.get());
      // branch_status shows what the gateway sent in each branch's view.
      engine.tools->SetBranchViews(
          [store = engine.conversations.get()](
              const std::string& tenant,
              const std::string& id) -> std::optional<tools::FoldingTools::BranchViews> {
            auto usage = store->ViewUsage(tenant, id);
            if (!usage.ok()) return std::nullopt;
            return tools::FoldingTools::BranchViews{
                usage->isolated_requests, usage->inherited_requests, usage->view_tokens_spared};
          });
    });
  }
  // The trail viewer (/ui, /api/v1): its reads run on the engine executor.
  for (transport::HttpRoute& route : viewer::UiRoutes(*engine.trail_api, *engine.executor)) {
    options.routes.push_back(std::move(route));
  }
  auto http = transport::HttpServer::Start(options, engine.mcp);
  if (!http.ok()) {
    ShutdownEngine(engine);
    return http.status();
  }
  std::fprintf(stderr, "listening on %s\n", (*http)->listen_url().c_str());
  std::fflush(stderr);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  base::LogInfo(base::StrCat("signal ", sig, ": shutting down"));
  // Closes every session: their branches are force-returned ("shutdown"), except where sessions
  // are shared: they stay open for the other instances.
  (*http)->Stop();
  // No lookup or touch calls back into the stopped transport.
  if (engine.shared_sessions) engine.shared_sessions->Stop();
  if (engine.model_gateway) engine.model_gateway->Stop();  // no new upstream calls
  // Ends the calls in flight (their callbacks use the gateway).
  engine.model_clients.clear();
  engine.model_gateway.reset();
  ShutdownEngine(engine);
  return absl::OkStatus();
}

}  // namespace contextd::server
