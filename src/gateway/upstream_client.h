// UpstreamClient: contextd as an MCP *client* of one upstream server. It starts the upstream
// (stdio child process, or Streamable HTTP over http or https), initializes it (protocol
// 2025-11-25, declaring sampling, elicitation and roots so the upstream's server-to-client requests
// can be relayed), lists its tools, resources, resource templates and prompts (all pages), re-lists
// on notifications/*/list_changed (over HTTP these arrive on the standalone GET stream), correlates
// responses, enforces per-request timeouts, relays progress, log messages and server-to-client
// requests to the hooks of the request they belong to, and restarts the upstream with exponential
// backoff when it dies (its catalog is kept; requests meanwhile fail at once with Unavailable).
// Thread-safety: every method must be called on the executor; every callback runs on it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/executor.h"
#include "gateway/upstream_config.h"
#include "protocol/jsonrpc.h"

namespace contextd::transport {
class UpstreamChannel;
}

namespace contextd::gateway {

using protocol::Json;

// What the upstream offers, as its list results gave it (raw MCP JSON objects).
struct UpstreamCatalog {
  Json tools = Json::array();
  Json resources = Json::array();
  Json resource_templates = Json::array();
  Json prompts = Json::array();
};

// Per-request hooks (all optional; run on the executor while the request is in flight).
struct RequestHooks {
  // notifications/progress of this request: the notification's params.
  std::function<void(const Json& params)> on_progress;
  // notifications/message sent while this request was the latest one in flight: its params.
  std::function<void(const Json& params)> on_log;
  // A server-to-client request (sampling/createMessage, elicitation/create, roots/list, ...)
  // sent while this request was the latest one in flight. `reply` must be called once with the
  // client's result or an error (its message is relayed upstream).
  std::function<void(const std::string& method, const Json& params,
                     std::function<void(absl::StatusOr<Json>)> reply)>
      on_server_request;
};

class UpstreamClient : public std::enable_shared_from_this<UpstreamClient> {
 public:
  // Completion of a request: the result, or Unavailable (not connected, or the upstream died),
  // DeadlineExceeded (no answer within the timeout), Cancelled, or Unknown (a JSON-RPC error
  // response; message "<code>: <message>").
  using Done = std::function<void(absl::StatusOr<Json>)>;

  // Events of the client as a whole.
  struct Listener {
    // The catalog was (re)listed: after the first successful initialize and after
    // list_changed notifications.
    std::function<void()> on_catalog;
    // notifications/resources/updated from the upstream: its (upstream) uri.
    std::function<void(const std::string& uri)> on_resource_updated;
  };

  // Restart delays: first, doubling up to max.
  struct Backoff {
    std::chrono::milliseconds initial{200};
    std::chrono::milliseconds max{30000};
  };

  // `config` must be valid (ValidateUpstream). Create with std::make_shared.
  UpstreamClient(base::Executor& executor, UpstreamConfig config, Listener listener,
                 Backoff backoff);
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // Starts the upstream and initializes it (asynchronously). Executor only.
  void Start();
  // Kills the upstream, fails requests in flight with Unavailable, cancels restarts. Executor
  // only; idempotent.
  void Stop();

  // Sends request `method` with `params`; `done` runs once on the executor. With
  // hooks.on_progress set, params._meta.progressToken is added. `timeout` <= 0 uses the
  // configured call_timeout. Returns the upstream request id (for Cancel), or 0 when the request
  // failed at once (then `done` already ran).
  int64_t Request(std::string_view method, Json params, Done done, RequestHooks hooks = {},
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Sends notifications/cancelled for request `id` and completes it with Cancelled. No-op if it
  // already completed.
  void Cancel(int64_t id, std::string_view reason);

  // True between a successful initialize and the upstream's death.
  bool ready() const { return state_ == State::kReady; }
  // True once the first start attempt ended: ready, or down (waiting to restart).
  bool settled() const { return state_ == State::kReady || state_ == State::kDown; }
  // The last catalog listed (kept while the upstream restarts).
  const UpstreamCatalog& catalog() const { return catalog_; }
  const UpstreamConfig& config() const { return config_; }
  // The child's pid while running (-1 otherwise). For tests and logs.
  pid_t pid() const;
  // How many times the upstream was (re)started.
  int starts() const { return starts_; }

 private:
  enum class State { kStopped, kStarting, kReady, kDown };
  struct Pending {
    std::string method;
    Done done;
    RequestHooks hooks;
    base::TimerId timer = 0;
    std::string progress_token;
  };

  void Launch();
  void OnLine(uint64_t generation, std::string line);
  void OnClosed(uint64_t generation, std::string reason);
  void HandleDown(std::string reason);
  void Initialize();
  void ListAll(std::string method, std::string key, Json accumulated, Json cursor,
               std::function<void(absl::StatusOr<Json>)> done);
  void RelistTools();
  void RelistEverything(std::function<void()> then);
  void RelistStep(int i, uint64_t generation, std::shared_ptr<std::function<void()>> then);
  void HandleNotification(const protocol::Message& message);
  void HandleServerRequest(const protocol::Message& message);
  void Complete(int64_t id, absl::StatusOr<Json> result);
  void FailAll(const absl::Status& status);
  Pending* LatestWithHook(bool log);
  void SendRaw(const Json& message);
  int64_t SendRequest(std::string_view method, Json params, Done done, RequestHooks hooks,
                      std::chrono::milliseconds timeout);

  base::Executor& executor_;
  const UpstreamConfig config_;
  const Listener listener_;
  const Backoff backoff_;
  State state_ = State::kStopped;
  std::unique_ptr<transport::UpstreamChannel> channel_;
  uint64_t generation_ = 0;  // of channel_; messages of an older channel are ignored
  int64_t next_id_ = 1;
  std::map<int64_t, Pending> pending_;  // by upstream request id (ordered: latest = last)
  std::map<std::string, int64_t> progress_tokens_;
  UpstreamCatalog catalog_;
  Json server_capabilities_ = Json::object();
  std::string last_error_ = "starting";  // why not ready ("exited with status 1", ...)
  std::chrono::milliseconds next_delay_{0};
  base::TimerId restart_timer_ = 0;
  int starts_ = 0;
};

}  // namespace contextd::gateway
