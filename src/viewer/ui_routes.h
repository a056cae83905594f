// The trail viewer on the HTTP listener: GET /ui/ (the page and its assets, embedded in the
// binary, no data in them), GET /api/v1/... (TrailApi, JSON, bearer auth as /mcp) and
// GET /api/v1/sessions/{root}/stream (Server-Sent Events: "update" when the session changes,
// polled on the engine executor; a comment as heartbeat). Every route checks Host and Origin as
// /mcp does and, further, refuses a request whose Origin is not the Host it was sent to (403).
// API reads run on the engine executor (never on an I/O thread). Thread-safe: the routes may run
// on any I/O thread; the TrailApi is only touched on `executor`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/executor.h"
#include "transport/http_route.h"
#include "viewer/trail_api.h"

namespace contextd::viewer {

struct UiOptions {
  // Live streams open at once (across clients); more get 503.
  size_t max_streams = 32;
  // How often a live stream looks for changes, and how often it sends a heartbeat comment.
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds heartbeat_interval{15'000};
};

// An embedded asset of the page.
struct UiAsset {
  std::string_view content_type;
  std::string_view body;
};
// The asset named `name` ("index.html", "app.js", "app.css"), or nullopt (ui_assets.cc, generated
// from src/viewer/ui/ at build time).
std::optional<UiAsset> FindUiAsset(std::string_view name);

// True when `origin` is absent or names exactly `host` (scheme aside): "http://h:1" and "h:1".
// Exposed for tests.
bool SameOrigin(std::string_view origin, std::string_view host);

// The routes of the viewer. `api` and `executor` must outlive the routes' handlers and every
// task they post (the server destroys the API on the executor after the listener stopped).
std::vector<transport::HttpRoute> UiRoutes(TrailApi& api, base::Executor& executor,
                                           UiOptions options = {});

}  // namespace contextd::viewer
