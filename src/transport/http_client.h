// HttpClient: contextd's one outbound HTTP/1.1 client over http and https (certificates and host
// names verified, SNI), used by the model gateway, the MCP gateway's Streamable HTTP upstreams
// and memory's endpoints: the response's status and headers are delivered as soon as they
// arrive, then its body (de-chunked) as it arrives, without buffering (an SSE stream may last as
// long as the server holds it). Keep-alive connections are pooled per (scheme, host, port).
// Threading: each request runs on a worker thread of its own while it lasts, doing Beast I/O on its
// connection's own io_context (a thread per request in flight suits the handful of concurrent
// model calls); its callbacks run on that thread. Workers are kept for the next request (up to
// 8 idle, each for a minute) instead of being started for each. The idle connection pool is
// shared under a mutex. All methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/http_route.h"

namespace contextd::transport {

struct HttpClientOptions {
  // https: PEM file of the CA certificate(s) to trust; empty: the system trust store.
  std::string ca_file;
  // Each timeout: zero sets no deadline (an MCP upstream's answer or GET stream may take as long
  // as the server needs; the caller cancels).
  // Resolving, connecting and the TLS handshake of a new connection.
  std::chrono::milliseconds connect_timeout{10'000};
  // From sending the request to the end of the response headers.
  std::chrono::milliseconds response_timeout{600'000};
  // Between two reads of the body that make progress.
  std::chrono::milliseconds read_timeout{600'000};
  // Idle keep-alive connections kept per (scheme, host, port); the oldest beyond are closed.
  size_t max_idle_per_host = 8;
  // An idle connection older than this is closed instead of reused.
  std::chrono::milliseconds idle_lifetime{60'000};
};

// One request. `url` is "http[s]://host[:port]/path?query".
struct ClientRequest {
  std::string method = "GET";
  std::string url;
  // Sent as given, except that the client sets Host, Content-Length (when there is a body or the
  // method is POST, PUT or PATCH) and Connection: keep-alive, and drops the caller's Host,
  // Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, Trailer and Proxy-*
  // headers, and any header whose name or value contains CR or LF.
  HttpHeaders headers;
  std::string body;
  // A pooled connection that the server closed before a byte of the response is replaced once by
  // a fresh connection, and the request sent again, when the request was not completely written.
  // When it was written (the server may have received it and acted on it), only if this is true:
  // leave it true for requests that are safe to repeat (reads, model calls), set it false for
  // those that are not (an MCP tools/call).
  bool retry_unanswered = true;
};

// What a request reports, on its worker thread, one call at a time. A callback must not throw;
// it may call ClientCall::Cancel (also its own call's).
struct ClientCallbacks {
  // Each time the request is about to be sent on a connection: a new one, connected (and
  // handshaken), with reused = false, or a pooled one with reused = true; once more when a stale
  // pooled connection is replaced. Never called when no connection could be made (then on_done
  // reports why: resolving, connecting or the TLS handshake failed).
  std::function<void(bool reused)> on_connected;
  // Once, when the final (non-1xx) response's headers arrived: status and every header as sent.
  std::function<void(int status, HttpHeaders headers)> on_headers;
  // Body bytes in order, each piece as soon as it was read (de-chunked). Not called for empty
  // pieces. The view is valid during the call only.
  std::function<void(std::string_view chunk)> on_data;
  // Exactly once, last. OK when the whole response was read. Otherwise:
  // - InvalidArgument: a bad URL or method (possibly called synchronously inside Start);
  // - Unavailable: DNS, connection refused, TLS handshake or certificate failure, the
  //   connection closed or broken mid-response ("connection to h:p closed after N bytes of the
  //   response"), or a malformed response (e.g. a header block over 64 KiB);
  // - DeadlineExceeded: connect_timeout, response_timeout or read_timeout (the message says
  //   which);
  // - Cancelled: ClientCall::Cancel or the client's destruction.
  // Messages name host:port.
  std::function<void(absl::Status status)> on_done;
};

// A request in flight. Outlives the client safely (Cancel then does nothing).
class ClientCall {
 public:
  // Aborts the request promptly from any thread: the connection is closed (never pooled) and
  // on_done reports Cancelled, unless the request already ended. Idempotent.
  void Cancel();
  // Whether Cancel was called.
  bool cancelled() const;

 private:
  friend class HttpClient;
  struct Connection;

  mutable std::mutex mu_;  // guards the two below
  bool cancelled_ = false;
  std::shared_ptr<Connection> connection_;  // while the worker uses one
};

class HttpClient {
 public:
  // InvalidArgument when the trust store (ca_file, or the system's) cannot be loaded.
  static absl::StatusOr<std::unique_ptr<HttpClient>> Create(HttpClientOptions options);
  // Cancels the requests in flight (they report Cancelled) and joins their threads; closes the
  // idle connections. Must not run on a worker thread (inside a callback).
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` from a worker thread and reports through `callbacks`. A bad URL or method is
  // reported through on_done(InvalidArgument) before Start returns. A pooled connection that
  // turns out closed before any byte of the response arrived is replaced once by a fresh
  // connection and the request sent again (see ClientRequest::retry_unanswered).
  std::shared_ptr<ClientCall> Start(ClientRequest request, ClientCallbacks callbacks);

  // Counters, for tests and metrics: connections opened (connected, and TLS handshaken), requests
  // sent on a pooled connection, and requests sent again after a pooled connection was found
  // closed.
  uint64_t connections_opened() const { return connections_opened_.load(); }
  uint64_t connections_reused() const { return connections_reused_.load(); }
  uint64_t stale_retries() const { return stale_retries_.load(); }

 private:
  using Connection = ClientCall::Connection;
  struct Tls;
  struct Idle {
    std::shared_ptr<Connection> connection;
    std::chrono::steady_clock::time_point since;
  };
  struct Prepared;
  // How a pooled connection was found closed before a byte of the response: not at all, while
  // the request was being written, or after it was.
  enum class Stale { kNo, kUnsent, kUnanswered };
  // A request waiting for (or run by) a worker.
  struct Task {
    std::shared_ptr<ClientCall> call;
    std::shared_ptr<ClientCallbacks> callbacks;
    std::shared_ptr<Prepared> prepared;
  };
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;  // set when the thread's loop ended
  };

  HttpClient(HttpClientOptions options, std::unique_ptr<Tls> tls);

  // A worker thread: runs tasks until it has been idle for a minute (or 8 others are idle), or
  // the client is destroyed with nothing left to run.
  void WorkerLoop(const std::shared_ptr<std::atomic<bool>>& done);
  // The worker's whole exchange; returns what on_done reports.
  absl::Status Run(ClientCall& call, const Prepared& request, const ClientCallbacks& callbacks);
  // Sends the request once on `connection` and reads the answer. `stale` says whether (and when)
  // the connection was found closed before any byte of the response.
  absl::Status Exchange(ClientCall& call, Connection& connection, const Prepared& request,
                        const ClientCallbacks& callbacks, Stale& stale, bool& reusable);
  // A new connected (and handshaken) connection, or why not.
  absl::StatusOr<std::shared_ptr<Connection>> Connect(ClientCall& call, const Prepared& request);
  // Hands `connection` to `call` so that Cancel reaches it; false when the call is cancelled.
  static bool Attach(ClientCall& call, const std::shared_ptr<Connection>& connection);
  // A live idle connection to `key`, or null.
  std::shared_ptr<Connection> TakeIdle(const std::string& key);
  void PutIdle(const std::string& key, std::shared_ptr<Connection> connection);
  // Closes idle connections past their lifetime. Requires mu_.
  void ExpireIdleLocked(std::chrono::steady_clock::time_point now);

  const HttpClientOptions options_;
  const std::unique_ptr<Tls> tls_;
  std::mutex mu_;                                // guards the members below
  std::map<std::string, std::list<Idle>> idle_;  // newest last
  std::list<Worker> workers_;
  std::deque<Task> tasks_;                           // not yet taken by a worker
  std::set<std::shared_ptr<ClientCall>> in_flight_;  // started, not yet ended
  std::condition_variable task_cv_;                  // a task arrived, or stopping_
  int idle_workers_ = 0;
  bool stopping_ = false;
  std::atomic<uint64_t> connections_opened_{0};
  std::atomic<uint64_t> connections_reused_{0};
  std::atomic<uint64_t> stale_retries_{0};
};

}  // namespace contextd::transport
