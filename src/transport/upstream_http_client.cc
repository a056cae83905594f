#include "transport/upstream_http_client.h"

#include <sys/socket.h>

#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/logging.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"

namespace contextd::transport {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url) {
  if (url.substr(0, 8) == "https://") {
    return absl::UnimplementedError("https upstreams are not supported yet (plain http only)");
  }
  if (url.substr(0, 7) != "http://") {
    return absl::InvalidArgumentError(base::StrCat("upstream url must start with http://: ", url));
  }
  url.remove_prefix(7);
  HttpUrl out;
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (authority.empty()) return absl::InvalidArgumentError("upstream url lacks a host");
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError("bad IPv6 host");
    out.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    out.port = authority.size() > 1 && authority.front() == ':' ? std::string(authority.substr(1))
                                                                : "80";
  } else {
    size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    out.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  }
  if (out.host.empty() || out.port.empty()) {
    return absl::InvalidArgumentError(base::StrCat("bad upstream url: ", url));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> UpstreamHttpChannel::Start(
    UpstreamHttpOptions options, UpstreamCallbacks callbacks) {
  auto url = ParseHttpUrl(options.url);
  if (!url.ok()) return url.status();
  return std::unique_ptr<UpstreamHttpChannel>(
      new UpstreamHttpChannel(std::move(options), std::move(url).value(), std::move(callbacks)));
}

UpstreamHttpChannel::UpstreamHttpChannel(UpstreamHttpOptions options, HttpUrl url,
                                         UpstreamCallbacks callbacks)
    : options_(std::move(options)), url_(std::move(url)), callbacks_(std::move(callbacks)) {}

UpstreamHttpChannel::~UpstreamHttpChannel() { Close(); }

absl::Status UpstreamHttpChannel::Send(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return absl::UnavailableError("upstream connection is closed");
  // Reap finished workers so that the list stays short.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::string body(line);
  workers_.push_back(Worker{std::thread([this, body = std::move(body), done]() mutable {
                              Post(std::move(body));
                              done->store(true);
                            }),
                            done});
  return absl::OkStatus();
}

void UpstreamHttpChannel::Close(int /*grace_ms*/) {
  std::list<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ && workers_.empty()) return;
    closed_ = true;
    for (int fd : active_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.thread.join();
}

void UpstreamHttpChannel::Deliver(std::string message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (protocol_version_.empty()) {
      auto json = nlohmann::json::parse(message, nullptr, false);
      if (json.is_object() && json.contains("result") && json["result"].is_object() &&
          json["result"].contains("protocolVersion") &&
          json["result"]["protocolVersion"].is_string()) {
        protocol_version_ = json["result"]["protocolVersion"].get<std::string>();
      }
    }
  }
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_line) callbacks_.on_line(std::move(message));
}

void UpstreamHttpChannel::FailRequest(const std::string& body, const std::string& why) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("id") || !json.contains("method")) return;
  nlohmann::json error = {{"jsonrpc", "2.0"},
                          {"id", json["id"]},
                          {"error", {{"code", -32603}, {"message", why}}}};
  Deliver(error.dump());
}

void UpstreamHttpChannel::Closed(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (close_reported_) return;
    close_reported_ = true;
    closed_ = true;
  }
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_closed) callbacks_.on_closed(reason);
}

void UpstreamHttpChannel::Post(std::string body) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  tcp::socket socket(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(url_.host, url_.port, ec);
  if (!ec) net::connect(socket, endpoints, ec);
  if (ec) {
    std::string why = base::StrCat("cannot connect to ", options_.url, ": ", ec.message());
    FailRequest(body, why);
    Closed(why);
    return;
  }
  http::request<http::string_body> request{http::verb::post, url_.target, 11};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    active_fds_.insert(socket.native_handle());
    request.set(http::field::host, url_.host + ":" + url_.port);
    if (!session_id_.empty()) request.set("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) request.set("MCP-Protocol-Version", protocol_version_);
  }
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  request.set(http::field::user_agent, "contextd-gateway");
  for (const auto& [k, v] : options_.headers) request.set(k, v);
  request.body() = body;
  request.prepare_payload();

  auto finish = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    active_fds_.erase(socket.native_handle());
  };
  http::write(socket, request, ec);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // own limit below
  if (!ec) http::read_header(socket, buffer, parser, ec);
  if (ec) {
    finish();
    std::string why = base::StrCat("upstream connection failed: ", ec.message());
    FailRequest(body, why);
    Closed(why);
    return;
  }
  const auto& head = parser.get();
  unsigned status = head.result_int();
  auto sid = head.find("Mcp-Session-Id");
  if (sid != head.end()) {
    std::lock_guard<std::mutex> lock(mu_);
    session_id_ = std::string(sid->value());
  }
  std::string content_type = Lower(std::string(head[http::field::content_type]));
  bool sse = content_type.find("text/event-stream") != std::string::npos;

  // Reads the body chunk by chunk; SSE events are delivered as they complete.
  std::string pending;  // body bytes not yet consumed (SSE: an incomplete line)
  std::string data;     // the current SSE event's data lines
  bool too_big = false;
  char chunk[16384];
  auto consume_sse = [&] {
    size_t start = 0;
    for (;;) {
      size_t nl = pending.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) {
        if (!data.empty()) Deliver(std::move(data));
        data.clear();
      } else if (line.substr(0, 5) == "data:") {
        std::string_view value = line.substr(5);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (!data.empty()) data.push_back('\n');
        data.append(value);
      }
    }
    pending.erase(0, start);
  };
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    http::read(socket, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) break;
    size_t got = sizeof chunk - parser.get().body().size;
    if (pending.size() + got > options_.max_message_bytes) {
      too_big = true;
      pending.clear();
    }
    if (!too_big) pending.append(chunk, got);
    if (sse) consume_sse();
  }
  finish();
  if (status == 404) {
    std::string why = "upstream session expired (HTTP 404)";
    FailRequest(body, why);
    Closed(why);
    return;
  }
  if (status >= 400) {
    FailRequest(body, base::StrCat("upstream answered HTTP ", status));
    return;
  }
  if (too_big) {
    FailRequest(body, base::StrCat("upstream answer larger than ", options_.max_message_bytes,
                                   " bytes"));
    return;
  }
  if (sse) {
    pending.push_back('\n');
    consume_sse();
    if (!data.empty()) Deliver(std::move(data));
  } else if (!pending.empty()) {
    Deliver(std::move(pending));
  }
  if (ec && ec != http::error::end_of_stream) {
    base::LogWarn(base::StrCat("upstream ", options_.log_name, ": ", ec.message()));
  }
}

}  // namespace contextd::transport
