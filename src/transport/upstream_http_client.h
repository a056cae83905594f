// UpstreamHttpChannel: the client side of MCP Streamable HTTP (plain http only). Each message is
// POSTed on its own connection by a worker thread; the answer (application/json, or a
// text/event-stream read incrementally so progress arrives as it is sent) is split into messages
// for on_line. The Mcp-Session-Id of the initialize response is sent with every later request.
// Not implemented: https (Unimplemented at Start), the standalone GET stream (upstream messages
// that belong to no request are not received), resumption, DELETE at close.
// Thread-safety: as UpstreamChannel.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "transport/upstream_channel.h"

namespace contextd::transport {

struct UpstreamHttpOptions {
  std::string url;                              // "http://host[:port]/path"
  std::map<std::string, std::string> headers;   // sent with every request
  std::string log_name;
  size_t max_message_bytes = 64 << 20;          // larger answers are dropped
};

// "http://host[:port]/path" -> {host, port, target}; InvalidArgument for anything else,
// Unimplemented for https.
struct HttpUrl {
  std::string host;
  std::string port;
  std::string target;
};
absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url);

class UpstreamHttpChannel final : public UpstreamChannel {
 public:
  // Checks the url (nothing is sent until the first Send). Errors as ParseHttpUrl.
  static absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> Start(UpstreamHttpOptions options,
                                                                    UpstreamCallbacks callbacks);
  ~UpstreamHttpChannel() override;

  // POSTs `line` from a new worker thread. A transport failure (connect refused, 404 for an
  // expired session) ends the channel: the JSON-RPC request fails with an error response and
  // on_closed runs. Other HTTP errors fail just that request.
  absl::Status Send(std::string_view line) override;
  // Aborts requests in flight (shuts their sockets down) and joins the workers.
  void Close(int grace_ms = 500) override;

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  UpstreamHttpChannel(UpstreamHttpOptions options, HttpUrl url, UpstreamCallbacks callbacks);
  void Post(std::string body);
  void Deliver(std::string message);
  void FailRequest(const std::string& body, const std::string& why);
  void Closed(const std::string& reason);

  const UpstreamHttpOptions options_;
  const HttpUrl url_;
  const UpstreamCallbacks callbacks_;
  std::mutex mu_;  // guards everything below
  bool closed_ = false;
  bool close_reported_ = false;
  std::string session_id_;
  std::string protocol_version_;  // from the initialize result; sent as MCP-Protocol-Version
  std::list<Worker> workers_;
  std::set<int> active_fds_;
  std::mutex callback_mu_;  // callbacks run one at a time
};

}  // namespace contextd::transport
