// UpstreamHttpChannel: the client side of MCP Streamable HTTP over http or https, on the pooled
// HttpClient (one per channel: its CA file, keep-alive connections, no response or read
// deadline: the upstream client's request timeout bounds a call). Each message is POSTed as its
// own request; the answer (application/json, or a text/event-stream read incrementally with
// SseReader so progress arrives as it is sent) is split into messages for on_line. The
// Mcp-Session-Id of the initialize response is sent with every later request. Once
// notifications/initialized was accepted, a stream thread keeps the standalone GET stream open
// (server-initiated messages such as list_changed): 405 means the server offers none; a dropped
// stream is reopened with backoff (and Last-Event-ID); an unreachable server or 404 (session
// gone) ends the channel. https verifies the server certificate (system trust store, or a CA
// file) and its host name, with SNI. Not implemented: DELETE at close.
// Thread-safety: as UpstreamChannel.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "transport/http_client.h"
#include "transport/upstream_channel.h"

namespace contextd::transport {

struct UpstreamHttpOptions {
  std::string url;                             // "http[s]://host[:port]/path"
  std::map<std::string, std::string> headers;  // sent with every request
  std::string log_name;
  size_t max_message_bytes = 64 << 20;  // larger answers are dropped
  // https: PEM file of the CA certificate(s) to trust instead of the system trust store.
  std::string ca_file;
  // Delays before reopening a dropped GET stream: first (or the server's SSE `retry:`),
  // doubling up to max while attempts fail.
  std::chrono::milliseconds stream_retry_initial{100};
  std::chrono::milliseconds stream_retry_max{30000};
};

class UpstreamHttpChannel final : public UpstreamChannel {
 public:
  // Checks the url and loads the trust store (InvalidArgument when the CA file cannot be read,
  // or is given for an http url). Nothing is sent until the first Send.
  static absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> Start(UpstreamHttpOptions options,
                                                                    UpstreamCallbacks callbacks);
  ~UpstreamHttpChannel() override;

  // POSTs `line` (on a pooled connection, or a new one). A failure to connect (refused, TLS
  // handshake or certificate failure) or 404 for an expired session ends the channel: on_closed
  // runs with the reason ("TLS handshake with host:port failed: <why>", ...). A connection that
  // breaks before the answer fails the request with an error response and ends the channel,
  // unless it was a pooled one that the server closed (the next request connects afresh). Other
  // HTTP errors fail just that request with an error response.
  absl::Status Send(std::string_view line) override;
  // Cancels the requests in flight and the GET stream (their connections are closed) and joins
  // the threads. No on_closed is reported for a channel closed this way.
  void Close(int grace_ms = 500) override;

 private:
  class CallHolder;  // a request's ClientCall, cancellable from its own callbacks
  struct PostState;  // what one POST's callbacks share
  enum class StreamEnd { kDropped, kNotOffered, kGone, kClosed };

  UpstreamHttpChannel(UpstreamHttpOptions options, std::unique_ptr<HttpClient> client,
                      UpstreamCallbacks callbacks);
  // `own` followed by what every request carries: the MCP session headers once known,
  // User-Agent, and last the configured headers (each replaces an earlier one of its name).
  HttpHeaders Headers(HttpHeaders own);
  // Starts `request` on the client; false (and no callback runs) once the channel is closed.
  bool StartRequest(ClientRequest request, ClientCallbacks callbacks, CallHolder& holder);
  // A POST ended: delivers its answer or fails it, as Send describes.
  void Posted(PostState& post, const absl::Status& status);
  void StartStream();
  void StreamLoop();
  // Opens the GET stream once and reads it until it ends; `why` is set for kGone.
  StreamEnd ReadStream(std::string& last_event_id, std::chrono::milliseconds& delay,
                       std::string& why);
  void Deliver(std::string message);
  void FailRequest(const std::string& body, const std::string& why);
  void Closed(const std::string& reason);

  const UpstreamHttpOptions options_;
  const UpstreamCallbacks callbacks_;
  std::mutex client_mu_;                // guards client_; held while a request starts (before mu_)
  std::unique_ptr<HttpClient> client_;  // null once Close took it
  std::mutex mu_;                       // guards everything below
  std::condition_variable cv_;          // closed_ became true, or a GET stream's request ended
  bool closed_ = false;
  bool close_reported_ = false;
  std::string session_id_;
  std::string protocol_version_;  // from the initialize result; sent as MCP-Protocol-Version
  std::thread stream_thread_;
  bool stream_started_ = false;
  std::mutex callback_mu_;  // callbacks run one at a time
};

}  // namespace contextd::transport
