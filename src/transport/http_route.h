// The route table of HttpServer's one listener: how a room serves HTTP paths next to /mcp. A route
// names methods and a path (exact, or a prefix such as "/ui/"), says whether the listener checks
// Host/Origin and bearer tokens for it, and gets each request with a responder that answers it,
// whole or streamed, from any thread. HttpRequest is a value owned by the handler; HttpResponder
// is thread-safe and may outlive its connection and the server (its calls then do nothing).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contextd::transport {

namespace internal {
struct RawRequest;  // the parsed request (Boost.Beast), private to the listener
}  // namespace internal

// Header name/value pairs of a response, written in order.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One parsed request, complete with its body. Not thread-safe; movable, owned by the handler.
class HttpRequest {
 public:
  // Built by the listener. `tenant` is the bearer token's tenant ("local" without tokens) on
  // routes with RouteAuth::kBearer, and "" on routes with RouteAuth::kNone.
  HttpRequest(std::unique_ptr<internal::RawRequest> raw, std::string tenant);
  HttpRequest(HttpRequest&&) noexcept;
  HttpRequest& operator=(HttpRequest&&) noexcept;
  ~HttpRequest();

  // The method as sent ("GET", "POST", "HEAD", ...).
  std::string_view method() const;
  // The request target as sent, query string included ("/v1/messages?beta=true").
  std::string_view target() const;
  // The target up to '?' ("/v1/messages").
  std::string_view path() const;
  // The target after '?' ("beta=true"), "" when there is none.
  std::string_view query() const;
  // The value of the first header named `name` (case-insensitive), "" when absent.
  std::string_view Header(std::string_view name) const;
  // Whether a header named `name` is present (even with an empty value).
  bool HasHeader(std::string_view name) const;
  // Every header in arrival order. The views point into this request.
  std::vector<std::pair<std::string_view, std::string_view>> Headers() const;
  // The body (at most the route's HttpRoute::max_body_bytes).
  const std::string& body() const;
  // Moves the body out (body() is empty afterwards).
  std::string TakeBody();
  // See the constructor.
  const std::string& tenant() const { return tenant_; }
  // 10 for HTTP/1.0, 11 for HTTP/1.1.
  int version() const;

 private:
  std::unique_ptr<internal::RawRequest> raw_;
  std::string tenant_;
};

// A whole response. Content-Length is added by the listener (and the body left out for HEAD).
struct HttpResponse {
  int status = 200;
  // Written as a Content-Type header when not empty.
  std::string content_type;
  // Further headers (not Content-Length, Transfer-Encoding or Connection). A header whose name
  // or value contains CR or LF (or whose name is empty or has ':') is dropped.
  HttpHeaders headers;
  std::string body;
  // Close the connection after this response (keep-alive otherwise, when the client allows).
  bool close = false;
};

// Answers one request: once with Respond, or with StartStream, any number of Write and one End.
// Every method may be called from any thread, also after the client went away or the server
// stopped: calls that can no longer reach the client do nothing. The listener writes in call
// order (calls from one thread keep their order; calls made on the connection's I/O thread run at
// once, others are posted to it). Calls after the response ended are ignored. The responder holds
// its connection alive until the response ended, the client left or Stop(); not past Stop().
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;

  // Sends a whole response and ends the exchange.
  virtual void Respond(HttpResponse response) = 0;

  // Starts a streamed response: status and headers now (chunked on HTTP/1.1; on HTTP/1.0 the body
  // ends with the connection), body chunks with Write as they arrive. Headers as in HttpResponse.
  virtual void StartStream(int status, std::string content_type, HttpHeaders headers = {}) = 0;

  // Appends `data` to a started stream, unbuffered: it is handed to the kernel as soon as earlier
  // writes are. `written`, if given, runs once on the connection's I/O thread with true when
  // `data` was handed to the kernel, or with false when the connection closed first (then
  // possibly on the calling thread); it is dropped without a call if the server stops first. For
  // backpressure, keep a bounded number of bytes unconfirmed: a connection with more than 8 MiB
  // queued, or whose write makes no progress for HttpServerOptions::write_timeout, is closed.
  virtual void Write(std::string data, std::function<void(bool written)> written = nullptr) = 0;

  // Ends a started stream. With `close_connection`, the connection closes after it (otherwise it
  // serves the client's next request).
  virtual void End(bool close_connection = false) = 0;

  // Breaks a started stream: what was written is still sent, then the connection closes without
  // the end of the body (no last chunk on HTTP/1.1), so the client sees an incomplete answer, not
  // a complete one. For relaying an upstream answer that broke mid-way. Before StartStream it
  // closes the connection without an answer.
  virtual void Abort() = 0;

  // Runs `fn` later on the connection's I/O thread (never inside this call, even from that
  // thread), after the calls made before it, if the exchange is still open then (no response
  // ended, client present, server running); drops it otherwise. For handlers that keep
  // per-request state confined to that thread; safe to call under the caller's own locks.
  virtual void Post(std::function<void()> fn) = 0;

  // Runs `fn` like Post after `delay`, unless the exchange ended first. One timer per exchange:
  // a new call replaces the pending one.
  virtual void RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) = 0;

  // Cancels the pending RunAfter, if any.
  virtual void CancelTimer() = 0;

  // Registers `fn` to run once on the connection's I/O thread if the client goes away (or the
  // connection is closed for a timeout or a slow reader) before the exchange ended. Not run when
  // the server stops: the handler's captures are then released.
  virtual void OnClientGone(std::function<void()> fn) = 0;

  // True once nothing more can be sent: the response ended, the client left or the server
  // stopped.
  virtual bool closed() const = 0;
};

// Called on an I/O thread for each request the route matches; must not block or throw (a throw
// is logged and answered 500). The handler answers through `responder`, at once or later from any
// thread; when the last reference to a responder goes before its answer ended, the client gets a
// 500 (or, mid-stream, a closed connection).
using RouteHandler =
    std::function<void(HttpRequest request, std::shared_ptr<HttpResponder> responder)>;

// Who may call a route.
enum class RouteAuth {
  // Anyone: Authorization and other credentials are passed through untouched (e.g. provider keys
  // a model gateway forwards). HttpRequest::tenant() is "".
  kNone,
  // HttpServerOptions::bearer_tokens (when configured): 401 without a known token.
  kBearer,
};

// How a route's path matches a request's path (the target before '?').
enum class RouteMatch {
  kExact,   // equal
  kPrefix,  // starts with the route's path ("/ui/" matches "/ui/" and "/ui/app.js")
};

// One entry of the route table.
struct HttpRoute {
  // Label of the route in metrics (`route="..."`). Default: the path.
  std::string name;
  // Methods served ("GET", "POST", ...). Empty: every method (the handler answers 405 itself).
  // Others get 405 with an Allow header.
  std::vector<std::string> methods;
  std::string path;
  RouteMatch match = RouteMatch::kExact;
  RouteAuth auth = RouteAuth::kBearer;
  // Check the Host and Origin allowlists (DNS rebinding protection); 403 when they fail.
  bool check_host_and_origin = true;
  // The answer to a request the listener refuses on this route before its handler runs (413 for
  // a body over the limit), in the route's own protocol: `status` and the listener's `message`
  // in, the response out (its status is used as given). Empty: a JSON-RPC error body.
  std::function<HttpResponse(int status, std::string_view message)> error_response;
  // Largest accepted request body; a larger one gets 413 (its rest drained, as for any 413).
  // 0: HttpServerOptions::max_message_bytes.
  size_t max_body_bytes = 0;
  RouteHandler handler;
};

}  // namespace contextd::transport
