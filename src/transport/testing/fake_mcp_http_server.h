// FakeMcpHttpServer: a scripted MCP Streamable HTTP server for the upstream HTTP client's tests,
// over plain http or https (127.0.0.1, port 0). POST: initialize gets a result with an
// Mcp-Session-Id, other requests an empty result, notifications 202. GET: the queued answers in
// order (status, raw SSE text, then close or hold open until Stop), 405 when none is queued.
// Also makes self-signed test certificates with the OpenSSL API. Thread-safe; test-only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::transport::testing {

// Writes a fresh self-signed certificate (EC P-256, valid for a day) whose subjectAltName is
// `san` (e.g. "IP:127.0.0.1" or "DNS:other.test") and its key as PEM files into `dir`, named
// `<stem>.crt` and `<stem>.key`. Internal on an OpenSSL failure.
absl::Status WriteSelfSignedCertificate(const std::string& dir, const std::string& stem,
                                        const std::string& san);

class FakeMcpHttpServer {
 public:
  // One answer to a GET on the endpoint.
  struct GetAnswer {
    int status = 200;
    std::string sse;    // raw text/event-stream body sent at once (status 200 only)
    bool hold = false;  // keep the stream open (until Stop) instead of closing it
  };
  // Serves https with the given PEM files when both are set, plain http otherwise.
  struct Options {
    std::string cert_file;
    std::string key_file;
  };

  // Listens on 127.0.0.1 port 0. Internal when it cannot listen or load the certificate.
  static absl::StatusOr<std::unique_ptr<FakeMcpHttpServer>> Start(Options options);
  ~FakeMcpHttpServer();

  // "http[s]://127.0.0.1:<port>/mcp".
  std::string url() const { return url_; }
  // Queues the answer to a later GET.
  void QueueGet(GetAnswer answer);
  // From now on, POSTed requests other than initialize are answered as text/event-stream:
  // `events` (raw SSE text, e.g. progress notifications) and then the result as one event.
  void AnswerPostsWithSse(std::string events);
  // The Last-Event-ID header of every GET received so far, in order ("" when absent).
  std::vector<std::string> get_last_event_ids();
  // Waits (bounded) until `n` GETs were received; false on timeout.
  bool WaitForGets(size_t n, std::chrono::milliseconds timeout);
  // Number of POSTs received.
  int posts();
  // Waits (bounded) until `n` POSTs were received; false on timeout.
  bool WaitForPosts(int n, std::chrono::milliseconds timeout);
  // Closes the listener and every connection (held streams end); joins the threads.
  void Stop();

 private:
  struct Impl;
  explicit FakeMcpHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string url_;
};

}  // namespace contextd::transport::testing
