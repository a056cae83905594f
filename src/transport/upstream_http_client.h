// UpstreamHttpChannel: the client side of MCP Streamable HTTP over http or https. Each message is
// POSTed on its own connection by a worker thread; the answer (application/json, or a
// text/event-stream read incrementally so progress arrives as it is sent) is split into messages
// for on_line. The Mcp-Session-Id of the initialize response is sent with every later request.
// Once notifications/initialized was accepted, a stream thread keeps the standalone GET stream
// open (server-initiated messages such as list_changed): 405 means the server offers none; a
// dropped stream is reopened with backoff (and Last-Event-ID); an unreachable server or 404
// (session gone) ends the channel. https verifies the server certificate (system trust store, or
// a CA file) and its host name, with SNI. Not implemented: DELETE at close.
// Thread-safety: as UpstreamChannel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "transport/http_url.h"
#include "transport/upstream_channel.h"

namespace contextd::transport {

struct UpstreamHttpOptions {
  std::string url;                              // "http[s]://host[:port]/path"
  std::map<std::string, std::string> headers;   // sent with every request
  std::string log_name;
  size_t max_message_bytes = 64 << 20;          // larger answers are dropped
  // https: PEM file of the CA certificate(s) to trust instead of the system trust store.
  std::string ca_file;
  // Delays before reopening a dropped GET stream: first (or the server's SSE `retry:`),
  // doubling up to max while attempts fail.
  std::chrono::milliseconds stream_retry_initial{100};
  std::chrono::milliseconds stream_retry_max{30000};
};

class UpstreamHttpChannel final : public UpstreamChannel {
 public:
  // Checks the url and, for https, loads the trust store (InvalidArgument when the CA file
  // cannot be read). Nothing is sent until the first Send.
  static absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> Start(UpstreamHttpOptions options,
                                                                    UpstreamCallbacks callbacks);
  ~UpstreamHttpChannel() override;

  // POSTs `line` from a new worker thread. A transport failure (connection refused, TLS
  // handshake or certificate failure, 404 for an expired session) ends the channel: on_closed
  // runs with the reason ("TLS handshake with host:port failed: <why>", ...). Other HTTP errors
  // fail just that request with an error response.
  absl::Status Send(std::string_view line) override;
  // Aborts requests in flight and the GET stream (shuts their sockets down) and joins the
  // threads. No on_closed is reported for a channel closed this way.
  void Close(int grace_ms = 500) override;

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  struct Tls;          // the OpenSSL client context (https only)
  class Connection;    // one plain or TLS connection, its socket registered in active_fds_
  enum class StreamEnd { kDropped, kNotOffered, kGone, kClosed };

  UpstreamHttpChannel(UpstreamHttpOptions options, HttpUrl url, UpstreamCallbacks callbacks,
                      std::shared_ptr<Tls> tls);
  // Connects (and handshakes) `connection`; Unavailable with the reason on failure.
  absl::Status Connect(Connection& connection);
  void Post(std::string body);
  void StartStream();
  void StreamLoop();
  // Opens the GET stream once and reads it until it ends; `why` is set for kGone.
  StreamEnd ReadStream(std::string& last_event_id, std::chrono::milliseconds& delay,
                       std::string& why);
  void Deliver(std::string message);
  void FailRequest(const std::string& body, const std::string& why);
  void Closed(const std::string& reason);

  const UpstreamHttpOptions options_;
  const HttpUrl url_;
  const UpstreamCallbacks callbacks_;
  const std::shared_ptr<Tls> tls_;
  std::mutex mu_;  // guards everything below
  std::condition_variable closed_cv_;  // signalled when closed_ becomes true
  bool closed_ = false;
  bool close_reported_ = false;
  std::string session_id_;
  std::string protocol_version_;  // from the initialize result; sent as MCP-Protocol-Version
  std::list<Worker> workers_;
  std::thread stream_thread_;
  bool stream_started_ = false;
  std::set<int> active_fds_;
  std::mutex callback_mu_;  // callbacks run one at a time
};

}  // namespace contextd::transport
