#include "viewer/ui_routes.h"

#include <cctype>
#include <string>
#include <utility>

#include "base/foreign_text.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"

namespace contextd::viewer {
namespace {

using transport::HttpRequest;
using transport::HttpResponder;
using transport::HttpResponse;
using transport::HttpRoute;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kStreamSuffix = "/stream";
constexpr std::string_view kSessionsPrefix = "/api/v1/sessions/";

// The page loads only from this server; nothing it shows may run as code.
const transport::HttpHeaders& PageHeaders() {
  static const transport::HttpHeaders headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-cache"}};
  return headers;
}

HttpResponse JsonError(int status, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::string(kJson);
  r.body = base::DumpJson(nlohmann::json{{"error", std::string(message)}});
  r.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
  return r;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Holds one of the UiOptions::max_streams slots while it lives.
class StreamSlot {
 public:
  explicit StreamSlot(std::shared_ptr<std::atomic<size_t>> open) : open_(std::move(open)) {}
  ~StreamSlot() { open_->fetch_sub(1); }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  std::shared_ptr<std::atomic<size_t>> open_;
};

// One live stream. Its fields are touched on the executor only (the responder on any thread).
struct Stream {
  Stream(std::shared_ptr<HttpResponder> r, std::string t, std::string root_id,
         std::shared_ptr<std::atomic<size_t>> open)
      : responder(std::move(r)),
        tenant(std::move(t)),
        root(std::move(root_id)),
        slot(std::move(open)) {}
  std::shared_ptr<HttpResponder> responder;
  std::string tenant;
  std::string root;
  std::string fingerprint;
  std::chrono::steady_clock::time_point last_write;
  StreamSlot slot;
};

std::string Event(std::string_view name, const nlohmann::json& data) {
  return base::StrCat("event: ", name, "\ndata: ", base::DumpJson(data), "\n\n");
}

// Looks for a change of the stream's session now (on the executor), then again after the poll
// interval (the timer runs on the I/O thread and posts back here).
void Poll(std::shared_ptr<Stream> stream, TrailApi* api, base::Executor* executor,
          UiOptions options) {
  if (stream->responder->closed()) return;
  auto fp = api->Fingerprint(stream->tenant, stream->root);
  auto now = std::chrono::steady_clock::now();
  if (!fp.ok()) {
    stream->responder->Write(Event("gone", {{"root_id", stream->root}}));
    stream->responder->End(false);
    return;
  }
  if (*fp != stream->fingerprint) {
    stream->fingerprint = *fp;
    stream->responder->Write(Event("update", {{"root_id", stream->root}, {"fingerprint", *fp}}));
    stream->last_write = now;
  } else if (now - stream->last_write >= options.heartbeat_interval) {
    stream->responder->Write(": heartbeat\n\n");
    stream->last_write = now;
  }
  std::shared_ptr<HttpResponder> responder = stream->responder;
  responder->RunAfter(options.poll_interval, [stream = std::move(stream), api, executor, options] {
    executor->Post([stream, api, executor, options] { Poll(stream, api, executor, options); });
  });
}

void HandleStream(HttpRequest request, std::shared_ptr<HttpResponder> responder, std::string root,
                  TrailApi* api, base::Executor* executor, UiOptions options,
                  std::shared_ptr<std::atomic<size_t>> open) {
  if (open->fetch_add(1) >= options.max_streams) {
    open->fetch_sub(1);
    return responder->Respond(JsonError(503, "too many live streams; try again later"));
  }
  auto stream = std::make_shared<Stream>(responder, request.tenant(), std::move(root), open);
  executor->Post([stream, api, executor, options] {
    auto fp = api->Fingerprint(stream->tenant, stream->root);
    if (!fp.ok()) {
      return stream->responder->Respond(
          JsonError(fp.status().code() == absl::StatusCode::kNotFound ? 404 : 500,
                    std::string(fp.status().message())));
    }
    stream->fingerprint = *fp;
    stream->responder->StartStream(200, "text/event-stream",
                                   {{"Cache-Control", "no-store"},
                                    {"X-Accel-Buffering", "no"},
                                    {"X-Content-Type-Options", "nosniff"}});
    stream->responder->Write(base::StrCat(
        "retry: 2000\n\n", Event("hello", {{"root_id", stream->root}, {"fingerprint", *fp}})));
    stream->last_write = std::chrono::steady_clock::now();
    std::shared_ptr<HttpResponder> r = stream->responder;
    r->RunAfter(options.poll_interval, [stream, api, executor, options] {
      executor->Post([stream, api, executor, options] { Poll(stream, api, executor, options); });
    });
  });
}

}  // namespace

bool SameOrigin(std::string_view origin, std::string_view host) {
  if (origin.empty()) return true;
  size_t scheme = origin.find("://");
  if (scheme == std::string_view::npos) return false;  // "null" and other opaque origins
  std::string_view authority = origin.substr(scheme + 3);
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);
  return !host.empty() && EqualsIgnoreCase(authority, host);
}

std::vector<HttpRoute> UiRoutes(TrailApi& api, base::Executor& executor, UiOptions options) {
  std::vector<HttpRoute> routes;
  auto json_error = [](int status, std::string_view message) { return JsonError(status, message); };

  HttpRoute bare;
  bare.name = "/ui";
  bare.methods = {"GET", "HEAD"};
  bare.path = "/ui";
  bare.auth = transport::RouteAuth::kNone;  // the page holds no data: the API checks tokens
  bare.handler = [](HttpRequest, std::shared_ptr<HttpResponder> responder) {
    HttpResponse r;
    r.status = 308;
    r.headers = {{"Location", "/ui/"}};
    responder->Respond(std::move(r));
  };
  routes.push_back(std::move(bare));

  HttpRoute page;
  page.name = "/ui/";
  page.methods = {"GET", "HEAD"};
  page.path = "/ui/";
  page.match = transport::RouteMatch::kPrefix;
  page.auth = transport::RouteAuth::kNone;
  page.error_response = json_error;
  page.handler = [](HttpRequest request, std::shared_ptr<HttpResponder> responder) {
    if (!SameOrigin(request.Header("Origin"), request.Header("Host"))) {
      return responder->Respond(JsonError(403, "forbidden: cross-origin request"));
    }
    std::string_view name = request.path().substr(4);
    if (name.empty()) name = "index.html";
    std::optional<UiAsset> asset = FindUiAsset(name);
    if (!asset) return responder->Respond(JsonError(404, "no such file"));
    HttpResponse r;
    r.content_type = std::string(asset->content_type);
    r.body = std::string(asset->body);
    r.headers = PageHeaders();
    responder->Respond(std::move(r));
  };
  routes.push_back(std::move(page));

  auto open = std::make_shared<std::atomic<size_t>>(0);
  HttpRoute data;
  data.name = "/api/v1/";
  data.methods = {"GET"};
  data.path = "/api/v1/";
  data.match = transport::RouteMatch::kPrefix;
  data.auth = transport::RouteAuth::kBearer;
  data.error_response = json_error;
  data.max_body_bytes = 1024;
  data.handler = [api = &api, executor = &executor, options, open](
                     HttpRequest request, std::shared_ptr<HttpResponder> responder) {
    if (!SameOrigin(request.Header("Origin"), request.Header("Host"))) {
      return responder->Respond(JsonError(403, "forbidden: cross-origin request"));
    }
    std::string path(request.path());
    if (path.size() > kSessionsPrefix.size() + kStreamSuffix.size() &&
        path.compare(0, kSessionsPrefix.size(), kSessionsPrefix) == 0 &&
        path.compare(path.size() - kStreamSuffix.size(), kStreamSuffix.size(), kStreamSuffix) ==
            0) {
      std::string root = path.substr(kSessionsPrefix.size(),
                                     path.size() - kSessionsPrefix.size() - kStreamSuffix.size());
      if (root.empty() || root.find('/') != std::string::npos) {
        return responder->Respond(JsonError(404, "no such API path"));
      }
      return HandleStream(std::move(request), std::move(responder), std::move(root), api, executor,
                          options, open);
    }
    executor->Post([api, responder, tenant = request.tenant(), path = std::move(path),
                    query = std::string(request.query())] {
      ApiResponse answer = api->Get(tenant, path, query);
      HttpResponse r;
      r.status = answer.status;
      r.content_type = std::string(kJson);
      r.body = std::move(answer.body);
      r.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
      responder->Respond(std::move(r));
    });
  };
  routes.push_back(std::move(data));
  return routes;
}

}  // namespace contextd::viewer
